"""Files checked before are not read again on a rerun: the judge node keys its requests by what it
remembers of each file (path, size, modification time -> sha256), and reads a file only on a cache miss."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from sciir.backends.base import Deferred, VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.evaluation.generated_images import ExpectedImage, folder_images
from sciir.evaluation.known_files import KnownFiles, KnownPayload, payload_or_known, with_image
from sciir.evaluation.per_image_requests import ask_per_image
from sciir.images.payload import ImageFile, ImageLimits, Payload, encode
from sciir.pipelines.evaluate.nodes import judge_generations
from sciir.tasks.judge import build_judge_request

BENCHMARK = pd.DataFrame(
    {
        "sample_id": ["s1", "s2"],
        "group": ["All_Three", "All_Three"],
        "setting": ["instruction_following"] * 2,
        "prompt": ["Draw ATP.", "Draw ADP."],
    }
)
CHECKLISTS = pd.DataFrame(
    {
        "sample_id": ["s1", "s1", "s2"],
        "question_id": ["q1", "q2", "q1"],
        "question": ["Is ATP there?", "Is the arrow right?", "Is ADP there?"],
        "layer": [1, 2, 1],
        "track": ["text", "process", "text"],
        "expected_text": ["ATP", None, "ADP"],
        "parent_ids": ["[]", "[]", "[]"],
    }
)


class CountingJudge(VisionLanguageModel):
    """Answers every question yes and counts the requests it was sent."""

    def __init__(self, **config) -> None:
        super().__init__(**config)
        self.sent = 0

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.sent += len(requests)
        return [
            VLMResult(
                output={
                    "answers": [
                        {"id": item["id"], "verdict": "yes", "evidence": "", "reasoning": ""}
                        for item in r.context["checklist"]
                    ]
                }
            )
            for r in requests
        ]


@pytest.fixture
def full_reads(monkeypatch) -> list[str]:
    """The files read in full (not just their first bytes), by name."""
    reads: list[str] = []
    original = ImageFile._read

    def counting(self: ImageFile, size: int | None) -> bytes:
        if size is None:
            reads.append(self.name)
        return original(self, size)

    monkeypatch.setattr(ImageFile, "_read", counting)
    return reads


def write_png(path: Path, colour: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode(Image.new("RGB", (48, 32), colour), "PNG"))


@pytest.fixture
def images(tmp_path) -> Path:
    folder = tmp_path / "images"
    for model, colour in (("m1", "white"), ("m2", "lightblue")):
        for sample in ("s1", "s2"):
            write_png(folder / model / f"{sample}.png", colour)
    return folder


def judge_folder(folder: Path, judge: VisionLanguageModel) -> pd.DataFrame:
    # only the files on disk: no blank baseline (its white images are made in memory, never read from disk)
    params = {"images_dir": str(folder), "window": 4, "blank": {"enabled": False}}
    verdicts, _ = judge_generations(BENCHMARK, CHECKLISTS, {}, pd.DataFrame(), judge, params)
    return verdicts.sort_values(["model", "sample_id", "question_id"]).reset_index(drop=True)


def test_a_rerun_on_the_same_cache_reads_no_image_file(images, tmp_path, full_reads):
    first = CountingJudge()
    cold = judge_folder(images, CachedVLM(first, ResponseCache(tmp_path / "cache.sqlite")))
    assert first.sent == 4 and len(full_reads) == 4

    full_reads.clear()
    second = CountingJudge()
    warm = judge_folder(images, CachedVLM(second, ResponseCache(tmp_path / "cache.sqlite")))
    assert second.sent == 0 and full_reads == []
    pd.testing.assert_frame_equal(warm, cold)
    assert set(warm["status"]) == {"judged"}


def test_a_file_written_since_is_read_and_judged_again(images, tmp_path, full_reads):
    judge_folder(images, CachedVLM(CountingJudge(), ResponseCache(tmp_path / "cache.sqlite")))
    write_png(images / "m2" / "s1.png", "black")  # new content, new modification time
    full_reads.clear()
    judge = CountingJudge()
    judge_folder(images, CachedVLM(judge, ResponseCache(tmp_path / "cache.sqlite")))
    assert judge.sent == 1 and full_reads == [str(images / "m2" / "s1.png")]


def test_content_changed_under_the_same_size_and_time_fails_that_image_with_the_reason(images, tmp_path):
    judge_folder(images, CachedVLM(CountingJudge(), ResponseCache(tmp_path / "cache.sqlite")))
    path = images / "m1" / "s2.png"
    before = path.stat()
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF  # same length, other bytes
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    # Another judge has no cached answer, so the request must be made and the file read: it is caught.
    other = CachedVLM(CountingJudge(model="other"), ResponseCache(tmp_path / "cache.sqlite"))
    verdicts = judge_folder(images, other)
    failed = verdicts[verdicts["status"] == "failed"]
    assert set(zip(failed["model"], failed["sample_id"], strict=True)) == {("m1", "s2")}
    assert (
        "changed after it was checked" in failed["reason"].iloc[0] and str(path) in failed["reason"].iloc[0]
    )
    assert (verdicts["status"] == "judged").sum() == len(verdicts) - 1
    assert other.stats["failures"] == 1


def test_without_a_response_cache_nothing_is_remembered(images, full_reads):
    judge = CountingJudge()
    assert KnownFiles.beside(judge.cache_file) is None
    judge_folder(images, judge)
    judge_folder(images, judge)
    assert judge.sent == 8 and len(full_reads) == 8


def test_only_files_sent_as_their_own_bytes_within_the_limits_are_known(tmp_path):
    known = KnownFiles(ResponseCache(tmp_path / "cache.sqlite", "image_files"))
    path = tmp_path / "wide.png"
    write_png(path, "white")
    handle = ImageFile.at(path)
    first = payload_or_known(handle, ImageLimits(), known)
    assert isinstance(first, Payload) and first.format == "PNG"
    remembered = payload_or_known(handle, ImageLimits(), known)
    assert isinstance(remembered, KnownPayload) and remembered.sha256 == first.sha256
    assert remembered.read() == first
    # Under a limit the file exceeds it is converted, never passed off as known.
    shrunk = payload_or_known(handle, ImageLimits(max_side=16), known)
    assert isinstance(shrunk, Payload) and max(shrunk.size) == 16
    # Bytes in memory have no file to remember.
    assert KnownFiles.stamp(ImageFile.of_bytes(bytes(first))) is None


def test_a_deferred_request_is_made_only_on_a_miss_and_a_failure_to_make_it_is_not_cached(tmp_path):
    judge = CountingJudge()
    cached = CachedVLM(judge, ResponseCache(tmp_path / "cache.sqlite"))
    request = VLMRequest(task="judge", prompt="p", context={"checklist": [{"id": "q1"}]})
    made: list[str] = []

    def image() -> list[bytes]:
        made.append("read")
        return [b"image bytes"]

    def unreadable() -> list[bytes]:
        raise ValueError("x.png is not a readable image: truncated")

    digest = "ab" * 32
    ok = Deferred(
        request.content_key() | {"images": [digest]}, lambda: request.model_copy(update={"images": image()})
    )
    results: dict[int, VLMResult] = {}
    cached.stream([ok], results.__setitem__)
    cached.stream([ok], results.__setitem__)
    assert made == ["read"] and judge.sent == 1 and results[0].cached

    broken = request.with_images_later(["cd" * 32], unreadable)
    cached.stream([broken], results.__setitem__)
    assert results[0].failure == "x.png is not a readable image: truncated"
    cached.stream([broken], results.__setitem__)
    assert cached.stats["failures"] == 2 and judge.sent == 1


def test_with_image_carries_bytes_at_once_or_defers_a_known_file(tmp_path):
    request = VLMRequest(task="judge", prompt="p")
    path = tmp_path / "a.png"
    write_png(path, "white")
    payload = payload_or_known(ImageFile.at(path), ImageLimits(), None)
    assert with_image(request, payload).images == [payload]
    known = KnownPayload(ImageFile.at(path), KnownFiles.facts_of(payload))
    deferred = with_image(request, known)
    assert isinstance(deferred, Deferred)
    assert deferred.content_key() == with_image(request, payload).content_key()
    assert deferred.make().images == [payload]


def test_the_aibench_examination_rerun_reads_no_image_file_either(images, tmp_path, full_reads):
    jobs = [ExpectedImage(model, sample) for model in ("m1", "m2") for sample in ("s1", "s2")]
    generations = folder_images(images)

    def examine() -> tuple[CountingJudge, list]:
        judge = CountingJudge()
        cached = CachedVLM(judge, ResponseCache(tmp_path / "cache.sqlite"))
        build = lambda job: {"judge": build_judge_request(job.sample_id, [{"id": "q1"}])}  # noqa: E731
        return judge, ask_per_image(jobs, generations, cached, build, 2, "examine")

    first, cold = examine()
    assert first.sent == 4 and len(full_reads) == 4
    full_reads.clear()
    second, warm = examine()
    assert second.sent == 0 and full_reads == []
    assert [item.results["judge"].output for item in warm] == [item.results["judge"].output for item in cold]
    assert all(item.cached for item in warm)
