"""The trained LoRA adapter as a version of a model in MLflow's Model Registry.

A version's source is the adapter folder logged to the active run (``mlflow artifacts download -u
models:/<name>/<version>`` fetches it). Versions are keyed by the adapter file's SHA-256: a rerun that
trains the same bytes (a warm ``kedro run``) finds its version instead of adding a copy.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlflow import MlflowClient

logger = logging.getLogger(__name__)

DIGEST_TAG = "adapter_sha256"
RUN_TAG = "sciir.registered_model"


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ensure_registered_model(client: MlflowClient, name: str) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST, ErrorCode

    try:
        client.get_registered_model(name)
    except MlflowException as error:
        if error.error_code != ErrorCode.Name(RESOURCE_DOES_NOT_EXIST):
            raise
        client.create_registered_model(name, description="LoRA adapters trained by SciIR's finetune pipeline")


def _provenance_of(client: MlflowClient, run_id: str) -> dict[str, str]:
    """The run's git and DVC tags (``sciir.runs.tracking.provenance_tags``), so a version names its data."""
    tags = client.get_run(run_id).data.tags
    return {key: value for key, value in tags.items() if key.startswith(("git.", "dvc."))}


def register_adapter(name: str, artifact_path: str, adapter_file: Path, tags: Mapping[str, str]) -> str:
    """Register the adapter logged at ``artifact_path`` of the active run as a version of ``name``.

    Returns the version number; the same adapter bytes registered before return that version (its ``tags``
    set again from this run). The version carries ``tags``, the run's git and DVC tags and the adapter's
    digest, and the run is tagged ``name/version``.
    """
    import mlflow
    from mlflow import MlflowClient

    run = mlflow.active_run()
    if run is None:
        raise RuntimeError("registering an adapter needs an active MLflow run")
    client = MlflowClient()
    digest = file_sha256(adapter_file)
    _ensure_registered_model(client, name)
    known = client.search_model_versions(f"name = '{name}' and tags.{DIGEST_TAG} = '{digest}'")
    if known:
        version = str(min(int(found.version) for found in known))
        for key, value in tags.items():  # what this run says of the adapter (e.g. its score) stays current
            client.set_model_version_tag(name, version, key, value)
        logger.info("Adapter %s is already version %s of %s", adapter_file, version, name)
    else:
        created = client.create_model_version(
            name,
            mlflow.get_artifact_uri(artifact_path),
            run.info.run_id,
            tags={**_provenance_of(client, run.info.run_id), **tags, DIGEST_TAG: digest},
        )
        version = str(created.version)
        logger.info("Registered adapter %s as version %s of %s", adapter_file, version, name)
    mlflow.set_tag(RUN_TAG, f"{name}/{version}")
    return version
