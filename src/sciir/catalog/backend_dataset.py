"""Backends as Kedro catalog entries (conf/base/backends.yml), so a judge is changed by config.

Secrets come from Kedro credentials (conf/local/credentials.yml) or from an environment
variable named in the config (``api_key_env``); they are passed to the backend only and
never appear in the dataset's description, logs or MLflow.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, cast, overload

from kedro.config import MissingConfigException, OmegaConfigLoader
from kedro.io import AbstractDataset, DatasetError

from sciir.backends.base import GENERATOR_ROLES, Backend, GeneratorRole, ImageGenerator, VisionLanguageModel
from sciir.backends.cache import CachedGenerator, CachedVLM, ResponseCache
from sciir.backends.dry_run import DryRunVLM, dry_run_requested
from sciir.backends.registry import Kind, build_backend, resolve_backend
from sciir.backends.rule_based import RuleBasedVLM
from sciir.generation.best_of_n import BestOfNGenerator, BestOfSettings
from sciir.generation.planning import PlannedGenerator, PlannerSettings
from sciir.tasks.registry import rule_book

_WRAPPERS = {"vlm": CachedVLM, "generator": CachedGenerator}


def _secret_config(name: str, config: dict[str, Any], credentials: dict[str, Any] | None) -> dict[str, Any]:
    """The backend's secrets: credentials first, then the environment variable the config names."""
    secrets = dict(credentials or {})
    env_name = config.get("api_key_env")
    if "api_key" not in secrets and env_name:
        if env_name not in os.environ:
            raise DatasetError(f"backend {name!r}: environment variable {env_name} (api_key_env) is not set")
        secrets["api_key"] = os.environ[env_name]
    return secrets


def generator_role(name: str, generator: ImageGenerator, role: Any) -> GeneratorRole:
    """The role a generator entry configures (``contestant`` unless its class is a reference).

    Raises:
        DatasetError: an unknown role, or a renderer that reads the annotation configured as a
            contestant (it would be ranked with the answer key in hand).
    """
    if role is None:
        return generator.role
    if role not in GENERATOR_ROLES:
        raise DatasetError(f"generator {name!r}: role {role!r} is not one of {list(GENERATOR_ROLES)}")
    if generator.reads_annotation and role != "reference":
        raise DatasetError(
            f"generator {name!r} ({type(generator).__name__}) draws the annotation itself, so its role "
            "must be 'reference': it can calibrate the judge but never be ranked as a contestant"
        )
    return role


def task_rules(kind: Kind, backend_name: str) -> dict[str, Any]:
    """What a rule-based backend is handed besides its config: every task's answerer for its reader (the
    backends know no task; the tasks' modules hold their rules)."""
    backend_class = resolve_backend(kind, backend_name)
    return {"rules": rule_book(backend_class.reader)} if issubclass(backend_class, RuleBasedVLM) else {}


@overload
def make_backend(
    name: str,
    kind: Literal["vlm"],
    spec: dict[str, Any],
    cache: ResponseCache | None,
    credentials: dict[str, Any] | None,
) -> VisionLanguageModel: ...
@overload
def make_backend(
    name: str,
    kind: Literal["generator"],
    spec: dict[str, Any],
    cache: ResponseCache | None,
    credentials: dict[str, Any] | None,
) -> ImageGenerator: ...
@overload
def make_backend(
    name: str,
    kind: Kind,
    spec: dict[str, Any],
    cache: ResponseCache | None,
    credentials: dict[str, Any] | None,
) -> VisionLanguageModel | ImageGenerator: ...
def make_backend(
    name: str,
    kind: Kind,
    spec: dict[str, Any],
    cache: ResponseCache | None,
    credentials: dict[str, Any] | None,
) -> Backend:
    """Build one configured backend, wrapped in the response cache when there is one.

    A generator entry may set ``role`` (``contestant``, the default, or ``reference``); it is kept on
    the generator (and its cache wrapper), never passed to the backend or put in its cache key. A
    contestant may set ``best_of`` (``n`` and a ``selector`` vision-language backend entry) and ``planner``
    (a vision-language backend entry, plus ``max_words``): see ``wrapped_generator``.
    """
    config = dict(spec)
    wrappers: dict[str, Any] = {
        key: config.pop(key) for key in ("best_of", "planner") if kind == "generator" and key in config
    }
    if wrappers:
        return wrapped_generator(name, config, wrappers, cache, credentials)
    backend_name = config.pop("backend", None)
    if not backend_name:
        raise DatasetError(f"backend entry {name!r} has no 'backend' key (which registered backend to use)")
    role = config.pop("role", None) if kind == "generator" else None
    secrets = _secret_config(name, config, credentials)
    config.pop("api_key_env", None)
    backend = build_backend(kind, backend_name, **config, **secrets, **task_rules(kind, backend_name))
    if kind == "vlm" and dry_run_requested():
        # under the cache: what it holds is still answered (a "vlm" backend: its class was checked)
        backend = DryRunVLM(cast(VisionLanguageModel, backend))
    if isinstance(backend, ImageGenerator):
        backend.role = generator_role(name, backend, role)
    return _WRAPPERS[kind](backend, cache) if cache is not None else backend


def _wrapper_entry(name: str, key: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise DatasetError(
            f"generator {name!r}: {key} must be a backend entry (backend, config), got {entry!r}"
        )
    return dict(entry)


def wrapped_generator(
    name: str,
    spec: dict[str, Any],
    wrappers: dict[str, Any],
    cache: ResponseCache | None,
    credentials: dict[str, Any] | None,
) -> ImageGenerator:
    """The generator of ``spec`` with its test-time scaling: ``best_of`` (draw n, a selector keeps the
    best; ``sciir.generation.best_of_n``) and then ``planner`` (a language model plans each prompt first;
    ``sciir.generation.planning``). Generator, selector and planner are each cached.

    Raises:
        DatasetError: a wrapper entry is not a mapping, or the generator is a reference (it draws the
            annotation's plan and is never ranked, so it is neither planned nor selected).
    """
    generator = make_backend(name, "generator", spec, cache, credentials)
    if generator.role == "reference":
        raise DatasetError(
            f"generator {name!r}: a reference draws the annotation's plan; it takes no {' or '.join(wrappers)}"
        )
    if (best_of := wrappers.get("best_of")) is not None:
        entry = _wrapper_entry(name, "best_of", best_of)
        settings = BestOfSettings(n=entry.pop("n", BestOfSettings().n))
        selector = _wrapper_entry(name, "best_of.selector", entry.pop("selector", None))
        judge = make_backend(f"{name}.selector", "vlm", selector, cache, None)
        generator = BestOfNGenerator(generator, judge, settings)
    if (planner := wrappers.get("planner")) is not None:
        entry = _wrapper_entry(name, "planner", planner)
        plan_settings = PlannerSettings(max_words=entry.pop("max_words", PlannerSettings().max_words))
        language_model = make_backend(f"{name}.planner", "vlm", entry, cache, None)
        generator = PlannedGenerator(generator, language_model, plan_settings)
    return generator


class BackendDataset(AbstractDataset[None, Backend]):
    """Loads one configured backend (e.g. the judge). Read-only."""

    def __init__(
        self,
        *,
        kind: Kind,
        backend: str,
        config: dict[str, Any] | None = None,
        cache_path: str | None = None,
        credentials: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._kind = kind
        self._spec = {"backend": backend, **(config or {})}
        self._cache_path = cache_path
        self._credentials = credentials
        self.metadata = metadata

    def load(self) -> Backend:
        cache = ResponseCache(self._cache_path) if self._cache_path else None
        return make_backend(self._spec["backend"], self._kind, self._spec, cache, self._credentials)

    def save(self, data: None) -> None:
        raise DatasetError("a backend is configuration: it is loaded, never saved")

    def _describe(self) -> dict[str, Any]:
        return {"kind": self._kind, "backend": self._spec["backend"], "cache_path": self._cache_path}


class BackendSetDataset(AbstractDataset[None, dict[str, Backend]]):
    """Loads several named backends of one kind (e.g. the generators to compare)."""

    def __init__(
        self,
        *,
        kind: Kind,
        members: dict[str, dict[str, Any]],
        cache_path: str | None = None,
        credentials: dict[str, dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if not members:
            raise DatasetError("a backend set needs at least one member")
        self._kind = kind
        self._members = members
        self._cache_path = cache_path
        self._credentials = credentials or {}
        self.metadata = metadata

    def load(self) -> dict[str, Backend]:
        cache = ResponseCache(self._cache_path) if self._cache_path else None
        return {
            name: make_backend(name, self._kind, spec, cache, self._credentials.get(name))
            for name, spec in self._members.items()
        }

    def save(self, data: None) -> None:
        raise DatasetError("a backend set is configuration: it is loaded, never saved")

    def _describe(self) -> dict[str, Any]:
        return {"kind": self._kind, "members": sorted(self._members), "cache_path": self._cache_path}


@overload
def configured_backend(
    name: str, kind: Literal["vlm"], conf_source: str | Path = "conf"
) -> VisionLanguageModel: ...
@overload
def configured_backend(
    name: str, kind: Literal["generator"], conf_source: str | Path = "conf"
) -> ImageGenerator: ...
@overload
def configured_backend(
    name: str, kind: Kind, conf_source: str | Path = "conf"
) -> VisionLanguageModel | ImageGenerator: ...
def configured_backend(name: str, kind: Kind, conf_source: str | Path = "conf") -> Backend:
    """The backend entry ``name`` of the project's ``backends.yml`` (conf/local's replaces conf/base's, as in a
    run), loaded outside a Kedro run (a command line's), with its credentials from conf/local.

    Raises:
        DatasetError: no conf folder, no such entry of ``kind``, or credentials it names that are not there.
    """
    loader = OmegaConfigLoader(
        str(conf_source),
        base_env="base",
        default_run_env="local",
        config_patterns={"backends": ["backends*", "**/backends*"]},
    )
    try:
        entries = loader["backends"]
    except (MissingConfigException, ValueError) as error:
        raise DatasetError(
            f"backend entry {name!r}: no {conf_source}/base/backends.yml here ({error})"
        ) from None
    entry = dict(entries.get(name) or {})
    if entry.pop("type", None) != f"{__name__}.{BackendDataset.__name__}" or entry.get("kind") != kind:
        known = [
            key for key, value in entries.items() if isinstance(value, dict) and value.get("kind") == kind
        ]
        raise DatasetError(
            f"{name!r} is not a {kind} backend entry of {conf_source}'s backends.yml (those: {known})"
        )
    credentials = entry.pop("credentials", None)
    if credentials is not None:
        try:
            credentials = loader["credentials"][credentials]
        except (MissingConfigException, KeyError):
            raise DatasetError(
                f"backend entry {name!r}: its credentials {credentials!r} are not in {conf_source}/local/credentials.yml"
            ) from None
    return BackendDataset(**entry, credentials=credentials).load()
