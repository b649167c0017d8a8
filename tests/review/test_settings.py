"""The review settings: conf/base/review.yml read through the project's config loader, its store the same
global the catalog's review_ratings reads, relative paths under the project, loopback or not."""

from __future__ import annotations

from pathlib import Path

import pytest
from kedro.config import OmegaConfigLoader
from pydantic import ValidationError

from sciir.cli import project_review_settings
from sciir.review.settings import DEFAULT_STORE, ReviewSettings, is_loopback, store_within
from sciir.settings import CONFIG_LOADER_ARGS

REPO = Path(__file__).resolve().parents[2]


def test_the_projects_settings_are_conf_base_review_yml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "src")  # any folder of the project finds it
    settings = project_review_settings()
    assert settings.store == f"sqlite:///{REPO / 'data' / 'review' / 'review.sqlite'}"
    assert (settings.host, settings.port, settings.ratings.scale) == ("127.0.0.1", 8765, 5)
    assert settings.ratings.images == str(REPO / "data" / "07_model_output" / "generations")
    assert settings.panels.queue_file == str(REPO / "data" / "03_primary" / "review_queue.csv")
    assert settings.checklists.benchmark is None
    # the file states the defaults of the class (relative paths under the project)
    assert ReviewSettings().within(REPO).model_dump() == settings.model_dump()


def test_the_app_and_the_catalog_read_one_store(tmp_path: Path) -> None:
    loader = OmegaConfigLoader(conf_source=str(REPO / "conf"), **CONFIG_LOADER_ARGS)  # type: ignore[arg-type]
    assert loader["review"]["store"] == loader["catalog"]["review_ratings"]["url"] == DEFAULT_STORE


def test_a_local_file_overrides_only_the_keys_it_names(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    (conf / "base").mkdir(parents=True)
    (conf / "local").mkdir()
    for name in ("review.yml", "globals.yml"):
        (conf / "base" / name).write_text((REPO / "conf" / "base" / name).read_text())
    (conf / "local" / "review.yml").write_text("ratings:\n  scale: 10\n")
    (conf / "local" / "globals.yml").write_text("review_store: postgresql+psycopg://u:p@db/review\n")
    loader = OmegaConfigLoader(conf_source=str(conf), **CONFIG_LOADER_ARGS)  # type: ignore[arg-type]
    settings = ReviewSettings.model_validate(loader["review"])
    assert settings.ratings.scale == 10 and settings.ratings.raters_per_image == 3
    assert settings.store == "postgresql+psycopg://u:p@db/review"


def test_relative_paths_are_under_the_project(tmp_path: Path) -> None:
    settings = ReviewSettings().within(tmp_path)
    assert settings.store == f"sqlite:///{tmp_path / 'data' / 'review' / 'review.sqlite'}"
    assert (
        store_within("postgresql+psycopg://u:p@db/review", tmp_path) == "postgresql+psycopg://u:p@db/review"
    )
    assert store_within("sqlite:////abs/r.sqlite", tmp_path) == "sqlite:////abs/r.sqlite"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("192.0.2.7", False),
        ("review.lab.example", False),
    ],
)
def test_loopback_is_told_apart(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert ReviewSettings(host=host).on_loopback() is loopback


def test_mistakes_are_refused() -> None:
    with pytest.raises(ValidationError, match="scale"):
        ReviewSettings.model_validate({"ratings": {"scale": 7}})
    with pytest.raises(ValidationError, match="raters_per_image"):
        ReviewSettings.model_validate({"ratings": {"raters_per_image": 0}})
    with pytest.raises(ValidationError, match="store"):
        ReviewSettings(store="not a url")
    with pytest.raises(ValidationError, match="extra"):
        ReviewSettings.model_validate({"prot": 1})
