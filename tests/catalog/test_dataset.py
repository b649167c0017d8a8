import pytest
from kedro.io import DatasetError

from sciir.backends.cache import CachedGenerator
from sciir.backends.registry import register_backend
from sciir.catalog.backend_dataset import BackendDataset, BackendSetDataset

register_backend("vlm", "echo_vlm", "sciir.testing.scripted:PromptLengthVLM")
register_backend("generator", "bytes_gen", "sciir.testing.scripted:SeedBytesGenerator")


def test_credentials_reach_the_backend_but_not_the_description(tmp_path):
    dataset = BackendDataset(
        kind="vlm",
        backend="echo_vlm",
        config={"model": "m"},
        credentials={"api_key": "sk-canary"},
        cache_path=str(tmp_path / "c.sqlite"),
    )
    backend = dataset.load()
    assert backend.inner.config["api_key"] == "sk-canary"
    assert "sk-canary" not in str(dataset) and "sk-canary" not in str(backend.identity())


def test_api_key_from_the_named_environment_variable(monkeypatch):
    monkeypatch.setenv("SCIIR_TEST_KEY", "sk-env")
    backend = BackendDataset(kind="vlm", backend="echo_vlm", config={"api_key_env": "SCIIR_TEST_KEY"}).load()
    assert backend.config == {"api_key": "sk-env"}


def test_missing_environment_variable_is_named(monkeypatch):
    monkeypatch.delenv("SCIIR_ABSENT_KEY", raising=False)
    dataset = BackendDataset(kind="vlm", backend="echo_vlm", config={"api_key_env": "SCIIR_ABSENT_KEY"})
    with pytest.raises(DatasetError, match="SCIIR_ABSENT_KEY"):
        dataset.load()


def test_backend_set_builds_each_member_behind_one_cache(tmp_path):
    members = {"a": {"backend": "bytes_gen"}, "b": {"backend": "bytes_gen", "variant": 2}}
    loaded = BackendSetDataset(
        kind="generator", members=members, cache_path=str(tmp_path / "c.sqlite")
    ).load()
    assert sorted(loaded) == ["a", "b"]
    assert all(isinstance(g, CachedGenerator) for g in loaded.values())
    assert loaded["b"].inner.config == {"variant": 2}


def test_member_without_backend_name_is_a_clear_error():
    with pytest.raises(DatasetError, match="'broken' has no 'backend' key"):
        BackendSetDataset(kind="generator", members={"broken": {"steps": 2}}).load()
