"""The ``diffusers`` generator on the tiny pipeline: sizes, seeds, LoRA, and failures as results."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sciir.backends import diffusers_gen
from sciir.backends.base import GenerationRequest
from sciir.backends.diffusers_gen import (
    ADAPTER_FILE,
    DiffusersGenerator,
    _text_encoders_warning_dropped,
    adapter_is_denoiser_only,
)
from sciir.backends.prompt_fit import FittedPrompt, fit_prompt, pipeline_text_inputs
from sciir.backends.registry import build_backend
from sciir.training.config import LoraTrainConfig
from sciir.training.loop import finetune_lora_adapter
from sciir.training.tiny_stable_diffusion import (
    build_clip_tokenizer,
    ensure_tiny_pipeline,
    save_tiny_pipeline,
)
from sciir.training.training_images import TrainingImage

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture(scope="module")
def base_folder(tmp_path_factory):
    return ensure_tiny_pipeline(tmp_path_factory.mktemp("tiny") / "base", seed=0)


@pytest.fixture(scope="module")
def generator(base_folder):
    return DiffusersGenerator(pipeline_path=str(base_folder), steps=2, resolution=32)


def _request(sample_id: str, seed: int = 0, size: int = 48) -> GenerationRequest:
    return GenerationRequest(
        sample_id=sample_id, prompt="a labelled cell diagram", seed=seed, width=size, height=size
    )


def _pixels(png: bytes | None) -> np.ndarray:
    assert png is not None
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def test_importing_the_backend_does_not_import_torch():
    code = "import sys, sciir.backends.diffusers_gen; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(SRC)})


def test_registered_under_its_name(base_folder):
    backend = build_backend("generator", "diffusers", pipeline_path=str(base_folder))
    assert isinstance(backend, DiffusersGenerator)


@pytest.mark.slow
def test_images_have_the_requested_size_and_depend_only_on_the_seed(generator):
    first, again, other, wide = generator.generate(
        [_request("a", seed=1), _request("b", seed=1), _request("c", seed=2), _request("d", size=40)]
    )
    assert all(result.ok for result in (first, again, other, wide))
    assert Image.open(io.BytesIO(wide.image or b"")).size == (40, 40)
    assert _pixels(first.image).shape == (48, 48, 3)
    assert first.image == again.image
    assert first.image != other.image
    assert first.meta == {"backend": "diffusers", "lora": False, "steps": 2}
    assert generator.generate([_request("a", seed=1)])[0].image == first.image  # reloaded nothing, same image


def test_a_missing_pipeline_folder_fails_every_request_by_name(tmp_path):
    missing = tmp_path / "no_such_pipeline"
    results = DiffusersGenerator(pipeline_path=str(missing)).generate([_request("a"), _request("b")])
    assert [r.sample_id for r in results] == ["a", "b"]
    assert all(not r.ok and str(missing) in (r.failure or "") for r in results)


def test_a_missing_adapter_or_a_bad_dtype_is_a_failure(base_folder, tmp_path):
    no_lora = DiffusersGenerator(pipeline_path=str(base_folder), lora_path=str(tmp_path / "lora"))
    assert str(tmp_path / "lora") in (no_lora.generate([_request("a")])[0].failure or "")
    bad_dtype = DiffusersGenerator(pipeline_path=str(base_folder), dtype="float7")
    assert "float7" in (bad_dtype.generate([_request("a")])[0].failure or "")


def test_a_failing_request_does_not_stop_the_others(generator):
    # torch seeds are 64-bit: a larger seed breaks that request only.
    good, bad = generator.generate([_request("good"), _request("bad", seed=2**70)])
    assert good.ok
    assert not bad.ok and bad.image is None
    assert "sample bad" in (bad.failure or "") and "Overflow" in (bad.failure or "")


NO_KEYS = "No LoRA keys associated to CLIPTextModel"


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _loader_warnings() -> Iterator[list[str]]:
    """The messages diffusers' LoRA loader logs within the block (after its logger's filters)."""
    handler = _Messages()
    logging.getLogger("diffusers.loaders.lora_base").addHandler(handler)
    try:
        yield handler.messages
    finally:
        logging.getLogger("diffusers.loaders.lora_base").removeHandler(handler)


def _adapter(path: Path, keys: list[str]) -> Path:
    """A safetensors file whose header names ``keys`` (one float each)."""
    header = {
        key: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i, key in enumerate(keys)
    }
    text = json.dumps({"__metadata__": {"format": "pt"}, **header}).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + bytes(4 * len(keys)))
    return path


def test_an_adapter_is_denoiser_only_when_every_key_is_the_unets_or_the_transformers(tmp_path):
    unet = _adapter(tmp_path / "unet.safetensors", ["unet.a.lora_A.weight", "unet.a.lora_B.weight"])
    assert adapter_is_denoiser_only(unet)
    assert adapter_is_denoiser_only(_adapter(tmp_path / "dit.safetensors", ["transformer.b.lora_A.weight"]))
    (tmp_path / "folder").mkdir()
    _adapter(tmp_path / "folder" / ADAPTER_FILE, ["unet.a.lora_A.weight"])
    assert adapter_is_denoiser_only(tmp_path / "folder")
    both = ["unet.a.lora_A.weight", "text_encoder.c.lora_A.weight"]
    assert not adapter_is_denoiser_only(_adapter(tmp_path / "both.safetensors", both))
    kohya = ["lora_unet_a.lora_down.weight", "lora_te_c.lora_down.weight"]
    assert not adapter_is_denoiser_only(_adapter(tmp_path / "kohya.safetensors", kohya))
    assert not adapter_is_denoiser_only(_adapter(tmp_path / "empty.safetensors", []))
    (tmp_path / "garbage.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    assert not adapter_is_denoiser_only(tmp_path / "garbage.safetensors")
    assert not adapter_is_denoiser_only(tmp_path / "absent.safetensors")
    assert not adapter_is_denoiser_only(tmp_path)  # a folder without diffusers' file


def test_only_the_loading_threads_text_encoder_warning_is_dropped_and_only_when_active():
    loader = logging.getLogger("diffusers.loaders.lora_base")
    elsewhere = threading.Thread(target=lambda: loader.warning("%s found, from another thread", NO_KEYS))
    with _loader_warnings() as seen:
        with _text_encoders_warning_dropped(active=True):
            loader.warning("%s found with the prefix='text_encoder'", NO_KEYS)
            loader.warning("another warning of the loader")
            elsewhere.start()
            elsewhere.join()
        loader.warning("%s found, after the load", NO_KEYS)
        with _text_encoders_warning_dropped(active=False):
            loader.warning("%s found, while inactive", NO_KEYS)
    assert seen == [
        "another warning of the loader",
        f"{NO_KEYS} found, from another thread",
        f"{NO_KEYS} found, after the load",
        f"{NO_KEYS} found, while inactive",
    ]


@pytest.mark.slow
def test_a_lora_changes_the_images_and_the_identity(base_folder, generator, tmp_path):
    image = TrainingImage(
        sample_id="s", caption="a labelled cell diagram", pixels=np.ones((3, 32, 32), np.float32)
    )
    config = LoraTrainConfig(resolution=32, steps=3, batch_size=1, learning_rate=2e-2, lora_rank=4, seed=0)
    finetune_lora_adapter(base_folder, [image], config, tmp_path / "lora")
    tuned = DiffusersGenerator(
        pipeline_path=str(base_folder), lora_path=str(tmp_path / "lora"), steps=2, resolution=32
    )
    with _loader_warnings() as warned:
        (with_lora,) = tuned.generate([_request("a", seed=1)])
    # The adapter holds the UNet's weights only: diffusers' warning that the text encoder got none is dropped,
    # and only for that load: loaded again by diffusers alone, the same file is warned about.
    assert adapter_is_denoiser_only(tmp_path / "lora")
    assert not [message for message in warned if message.startswith(NO_KEYS)]
    with (
        _loader_warnings() as warned_again,
        pytest.warns(UserWarning, match="peft_config"),
    ):  # a second adapter
        tuned._loaded_pipeline().load_lora_weights(tmp_path / "lora", adapter_name="again")
    assert [message for message in warned_again if message.startswith(NO_KEYS)]
    (without,) = generator.generate([_request("a", seed=1)])
    assert with_lora.ok and with_lora.meta["lora"] is True
    assert np.abs(_pixels(with_lora.image) - _pixels(without.image)).max() > 0
    assert tuned.identity()["weights"]["lora"] is not None
    before = tuned.identity()
    finetune_lora_adapter(base_folder, [image], config, tmp_path / "lora")
    assert tuned.identity() == before  # the same bytes again: cached images stay valid
    finetune_lora_adapter(base_folder, [image], config.model_copy(update={"seed": 1}), tmp_path / "lora")
    assert tuned.identity() != before  # other weights: cached images must not be reused


def test_identity_follows_the_base_weights(tmp_path):
    folder = save_tiny_pipeline(tmp_path / "base", seed=0)
    backend = DiffusersGenerator(pipeline_path=str(folder))
    before = backend.identity_hash()
    save_tiny_pipeline(folder, seed=1)
    assert backend.identity_hash() != before


LONG_PROMPT = " ".join(f"label{i} leads to node{i}." for i in range(60))  # far over 77 tokens


def test_a_prompt_is_cut_at_the_last_whole_word_the_text_encoder_reads():
    tokenizer = build_clip_tokenizer()
    fitted = fit_prompt(LONG_PROMPT, tokenizer, tokenizer.model_max_length)
    assert fitted.cut and 0 < fitted.words_kept < fitted.words == len(LONG_PROMPT.split())
    assert LONG_PROMPT.startswith(fitted.text)
    count = len(tokenizer(fitted.text)["input_ids"])
    one_more = " ".join(LONG_PROMPT.split()[: fitted.words_kept + 1])
    assert count <= tokenizer.model_max_length < len(tokenizer(one_more, verbose=False)["input_ids"])
    assert fit_prompt("a cell", tokenizer, tokenizer.model_max_length) == FittedPrompt("a cell", 2, 2)


@pytest.mark.slow
def test_long_prompts_are_said_once_per_pipeline_folder_and_recorded_per_image(
    base_folder, caplog, capfd, monkeypatch
):
    monkeypatch.setattr(diffusers_gen, "_CUTS_SAID", set())  # what earlier tests of this process said
    long_requests = [
        GenerationRequest(sample_id=f"s{i}", prompt=LONG_PROMPT, seed=i, width=32, height=32)
        for i in range(2)
    ]
    with caplog.at_level(logging.WARNING):
        generator = DiffusersGenerator(pipeline_path=str(base_folder), steps=1, resolution=32)
        first, second, short = generator.generate([*long_requests, _request("short", size=32)])
        # A run makes another generator over the same folder for each adapter and checkpoint it draws with.
        again = DiffusersGenerator(pipeline_path=str(base_folder), steps=1, resolution=32)
        (third,) = again.generate(long_requests[:1])
    assert first.ok and second.ok and short.ok and third.ok
    assert first.meta["prompt_words"] == 240 and first.meta["prompt_words_kept"] < 240
    assert third.meta["prompt_words_kept"] == first.meta["prompt_words_kept"]
    assert "prompt_words_kept" not in short.meta
    said = [record for record in caplog.records if "are cut at the last whole word" in record.getMessage()]
    assert len(said) == 1 and str(base_folder) in said[0].getMessage()
    printed = capfd.readouterr()
    assert "truncated" not in printed.err + printed.out
    assert "Token indices sequence length" not in printed.err + printed.out


class _CountingPipeline:
    """The loaded pipeline, counting its calls and the prompts of each."""

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.calls: list[int] = []

    def __getattr__(self, name):
        return getattr(self.pipeline, name)

    def __call__(self, prompts, **kwargs):
        self.calls.append(len(prompts))
        return self.pipeline(prompts, **kwargs)


@pytest.mark.slow
def test_batches_share_a_call_and_give_each_request_its_own_seeds_image(base_folder, generator):
    requests = [_request(f"s{seed}", seed=seed) for seed in range(5)]
    one_by_one = generator.generate(requests)
    batched = DiffusersGenerator(pipeline_path=str(base_folder), steps=2, resolution=32, batch_size=3)
    counting = _CountingPipeline(batched._loaded_pipeline())
    batched._pipeline = counting
    together = batched.generate(requests)
    assert counting.calls == [3, 2]
    assert [r.sample_id for r in together] == [r.sample_id for r in requests]
    for alone, in_batch in zip(one_by_one, together, strict=True):
        # The same starting noise per seed; batched matrix products may differ in the last bits only.
        assert np.abs(_pixels(alone.image) - _pixels(in_batch.image)).max() <= 1
    assert np.abs(_pixels(together[0].image) - _pixels(together[1].image)).max() > 10


def test_a_failing_request_in_a_batch_fails_alone(base_folder):
    batched = DiffusersGenerator(pipeline_path=str(base_folder), steps=2, resolution=32, batch_size=3)
    good, bad, other = batched.generate(
        [_request("good"), _request("bad", seed=2**70), _request("other", seed=3)]
    )
    assert good.ok and other.ok
    assert not bad.ok and "sample bad" in (bad.failure or "")


def test_a_batch_size_below_one_is_refused(base_folder):
    with pytest.raises(ValueError, match="batch_size must be at least 1, got 0"):
        DiffusersGenerator(pipeline_path=str(base_folder), batch_size=0)


def test_a_t5_encoder_reads_more_of_a_long_prompt_than_clip(tmp_path, capfd):
    from sciir.testing.tiny_flux_sd3 import ensure_tiny_flux_pipeline

    folder = ensure_tiny_flux_pipeline(tmp_path / "flux", seed=0)
    generator = DiffusersGenerator(pipeline_path=str(folder), steps=1, resolution=32)
    inputs = pipeline_text_inputs(generator._loaded_pipeline(), generator.call_kwargs)
    # CLIP's own limit, and T5's from FluxPipeline's default max_sequence_length.
    assert [(i.argument, i.limit) for i in inputs] == [("prompt", 77), ("prompt_2", 512)]
    (result,) = generator.generate(
        [GenerationRequest(sample_id="s", prompt=LONG_PROMPT, seed=0, width=32, height=32)]
    )
    assert result.ok, result.failure
    kept = result.meta["prompt_words_kept_per_encoder"]
    assert 0 < kept["prompt"] < kept["prompt_2"] < result.meta["prompt_words"] == 240
    assert result.meta["prompt_words_kept"] == kept["prompt_2"]
    # An explicit max_sequence_length is what T5 is fitted to.
    shorter = DiffusersGenerator(pipeline_path=str(folder), steps=1, resolution=32, max_sequence_length=128)
    assert pipeline_text_inputs(shorter._loaded_pipeline(), shorter.call_kwargs)[1].limit == 128
    printed = capfd.readouterr()
    assert "truncated" not in printed.err + printed.out


@pytest.mark.slow
def test_a_batchs_images_are_encoded_while_the_next_batch_is_drawn(base_folder, monkeypatch):
    """The pipeline's thread draws; PNG encoding (about 0.4 s of CPU for a 1024-pixel image) runs beside it.
    The first batch's encodings wait until the second batch is drawn: were they made on the drawing
    thread, the second batch would never be drawn and the wait would fail."""
    batched = DiffusersGenerator(pipeline_path=str(base_folder), steps=2, resolution=32, batch_size=2)
    counting = _CountingPipeline(batched._loaded_pipeline())
    batched._pipeline = counting
    encode = DiffusersGenerator._encoded
    encoded: list[tuple[str, int]] = []

    def encoded_after_the_next_draw(self, request, prompt, image):
        if request.sample_id in ("s0", "s1"):
            deadline = time.monotonic() + 10
            while len(counting.calls) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        encoded.append((request.sample_id, len(counting.calls)))
        return encode(self, request, prompt, image)

    requests = [_request(f"s{seed}", seed=seed) for seed in range(4)]
    expected = DiffusersGenerator(pipeline_path=str(base_folder), steps=2, resolution=32, batch_size=2)
    monkeypatch.setattr(DiffusersGenerator, "_encoded", encoded_after_the_next_draw)
    results = batched.generate(requests)
    assert counting.calls == [2, 2]
    assert sorted(encoded) == [("s0", 2), ("s1", 2), ("s2", 2), ("s3", 2)]
    assert [r.sample_id for r in results] == ["s0", "s1", "s2", "s3"]  # in order all the same
    monkeypatch.undo()
    assert [r.image for r in results] == [r.image for r in expected.generate(requests)]  # the same PNG bytes
