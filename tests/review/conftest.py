"""Fixtures of the review app's tests: images whose files name their model, a benchmark with a hostile prompt,
a store on SQLite or on a PostgreSQL server started here in a temporary folder, and the app under TestClient."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from itertools import count
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import sqlalchemy as sa
from PIL import Image, PngImagePlugin
from starlette.testclient import TestClient

from sciir.figures.review import REVIEW_COLUMNS
from sciir.review.app import create_app, prepare
from sciir.review.settings import RatingsSettings, ReviewSettings
from sciir.testing.review_raters import RaterClient, free_port

MODELS = ("secretmodelA", "secretmodelB")
SAMPLES = ("s1", "s2", "s3")
HOSTILE_PROMPT = '<script>alert("x")</script> & <b>bold</b> "quoted"'
BASE_URL = "http://127.0.0.1:8765"
AppClient = Callable[..., TestClient]


def write_images(folder: Path) -> Path:
    """Two models' images of three samples; each PNG names its model in a text chunk, as many generators do."""
    for index, model in enumerate(MODELS):
        (folder / model).mkdir(parents=True, exist_ok=True)
        for sample in SAMPLES:
            info = PngImagePlugin.PngInfo()
            info.add_text("Software", f"{model} generator")
            info.add_text("prompt", f"drawn by {model}")
            colour = (40 + 100 * index, 90, 200 - 100 * index)
            Image.new("RGB", (40, 30), colour).save(folder / model / f"{sample}.png", pnginfo=info)
    (folder / ".hidden").mkdir(exist_ok=True)
    Image.new("RGB", (4, 4)).save(folder / ".hidden" / "s1.png")
    (folder / "secretmodelA" / "s1.txt").write_text("a plan, not an image")
    return folder


@pytest.fixture
def images(tmp_path: Path) -> Path:
    return write_images(tmp_path / "generations")


@pytest.fixture
def benchmark(tmp_path: Path) -> Path:
    path = tmp_path / "benchmark.parquet"
    prompts = ["Draw a block on an incline.", HOSTILE_PROMPT, "Draw a circuit with two resistors."]
    pd.DataFrame({"sample_id": list(SAMPLES), "group": "g", "setting": "x", "prompt": prompts}).to_parquet(
        path
    )
    return path


HOSTILE_CAPTION = '<script>alert("caption")</script> Figure & <i>its</i> panels'
# curate's review queue as the fixture writes it: sample_id -> (queue, caption, the screen's decision, a decision
# already made in the file)
PANELS = {
    "fig1-aaaa-p0": ("spot_check", "A bar chart of forces.", "KEEP", ""),
    "fig1-aaaa-p1": ("low_confidence", HOSTILE_CAPTION, "", ""),
    "fig2-bbbb-p0": ("low_confidence", "A photograph of apparatus.", "KEEP", ""),
    "fig2-bbbb-p1": ("low_confidence", "Decided by hand already.", "", "REJECT"),
}


def write_curate_outputs(root: Path) -> Path:
    """curate's and ingest's outputs under ``root`` as a project holds them: the review queue, the panels
    (PNGs naming their source in a text chunk) and the figures table, whose image_path is relative to the
    project (fig2's figure a TIFF, as some articles ship them). Returns ``root``."""
    images = root / "data" / "03_primary" / "images"
    images.mkdir(parents=True, exist_ok=True)
    rows = []
    for index, (sample_id, (queue, caption, model, decided)) in enumerate(PANELS.items()):
        info = PngImagePlugin.PngInfo()
        info.add_text("Source", f"secret source of {sample_id}")
        Image.new("RGB", (48 + index, 32), (30 * index, 120, 90)).save(
            images / f"{sample_id}.png", pnginfo=info
        )
        figure_id = sample_id.split("-")[0]
        rows.append(
            {
                "sample_id": sample_id, "queue": queue, "image": f"{sample_id}.png", "doi": "10.1/x",
                "figure_id": figure_id, "caption": caption, "model_decision": model,
                "model_confidence": "0.4" if model else "", "model_reason": "unsure", "decision": decided,
                "note": "",
            }
        )  # fmt: skip
    pd.DataFrame(rows, columns=REVIEW_COLUMNS).to_csv(
        root / "data" / "03_primary" / "review_queue.csv", index=False
    )
    raw = root / "data" / "01_raw" / "articles" / "a1"
    raw.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (120, 80), "white").save(raw / "fig1.png")
    Image.new("RGB", (90, 60), "navy").save(raw / "fig2.tif")
    figures = pd.DataFrame(
        {
            "doi": ["10.1/x", "10.1/x"],
            "figure_id": ["fig1", "fig2"],
            "image_path": ["data/01_raw/articles/a1/fig1.png", "data/01_raw/articles/a1/fig2.tif"],
        }
    )
    (root / "data" / "02_intermediate").mkdir(parents=True, exist_ok=True)
    figures.to_parquet(root / "data" / "02_intermediate" / "figures.parquet")
    return root


HOSTILE_QUESTION = 'Is <b>this</b> drawn? <script>alert("question")</script>'
# evaluate's outputs as the fixture writes them: sample -> (question id, kind, question); each of m1, m2 and blank
# judged every question, m1 "yes" and m2 "no" on each, but s2/q2 abstained for m1; blank has no image on disk.
QUESTIONS = {
    "s1": [("q1", "text", 'Is "F" spelled exactly?'), ("q2", "entity", "Is a block drawn?"),
           ("q3", None, HOSTILE_QUESTION)],
    "s2": [("q1", "text", 'Is "N" spelled exactly?'), ("q2", "relation", "Is there an arrow from A to B?")],
}  # fmt: skip


def write_evaluate_outputs(root: Path) -> Path:
    """evaluate's and annotate's outputs under ``root`` as a default run leaves them: the verdicts, the
    checklists (kind, polarity, question) and the images judged (PNGs naming their model in a text chunk)."""
    checklists, verdicts = [], []
    for sample, questions in QUESTIONS.items():
        for question_id, kind, question in questions:
            checklists.append(
                {"sample_id": sample, "question_id": question_id, "question": question, "kind": kind,
                 "polarity": "positive", "layer": 1 if kind == "text" else 2}
            )  # fmt: skip
            for model, verdict in (("m1", "yes"), ("m2", "no"), ("blank", "no")):
                abstained = model == "m1" and (sample, question_id) == ("s2", "q2")
                verdicts.append(
                    {"model": model, "sample_id": sample, "question_id": question_id,
                     "verdict": None if abstained else verdict, "status": "abstained" if abstained else "judged",
                     "evidence": f"OCR read <i>{sample}</i>", "reasoning": "seen", "reason": None}
                )  # fmt: skip
    (root / "data" / "04_feature").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(checklists).to_parquet(root / "data" / "04_feature" / "checklists.parquet")
    (root / "data" / "07_model_output").mkdir(parents=True, exist_ok=True)
    pd.DataFrame(verdicts).to_parquet(root / "data" / "07_model_output" / "verdicts.parquet")
    for model in ("m1", "m2"):
        folder = root / "data" / "07_model_output" / "generations" / model
        folder.mkdir(parents=True, exist_ok=True)
        for sample in QUESTIONS:
            info = PngImagePlugin.PngInfo()
            info.add_text("Software", f"secret {model}")
            Image.new("RGB", (36, 24), "white").save(folder / f"{sample}.png", pnginfo=info)
    return root


# ---- stores: SQLite, and PostgreSQL when its binaries are installed


def _postgres_binaries() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH (/usr/local/bin here) or Debian's /usr/lib/postgresql/*/bin."""
    found = shutil.which("initdb"), shutil.which("pg_ctl")
    if all(found):
        return Path(os.path.realpath(str(found[0]))).parent
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    return next(
        (Path(f) for f in folders if (Path(f) / "initdb").exists() and (Path(f) / "pg_ctl").exists()), None
    )


def _as_server_user() -> list[str]:
    """PostgreSQL refuses to run as root: as root, its programs run as nobody."""
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server of this test session in a temporary folder, on a free loopback port: its URL
    (trust authentication, the ``postgres`` database). Skipped when PostgreSQL is not installed."""
    binaries = _postgres_binaries()
    if binaries is None:
        pytest.skip("PostgreSQL (initdb, pg_ctl) is not installed")
    root = Path(tempfile.mkdtemp(prefix="sciir-review-pg-"))  # under /tmp: the server's user must reach it
    data, port = root / "data", free_port()
    if os.geteuid() == 0:
        os.chown(root, 65534, 65534)
    user = _as_server_user()
    run = dict(check=True, capture_output=True, timeout=120)
    subprocess.run(
        [*user, str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "--no-sync"],
        **run,
    )
    options = f"-k {root} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
    subprocess.run(
        [
            *user,
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(root / "log"),
            "-o",
            options,
            "-w",
            "start",
        ],
        **run,
    )
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*user, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)


_DATABASES = count()


def fresh_postgres_database(server: str) -> str:
    """A new empty database on the session's server: its URL."""
    name = f"review_{os.getpid()}_{next(_DATABASES)}"
    engine = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE {name}")
    engine.dispose()
    return server.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store's URL: a SQLite file in tmp_path, or a new database on the test session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'review' / 'review.sqlite'}"
    return fresh_postgres_database(request.getfixturevalue("postgres_server"))


# ---- the app


@pytest.fixture
def settings(tmp_path: Path, images: Path, benchmark: Path) -> ReviewSettings:
    ratings = RatingsSettings(images=str(images), benchmark=str(benchmark), raters_per_image=2)
    # The other queues' files are not there: their queues stay empty.
    return ReviewSettings(store=f"sqlite:///{tmp_path / 'review.sqlite'}", ratings=ratings).within(
        tmp_path / "no-project"
    )


@pytest.fixture
def audit_settings(tmp_path: Path) -> ReviewSettings:
    """A project whose evaluate has run (``write_evaluate_outputs``), its store in tmp_path; two per stratum."""
    ratings = RatingsSettings(images=str(tmp_path / "no-images"), benchmark=None)
    settings = ReviewSettings(store=f"sqlite:///{tmp_path / 'audit.sqlite'}", ratings=ratings)
    settings = settings.within(write_evaluate_outputs(tmp_path / "evaluated"))
    return settings.model_copy(update={"audit": settings.audit.model_copy(update={"per_stratum": 2})})


@pytest.fixture
def panel_settings(tmp_path: Path) -> ReviewSettings:
    """A project whose curate has run (``write_curate_outputs``), its store in tmp_path; no image to rate."""
    ratings = RatingsSettings(images=str(tmp_path / "no-images"), benchmark=None)
    return ReviewSettings(store=f"sqlite:///{tmp_path / 'panels.sqlite'}", ratings=ratings).within(
        write_curate_outputs(tmp_path / "project")
    )


@pytest.fixture
def app_client(settings: ReviewSettings) -> Iterator[AppClient]:
    """``app_client(settings=..., require_tokens=..., base_url=...)``: a TestClient of the app over the settings'
    store (prepared and filled as ``kedro review`` does). Each call is another browser (its own cookies)."""
    stores = []

    def build(
        with_settings: ReviewSettings | None = None,
        require_tokens: bool | None = None,
        base_url: str = BASE_URL,
    ) -> TestClient:
        chosen = with_settings or settings
        prepared = prepare(chosen)
        stores.append(prepared.store)
        return TestClient(create_app(prepared.store, chosen, require_tokens), base_url=base_url)

    yield build
    for store in stores:
        store.close()


@pytest.fixture
def signed_in(app_client: AppClient) -> Callable[[ReviewSettings, str], RaterClient]:
    """``signed_in(settings, name)``: a new browser of the app over ``settings``, signed in as ``name``."""

    def sign_in(settings: ReviewSettings, name: str) -> RaterClient:
        client = RaterClient(app_client(with_settings=settings))
        assert client.sign_in(name).status_code == 200
        return client

    return sign_in


@pytest.fixture
def mlflow_run(tmp_path: Path, mlflow_store, monkeypatch: pytest.MonkeyPatch) -> Iterator[mlflow.ActiveRun]:
    """An active MLflow run as ``kedro run`` opens one, its store and artifacts under tmp_path (run from there: the
    review store's relative URL is the project's)."""
    experiment = mlflow.create_experiment("tests", artifact_location=(tmp_path / "mlartifacts").as_uri())
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment)
    with mlflow.start_run() as run:
        yield run


@pytest.fixture
def rater(app_client: AppClient) -> Callable[[str], RaterClient]:
    """``rater(name)``: a new browser signed in as ``name``."""

    def sign_in(name: str) -> RaterClient:
        client = RaterClient(app_client())
        assert client.sign_in(name).status_code == 200
        return client

    return sign_in
