"""Each queue of the review app answered through its pages, then read by the stage that consumes it, with the
clone's own `kedro`, in the session's fresh clone (tests/e2e/conftest.py).

The project's `kedro review` (the checklist review naming a benchmark file written here) serves on a free loopback
port over the default store, data/review/review.sqlite; raters sign in by name and answer as a browser does
(``sciir.testing.review_raters``): a spot-checked KEEP rejected and three panels kept, three raters rating the same
images, the judge audit's every verdict right, wrong or can't tell, both samples' checklists edited. Then
`kedro run --pipelines curate`, `... human_corr --params human_corr.ratings.source=review`, `... evaluate`, and
`kedro review --save-benchmark` with `... evaluate --params evaluate.benchmark=<the new file>`; every expected value
is derived from the answers given.

The project clone is the one the default run, the documented commands and the release ran in (they run first, on
the same xdist worker: modules in file-name order); run alone, this module makes the default run itself first."""

from __future__ import annotations

import html
import json
import re
import sqlite3
from contextlib import ExitStack
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path

import httpx
import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr
from sqlalchemy import select

from sciir.review.models import Item
from sciir.review.store import open_store
from sciir.testing.review_raters import RaterClient, ReviewServer, all_fields, question_row
from sciir.testing.stage_runs import label_images

# One xdist worker runs every module that shares the session's project clone (tests/e2e/conftest.py).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_project")]

FOLDER = Path("data/01_raw/review_e2e")  # under data/: ignored by git, as a user's own files would be
BENCHMARK, IMAGES = FOLDER / "units.jsonl", FOLDER / "images"
# sample -> (the label its image shows, a label it does not): q1 asks for the first, q2 for the second.
LABELS = {"ohm": ("Ohm", "Volt"), "watt": ("Watt", "Amp")}
EDITED_Q2 = 'Is "Watt" written?'  # watt's q2 edited to ask for the label its image shows
RATERS = ("e2e_ann", "e2e_bo", "e2e_cy")
MIN_RATED = 6


@dataclass
class Answers:
    """What the raters answered: per queue, each item's key (with what mattered of its context) and answer."""

    panels: list[tuple[str, str, str]] = field(default_factory=list)  # sample_id, queue, decision
    ratings: list[tuple[str, str, int]] = field(default_factory=list)  # image_id, rater, score
    audit: list[tuple[str, str, str, str]] = field(default_factory=list)  # key, kind, verdict shown, answer
    checklists: list[str] = field(default_factory=list)  # sample ids saved


def _write_benchmark(project: Path) -> None:
    """A benchmark file of two samples, two text questions each, and one model's image of each ("drawn")."""
    lines = [
        {
            "sample_id": sample,
            "prompt": f"Draw the label {shown}.",
            "questions": [
                {"id": "q1", "text": f'Is "{shown}" spelled exactly?', "expected_text": shown},
                {"id": "q2", "text": f'Is "{absent}" spelled exactly?', "expected_text": absent},
            ],
        }
        for sample, (shown, absent) in LABELS.items()
    ]
    (project / FOLDER).mkdir(parents=True, exist_ok=True)
    (project / BENCHMARK).write_text("".join(json.dumps(line) + "\n" for line in lines))
    for sample, (shown, _) in LABELS.items():
        label_images(project / IMAGES, sample, {"drawn": shown})


def _items(project: Path) -> dict[str, Item]:
    """Every item of the project's store by its public id (what a page names), with its key and context."""
    store = open_store(f"sqlite:///{project / 'data' / 'review' / 'review.sqlite'}")
    try:
        with store.reading() as session:
            return {item.public_id: item for item in session.scalars(select(Item))}
    finally:
        store.close()


def _pass_rates(project: Path) -> pd.Series:
    """checklist_pass_rate per image (<model>/<sample_id>) of evaluate's sample_scores: judged yes / judged."""
    scores = pd.read_parquet(project / "data" / "08_reporting" / "sample_scores.parquet")
    final = scores[scores["track"] == "final"]
    rates = final["n_yes"] / final["n_judged"].where(final["n_judged"] > 0)
    return pd.Series(rates.to_numpy(), index=final["model"] + "/" + final["sample_id"])


def _score(rate: float, rater: int) -> int:
    """A rater's score of an image: 1-5 following its pass rate (3 without one); the third rater one point off."""
    base = 3 if np.isnan(rate) else 1 + round(4 * rate)
    return base if rater < 2 else base + 1 if base < 5 else base - 1


def _decide_panels(pat: RaterClient, items: dict[str, Item], answers: Answers) -> None:
    """The first spot-checked KEEP shown rejected, every other panel kept, four panels at least."""
    while len(answers.panels) < 4 or "REJECT" not in [decision for *_, decision in answers.panels]:
        page = pat.page("/panels")
        item = items[page.item_of("/panels") or ""]  # a KeyError: the queue ran out first
        queue = (item.context or {})["queue"]
        rejected = any(decision == "REJECT" for *_, decision in answers.panels)
        decision = "REJECT" if queue == "spot_check" and not rejected else "KEEP"
        assert pat.send("/panels", {"decision": decision, "note": "e2e"}, page).status == 200
        answers.panels.append((item.key, queue, decision))


def _rate(raters: list[RaterClient], items: dict[str, Item], rates: pd.Series, answers: Answers) -> None:
    """The first rater rates until MIN_RATED images and two scores; the others as many (the same images: the
    queue shows an image others began first)."""
    count: int | None = None
    for index, (name, client) in enumerate(zip(RATERS, raters, strict=True)):
        scores: list[int] = []
        while (page := client.page()).item is not None and len(scores) != count:
            image = items[page.item or ""].key
            scores.append(_score(rates.get(image, np.nan), index))
            assert client.answer(scores[-1], page).status == 200
            answers.ratings.append((image, name, scores[-1]))
            if count is None and len(scores) >= MIN_RATED and len(set(scores)) > 1:
                break
        count = len(scores)


def _audit(aud: RaterClient, items: dict[str, Item], answers: Answers) -> None:
    """Every verdict sampled: per question kind, the 2nd of every 4 wrong, the 4th can't tell, the others right."""
    seen = dict.fromkeys(("text", "entity", "relation", "law", "other"), 0)
    while (page := aud.page("/audit")).item_of("/audit"):
        context = items[page.item_of("/audit") or ""].context or {}
        kind = context["question_kind"] if context["question_kind"] in seen else "other"
        answer = {1: "wrong", 3: "cant_tell"}.get(seen[kind] % 4, "right")
        seen[kind] += 1
        assert aud.send("/audit", {"answer": answer}, page).status == 200
        key = "/".join(context[column] for column in ("model", "sample_id", "question_id"))
        answers.audit.append((key, kind, context["judge_verdict"], answer))


def _edit_checklists(che: RaterClient, items: dict[str, Item], answers: Answers) -> None:
    """ohm's q2 deleted; watt's q2 edited to ask for the label its image shows."""
    while (page := che.page("/checklists")).item_of("/checklists"):
        sample = items[page.item_of("/checklists") or ""].key
        fields = all_fields(page.html, "/checklists/answer")
        row = question_row(fields, "q2")
        if sample == "ohm":
            fields[f"q{row}_delete"] = "on"
        else:
            fields |= {f"q{row}_text": EDITED_Q2, f"q{row}_expected": "Watt"}
        assert che.post("/checklists/answer", fields).status_code == 200
        answers.checklists.append(sample)


def _answer_every_queue(project: Path, url: str) -> Answers:
    """Each queue answered by raters signed in by name, each in a browser (an HTTP client) of their own."""
    items, answers = _items(project), Answers()
    with ExitStack() as browsers:

        def sign_in(name: str) -> RaterClient:
            rater = RaterClient(browsers.enter_context(httpx.Client(base_url=url, timeout=60)))
            assert rater.sign_in(name).status_code == 200
            return rater

        _decide_panels(sign_in("e2e_pat"), items, answers)
        _rate([sign_in(name) for name in RATERS], items, _pass_rates(project), answers)
        _audit(sign_in("e2e_aud"), items, answers)
        _edit_checklists(sign_in("e2e_che"), items, answers)
    return answers


@pytest.fixture(scope="module")
def answered(project: Path, default_run, tmp_path_factory) -> Answers:
    """Every queue answered through the pages of the project's `kedro review` (see the module's docstring), after
    the clone's default run (tests/e2e/conftest.py: once per session, whichever module asks first)."""
    assert default_run.returncode == 0, default_run.stderr[-4000:]
    _write_benchmark(project)
    log = tmp_path_factory.mktemp("review_consumers") / "server.log"
    server = ReviewServer(
        ["--checklists", str(BENCHMARK)], log, command=[str(project / ".venv" / "bin" / "kedro"), "review"],
        cwd=project,
    )  # fmt: skip
    server.start(timeout_s=180)  # not `with server.start()`: entering would start a second process
    try:
        return _answer_every_queue(project, server.url)
    finally:
        server.stop()


def _ran(result) -> str:
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return " ".join((result.stdout + result.stderr).split())


def test_a_rejected_spot_check_reaches_curate_and_its_false_positive_rate(answered, project, kedro) -> None:
    said = _ran(kedro(project, "--pipelines", "curate"))
    assert f"review decisions: {len(answered.panels)} panel(s) decided in" in said
    spot = [decision for _, queue, decision in answered.panels if queue == "spot_check"]
    screen = json.loads((project / "data" / "08_reporting" / "metrics" / "curate_screen.json").read_text())
    rate = spot.count("REJECT") / len(spot)
    assert screen["spot_check_reviewed"] == len(spot) and screen["spot_check_false_positive_rate"] == rate
    assert screen["spot_check_flagged"] == float(rate > 0.05)
    curated = pd.read_parquet(project / "data" / "03_primary" / "curated.parquet").set_index("sample_id")
    for sample, _, decision in answered.panels:
        status, reason = curated.loc[sample, ["status", "reason"]]
        if decision == "REJECT":
            assert status == "rejected" and reason.endswith("spot check REJECT: e2e"), (sample, reason)
        else:
            assert status == "kept", (sample, reason)


def test_human_corr_correlates_the_ratings_given_with_the_pass_rates(answered, project, kedro) -> None:
    _ran(kedro(project, "--pipelines", "human_corr", "--params", "human_corr.ratings.source=review"))
    reporting = project / "data" / "08_reporting"
    given = pd.DataFrame(answered.ratings, columns=["image_id", "rater_id", "score"])
    read = pd.read_parquet(reporting / "ratings.parquet")
    assert sorted(read[["image_id", "rater_id", "score"]].itertuples(index=False, name=None)) == sorted(
        (image, rater, float(score)) for image, rater, score in answered.ratings
    )
    matrix = given.pivot(index="rater_id", columns="image_id", values="score")
    # the three raters rated the same images
    assert matrix.shape == (3, len(given) // 3) and not matrix.isna().any().any()
    mean = matrix.mean().rename("rating").to_frame().join(_pass_rates(project).rename("rate")).dropna()
    expected = pearsonr(mean["rating"], mean["rate"]).statistic
    pooled = pd.read_csv(reporting / "correlations.csv").set_index(["metric", "scope"])
    n, pearson_r = pooled.loc[("checklist_pass_rate", "pooled"), ["n", "pearson_r"]]
    assert n == len(mean) and pearson_r == pytest.approx(expected, abs=1e-9)
    agreement = pd.read_csv(reporting / "rater_agreement.csv").set_index("statistic")
    alpha = agreement.loc["krippendorff_alpha"]
    assert alpha["n_units"] == matrix.shape[1] and alpha["n_raters"] == 3
    reference = krippendorff.alpha(matrix.to_numpy(dtype=float), level_of_measurement="interval")
    assert alpha["value"] == pytest.approx(reference, abs=1e-9)


def _metrics(project: Path, prefix: str) -> dict[str, float]:
    """The metrics named ``prefix...`` of the latest MLflow run that logged any."""
    query = (
        "SELECT key, value FROM metrics WHERE run_uuid = (SELECT m.run_uuid FROM metrics m JOIN runs r "
        "ON r.run_uuid = m.run_uuid WHERE m.key LIKE ? ORDER BY r.start_time DESC LIMIT 1) AND key LIKE ?"
    )
    with sqlite3.connect(project / "mlruns" / "mlflow.db") as store:
        return dict(store.execute(query, (f"{prefix}%", f"{prefix}%")).fetchall())


def test_evaluate_scores_the_judge_against_the_audit_given(answered, project, kedro) -> None:
    _ran(kedro(project, "--pipelines", "evaluate"))
    verdicts = pd.read_parquet(project / "data" / "07_model_output" / "verdicts.parquet")
    judged = verdicts[verdicts["status"] == "judged"]
    now = dict(
        zip(
            judged["model"] + "/" + judged["sample_id"] + "/" + judged["question_id"],
            judged["verdict"],
            strict=True,
        )
    )
    opposite = {"yes": "no", "no": "yes"}
    told = pd.DataFrame(
        [
            (kind, now[key] == (shown if answer == "right" else opposite[shown]))
            for key, kind, shown, answer in answered.audit
            if answer != "cant_tell" and key in now
        ],
        columns=["kind", "agree"],
    )
    table = pd.read_csv(project / "data" / "08_reporting" / "judge_audit.csv").set_index("question_kind")
    metrics = _metrics(project, "evaluate.judge_audit.")
    assert told["kind"].nunique() >= 2 and not told["agree"].all()  # mistakes of the judge on several kinds
    for kind, agree in [*told.groupby("kind")["agree"], ("all", told["agree"])]:
        row = table.loc[kind]
        assert row["n_audited"] == len(agree) and row["accuracy"] == pytest.approx(agree.mean()), kind
        assert metrics[f"evaluate.judge_audit.{kind}.accuracy"] == pytest.approx(agree.mean()), kind
    cant_tell = sum(answer == "cant_tell" for *_, answer in answered.audit)
    assert table.loc["all", "n_items"] == len(answered.audit) and table.loc["all", "n_cant_tell"] == cant_tell


def test_the_reviewed_checklists_are_saved_and_evaluated_with_their_sha256(
    answered, project, kedro, kedro_cli
) -> None:
    assert sorted(answered.checklists) == sorted(LABELS)
    said = _ran(kedro_cli(project, "review", "--checklists", str(BENCHMARK), "--save-benchmark"))
    saved = re.search(
        r"(\S+-v\d+\.jsonl): 2 samples, 2 with their reviewed checklist \(sha256 (\w{64})\)", said
    )
    assert saved, said
    named, digest = saved[1], saved[2]  # as --checklists named the file: relative to the project
    path = project / named
    assert path.parent == project / FOLDER and sha256(path.read_bytes()).hexdigest() == digest
    params = f"evaluate.benchmark={named},evaluate.images_dir={IMAGES}"
    _ran(kedro(project, "--pipelines", "evaluate", "--params", params))
    results = (
        project / "data" / "08_reporting" / "benchmarks" / path.name.removesuffix(".jsonl") / IMAGES.name
    )
    verdicts = pd.read_parquet(results / "verdicts.parquet")
    drawn = verdicts[verdicts["model"] == "drawn"]
    # ohm's q2 is gone; watt's q2, edited to ask for the label drawn, is now answered yes
    assert dict(zip(drawn["sample_id"] + "/" + drawn["question_id"], drawn["verdict"], strict=True)) == {
        "ohm/q1": "yes", "watt/q1": "yes", "watt/q2": "yes",
    }  # fmt: skip
    assert EDITED_Q2 in html.unescape((results / "report" / "models" / "drawn.html").read_text())
    # the latest run that evaluated the file (the last one started) is tagged with the digest printed
    query = (
        "SELECT t.value FROM tags t JOIN tags s ON s.run_uuid = t.run_uuid JOIN runs r ON r.run_uuid = t.run_uuid "
        "WHERE t.key = 'sciir.benchmark.sha256' AND s.key = 'sciir.benchmark.source' AND s.value = ? "
        "ORDER BY r.start_time DESC LIMIT 1"
    )
    with sqlite3.connect(project / "mlruns" / "mlflow.db") as store:
        assert store.execute(query, (named,)).fetchall() == [(digest,)]
