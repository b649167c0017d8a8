"""Project hooks: start-up checks, run provenance and name, and the closing summary."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from kedro.framework.hooks import hook_impl

from sciir.backends.dry_run import dry_run_requested
from sciir.evaluation.leaderboard_text import print_run_summary
from sciir.runs.dry_run_summary import keep_outputs_in_memory, ledger_text
from sciir.runs.mlflow_view import kedro_mlflow_run_name, mark_model_training, run_name, runs_page_text
from sciir.runs.results_folder import SCOPING_SETTINGS, benchmarks_apart, settings_outside_command_line
from sciir.runs.system import SYSTEM_PROGRAMS, missing_programs
from sciir.runs.tracking import provenance_tags
from sciir.tasks.prompts import prompt_versions

logger = logging.getLogger(__name__)


def prompt_version_params() -> dict[str, str]:
    """``prompt_version.<task>`` -> the version of every task's prompt template, as MLflow params: it tells in
    the MLflow UI which prompts produced a run's annotations and verdicts (the version is also part of each
    request's cache key, so a changed prompt is asked again)."""
    return {f"prompt_version.{task}": version for task, version in prompt_versions().items()}


class ProjectHooks:
    """Checks system programs at start-up; tags the MLflow run (provenance), names it by what it does
    (``sciir.runs.mlflow_view.run_name``), logs the prompt versions as its params and marks its experiment as
    model training; prints the leaderboard and where the MLflow UI shows the run at the end."""

    def __init__(self) -> None:
        self._tagged = False
        self._project_path = Path.cwd()
        self._run_name: str | None = None  # what the run does, known once the pipeline is
        self._kedro_mlflow_name: str | None = None  # kedro-mlflow's name, replaced by ours
        self._page: str | None = None  # where the MLflow UI shows the run

    @hook_impl
    def after_context_created(self, context: Any) -> None:
        self._project_path = Path(context.project_path)
        for program in missing_programs():
            package, needed_by = SYSTEM_PROGRAMS[program]
            logger.warning(
                "System program '%s' is missing (needed by %s); install the Debian package '%s' "
                "(see README, 'System packages'). Stages that need it will fail with this message.",
                program,
                needed_by,
                package,
            )

    @hook_impl
    def before_pipeline_run(self, run_params: dict[str, Any], pipeline: Any, catalog: Any) -> None:
        """In a dry run, keep every output in memory; refuse a benchmark, image folder or verdicts file set
        in a conf file (evaluate's results or generate's images would land on the default run's), and a run
        whose evaluate judges the images of another benchmark than its generate draws; name the run by what
        it does."""
        self._tagged, self._page = False, None  # one hooks object serves every run of the process
        runtime = run_params.get("runtime_params") or {}
        pipelines = run_params.get("pipeline_names")
        self._kedro_mlflow_name = kedro_mlflow_run_name(pipelines)
        read = {
            section: values for section, values in runtime.items() if f"params:{section}" in pipeline.inputs()
        }
        self._run_name = run_name(pipelines, read, dry_run_requested())
        if dry_run_requested():
            keep_outputs_in_memory(pipeline, catalog)
        misplaced = [
            setting
            for section in SCOPING_SETTINGS
            if f"params:{section}" in pipeline.inputs()
            for setting in settings_outside_command_line(section, catalog.load(f"params:{section}"), runtime)
        ]
        if misplaced:
            raise ValueError(
                f"{', '.join(misplaced)} is set in a conf file; give it on the command line instead "
                f"(kedro run --params {misplaced[0]}=...): it also names the folder the outputs go to, "
                "so that they never overwrite the default run's"
            )
        if {"params:generate", "params:evaluate"} <= pipeline.inputs():
            apart = benchmarks_apart(catalog.load("params:generate"), catalog.load("params:evaluate"))
            if apart:
                raise ValueError(apart)

    @hook_impl
    def before_node_run(self) -> None:
        # kedro-mlflow opens the run in its before_pipeline_run; tag and name it once it exists.
        if self._tagged:
            return
        import mlflow

        run = mlflow.active_run()
        if run is None:
            return
        mlflow.set_tags(provenance_tags(self._project_path) | {"sciir.dry_run": str(dry_run_requested())})
        mlflow.log_params(prompt_version_params())
        # A name configured in mlflow.yml (tracking.run.name), or a run opened before kedro's, is kept.
        renamed = self._run_name is not None and run.info.run_name == self._kedro_mlflow_name
        if renamed:
            mlflow.MlflowClient().update_run(run.info.run_id, name=self._run_name)
        mark_model_training(run.info.experiment_id)
        if renamed and self._run_name is not None:
            name = self._run_name
        else:
            name = run.info.run_name or run.info.run_id
        self._page = runs_page_text(mlflow.get_tracking_uri(), run.info.experiment_id, name)
        self._tagged = True

    @hook_impl
    def after_pipeline_run(self, run_params: dict[str, Any], pipeline: Any, catalog: Any) -> None:
        if dry_run_requested():
            print(f"\n{ledger_text()}\n")
        elif "leaderboard" in pipeline.all_outputs():
            print_run_summary(catalog, self._project_path, run_params.get("runtime_params"))
        if self._page:
            print(self._page)
