"""Every model task's prompt version is what its requests carry (and so their cache key), and each run logs
the versions as MLflow params."""

from __future__ import annotations

import json

import mlflow
import pandas as pd

from sciir.aibench.graph import GRAPH_COLUMNS, build_logic_graph
from sciir.aibench.questions import QuestionSettings
from sciir.backends.programmatic import ProgrammaticGenerator
from sciir.generation.best_of_n import build_score_request
from sciir.generation.planning import PlannerSettings, build_plan_request
from sciir.hooks import ProjectHooks
from sciir.pipelines.generate.aibench_nodes import generate_aibench_images
from sciir.tasks.aesthetics import build_aesthetics_request
from sciir.tasks.aibench_graph import build_graph_request
from sciir.tasks.aibench_qa import build_solver_request
from sciir.tasks.aibench_questions import build_questions_request
from sciir.tasks.judge import build_judge_request
from sciir.tasks.prompt_checklist import build_prompt_checklist_request
from sciir.tasks.prompts import prompt_versions
from sciir.tasks.registry import ANNOTATION_TASKS
from sciir.tasks.registry import ANNOTATION_TASKS as TASKS
from sciir.tasks.screen import ScreenParams, screen_request
from sciir.tasks.vqascore import build_vqascore_request

CONTEXT = {
    "caption": "ATP synthase.",
    "methods_text": "ADP is turned into ATP.",
    "terms": ["ATP"],
    "required_text": ["ATP"],
    "relations": [],
    "laws": [],
    "sci_rcot": "A diagram.",
    "track_labels": {"entity": True, "process": False, "law": False},
}
CHECKLIST = [{"id": "q1", "question": "Is ATP written?", "layer": 1, "track": "text"}]
SOLVER_ITEMS = [{"id": "AIB-L1-01", "question": "Is there ATP?", "level": 1}]


def _every_request():
    for task, spec in TASKS.items():
        context = {key: CONTEXT.get(key, "x") for key in spec.context_keys}
        yield ANNOTATION_TASKS[task].build(context, b"png" if spec.sees_image else None)
    yield build_judge_request("Draw ATP.", CHECKLIST, b"png")
    yield build_graph_request("ADP is turned into ATP.", "ATP synthase.", ["ATP"])
    yield build_questions_request("s1", build_logic_graph(["ATP"], []), ["NADH"], QuestionSettings())
    yield build_plan_request("Draw ATP.", PlannerSettings())
    yield build_prompt_checklist_request('Draw "ATP".')
    yield build_score_request('Draw "ATP".', b"png")
    yield build_solver_request(SOLVER_ITEMS, b"png")
    yield build_aesthetics_request(b"png")
    yield build_vqascore_request("Draw ATP.", b"png")
    yield screen_request(b"png", "ATP synthase.", ScreenParams())


def _illustration_version() -> str:
    """The prompt version an AIBench illustration's manifest row records (a generator request carries no
    version: the prompt text itself is in its cache key)."""
    aibench_set = pd.DataFrame({"sample_id": ["s1"], "methods_text": ['"ADP" -> "ATP".']})
    generators = {"programmatic": ProgrammaticGenerator()}
    no_graphs = pd.DataFrame(columns=list(GRAPH_COLUMNS))  # a contestant never needs one
    _, manifest, _, _ = generate_aibench_images(
        aibench_set, no_graphs, {}, generators, {"width": 64, "height": 64}
    )
    return json.loads(manifest["meta"].iloc[0])["prompt_version"]


def test_every_task_sends_the_version_listed_for_it():
    sent = {request.task: request.template_version for request in _every_request()}
    sent["aibench_illustration"] = _illustration_version()
    assert sent == prompt_versions()


def test_a_run_logs_the_prompt_versions_as_params(mlflow_store, tmp_path):
    hooks = ProjectHooks()
    hooks._project_path = tmp_path  # outside git: no provenance tags, only the params
    with mlflow.start_run() as run:
        hooks.before_node_run()
    params = mlflow_store.get_run(run.info.run_id).data.params
    assert params["prompt_version.judge"] == prompt_versions()["judge"]
    assert {key for key in params if key.startswith("prompt_version.")} == {
        f"prompt_version.{task}" for task in prompt_versions()
    }
