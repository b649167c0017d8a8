"""Dry runs: requests are counted with their estimated tokens and cost and never sent; what the response
cache holds is still answered; the project hook keeps every output in memory and prints the ledger."""

from __future__ import annotations

import io
import logging

import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.pipeline import Pipeline, node
from kedro_datasets.pandas import CSVDataset
from PIL import Image

from sciir.backends.base import VLMRequest
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.dry_run import NOT_SENT, DryRunVLM, Ledger, prompt_tokens
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.catalog.backend_dataset import BackendDataset
from sciir.runs.dry_run_summary import keep_outputs_in_memory, ledger_text
from sciir.tasks.judge import build_judge_request
from sciir.testing.fake_openai_server import FakeOpenAIServer

CHECKLIST = [{"id": "q1", "question": "Is ATP written?", "layer": 1, "track": "text"}]


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, "PNG")
    return buffer.getvalue()


def _served(server: FakeOpenAIServer) -> OpenAICompatibleVLM:
    return OpenAICompatibleVLM(
        base_url=server.base_url, model="judge-model", api_key="k", max_tokens=500,
        price_per_million_prompt_tokens=2.0, price_per_million_completion_tokens=8.0,
    )  # fmt: skip


def test_prompt_tokens_count_text_schema_and_image_patches():
    request = VLMRequest(task="t", prompt="x" * 400, images=[_png(2048, 1024)])
    # 400 chars / 4 = 100; the image scaled to 1024 x 512 = 37 x 19 patches of 28 px = 703
    assert prompt_tokens(request, max_side=1024) == 100 + 37 * 19
    with_schema = request.model_copy(update={"json_schema": {"type": "object"}})
    assert prompt_tokens(with_schema, max_side=1024) == 100 + 37 * 19 + 5  # '{"type": "object"}' is 18 chars


def test_nothing_is_sent_and_the_cache_still_answers(tmp_path):
    prompts = ("Draw ATP.", "Draw ADP.", "Draw AMP.")
    cached, new, other = (build_judge_request(prompt, CHECKLIST, _png(64, 64)) for prompt in prompts)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with FakeOpenAIServer() as server:
        [answer] = CachedVLM(_served(server), cache).generate([cached])  # a real run answered this one
        assert answer.ok and server.stats.chat_requests == 1
        ledger = Ledger()
        # The same request twice is asked once, as in a real run.
        results = CachedVLM(DryRunVLM(_served(server), ledger), cache).generate([cached, new, other, new])
        assert server.stats.chat_requests == 1  # the dry run sent nothing
    assert results[0].ok and results[0].output == answer.output
    assert [result.failure for result in results[1:]] == [NOT_SENT] * 3
    [row] = ledger.table()
    assert (row["task"], row["requests"], row["images"]) == ("judge", 2, 2)
    expected = 2 * (prompt_tokens(new, 1024) * 2.0 + 500 * 8.0) / 1_000_000
    assert row["completion_tokens_at_most"] == 1000 and row["cost_usd"] == pytest.approx(expected)
    assert "total: 2 requests" in ledger_text(ledger) and "Not counted" in ledger_text(ledger)


def test_the_catalog_builds_dry_run_backends_only_when_asked(monkeypatch, tmp_path):
    monkeypatch.delenv("SCIIR_DRY_RUN", raising=False)
    assert not isinstance(BackendDataset(kind="vlm", backend="offline").load(), DryRunVLM)
    monkeypatch.setenv("SCIIR_DRY_RUN", "1")
    assert isinstance(BackendDataset(kind="vlm", backend="offline").load(), DryRunVLM)
    cached = BackendDataset(kind="vlm", backend="offline", cache_path=str(tmp_path / "c.sqlite")).load()
    assert isinstance(cached, CachedVLM) and isinstance(cached.inner, DryRunVLM)


def test_a_dry_run_writes_no_output_and_says_so_once(tmp_path, caplog):
    pipeline = Pipeline([node(lambda x: x, "source", "table", name="copy")])
    catalog = DataCatalog(
        {"source": MemoryDataset([1]), "table": CSVDataset(filepath=str(tmp_path / "table.csv"))}
    )
    with caplog.at_level(logging.WARNING):
        assert keep_outputs_in_memory(pipeline, catalog) == ["table"]
        catalog["source"] = MemoryDataset([2])  # a replacement of another's: Kedro still warns
    assert isinstance(catalog["table"], MemoryDataset) and isinstance(catalog["source"], MemoryDataset)
    assert not (tmp_path / "table.csv").exists()
    warned = [record.getMessage() for record in caplog.records]
    assert warned == [
        "dry run (SCIIR_DRY_RUN): no request is sent to a model and none of the 1 outputs is written",
        "Replacing dataset 'source'",
    ]
