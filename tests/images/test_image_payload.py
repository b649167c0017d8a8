"""Image payloads: own bytes when the judge accepts them, one conversion otherwise, readable errors."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
import yaml
from kedro.io import DataCatalog
from kedro_datasets.partitions import PartitionedDataset
from PIL import Image
from PIL import ImageFile as PILImageFile

from sciir.backends import base
from sciir.backends.base import VLMRequest
from sciir.backends.cache import request_key
from sciir.backends.offline import OfflineVLM
from sciir.catalog.image_dataset import EncodedImage, ImageFileDataset, ImageFolderDataset
from sciir.images import payload as image_payload
from sciir.images.conversion_workers import HEAD_BYTES, prepare_payloads
from sciir.images.payload import (
    ConversionStore,
    ImageFile,
    ImageLimits,
    UnreadableImageFile,
    payload,
    sniff_format,
)
from sciir.tasks.judge import build_judge_request
from sciir.tasks.registry import rule_book

REPO = Path(__file__).resolve().parents[2]


def _noisy(mode: str = "RGB", side: int = 64) -> Image.Image:
    pixels = np.random.default_rng(0).integers(0, 256, (side, side, 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB").convert(mode)


def _write(tmp_path: Path, name: str, image: Image.Image, image_format: str, **options: int) -> Path:
    path = tmp_path / name
    image.save(path, format=image_format, **options)
    return path


@pytest.fixture
def decodes(monkeypatch) -> list[str]:
    """Every full decode of an image (Pillow's ``ImageFile.load``), by format."""
    calls: list[str] = []
    original = PILImageFile.ImageFile.load

    def counted(self):  # type: ignore[no-untyped-def]
        if self.tile:  # a load that decodes (a second call on a loaded image does nothing)
            calls.append(self.format)
        return original(self)

    monkeypatch.setattr(PILImageFile.ImageFile, "load", counted)
    return calls


@pytest.mark.parametrize(("image_format", "suffix"), [("PNG", ".png"), ("JPEG", ".jpg"), ("WEBP", ".webp")])
def test_an_accepted_file_is_sent_as_its_own_bytes_without_a_decode(tmp_path, decodes, image_format, suffix):
    path = _write(tmp_path, f"m{suffix}", _noisy(), image_format)
    sent = payload(ImageFile.at(path), ImageLimits(max_side=1024))
    request = build_judge_request("a prompt", [], sent)
    assert request.images[0] == path.read_bytes()
    assert (sent.format, sent.size, sent.mime_type) == (
        image_format,
        (64, 64),
        f"image/{suffix[1:]}".replace("jpg", "jpeg"),
    )
    assert decodes == []


def test_the_format_comes_from_the_bytes_not_the_suffix(tmp_path):
    path = _write(tmp_path, "drawn.jpg", _noisy(), "PNG")
    assert sniff_format(path.read_bytes()) == "PNG"
    assert payload(ImageFile.at(path), ImageLimits()).mime_type == "image/png"


def _sixteen_bit_png(tmp_path: Path) -> Path:
    ramp = (np.arange(64 * 64, dtype=np.uint16).reshape(64, 64) * 16).astype(np.uint16)
    return _write(tmp_path, "deep.png", Image.fromarray(ramp), "PNG")


@pytest.mark.parametrize(
    "make",
    [
        _sixteen_bit_png,
        lambda tmp: _write(tmp, "cmyk.jpg", _noisy("CMYK"), "JPEG"),
        lambda tmp: _write(tmp, "plain.bmp", _noisy(), "BMP"),
        lambda tmp: _write(tmp, "plain.tiff", _noisy(), "TIFF"),
        lambda tmp: _write(tmp, "palette.png", _noisy("P"), "PNG", transparency=0),
    ],
    ids=["16-bit PNG", "CMYK JPEG", "BMP", "TIFF", "palette with transparency"],
)
def test_other_images_are_converted_once_to_a_png_the_judge_accepts(tmp_path, monkeypatch, make):
    path = make(tmp_path)
    conversions = _count_conversions(monkeypatch)
    store = ConversionStore()
    first = payload(ImageFile.at(path), ImageLimits(), store)
    again = payload(ImageFile.at(path), ImageLimits(), store)
    assert first == again and first.sha256 == again.sha256
    assert conversions == [str(path)]
    assert (first.format, sniff_format(first)) == ("PNG", "PNG")
    with Image.open(io.BytesIO(first)) as converted:
        assert converted.mode in ("RGB", "RGBA") and converted.size == (64, 64)
        if path.name == "deep.png":  # scaled to 8 bits, not clipped to white
            assert converted.getpixel((0, 0))[0] < 10 and converted.getpixel((63, 63))[0] > 200


def _count_conversions(monkeypatch) -> list[str]:
    calls: list[str] = []
    original = image_payload.converted

    def counted(data, name, limits):  # type: ignore[no-untyped-def]
        calls.append(name)
        return original(data, name, limits)

    monkeypatch.setattr(image_payload, "converted", counted)
    return calls


def test_max_side_resizes_once_and_two_requests_reuse_the_result(tmp_path, monkeypatch, decodes):
    path = _write(tmp_path, "big.png", _noisy(side=300), "PNG")
    conversions = _count_conversions(monkeypatch)
    store, limits = ConversionStore(), ImageLimits(max_side=100)
    judged = build_judge_request("p", [], payload(ImageFile.at(path), limits, store))
    examined = build_judge_request("q", [], payload(ImageFile.at(path), limits, store))
    assert judged.images[0] == examined.images[0]
    assert conversions == [str(path)] and decodes == ["PNG"]  # one decode, for the one resize
    with Image.open(io.BytesIO(judged.images[0])) as small:
        assert small.size == (100, 100)


def test_image_format_sends_only_that_format(tmp_path):
    path = _write(tmp_path, "m.png", _noisy("RGBA"), "PNG")
    sent = payload(ImageFile.at(path), ImageLimits(image_format="JPEG"), ConversionStore())
    assert (sent.format, sniff_format(sent)) == ("JPEG", "JPEG")


def test_conversions_run_in_worker_processes_only_when_needed(tmp_path, monkeypatch):
    plain = [_write(tmp_path, f"p{n}.png", _noisy(side=40), "PNG") for n in range(2)]
    big = [_write(tmp_path, f"b{n}.png", _noisy(side=120 + n), "PNG") for n in range(2)]
    store, limits = ConversionStore(), ImageLimits(max_side=60)
    assert prepare_payloads([ImageFile.at(path) for path in plain], limits, store) == 0
    assert prepare_payloads([ImageFile.at(path) for path in plain + big], limits, store, workers=2) == 2
    conversions = _count_conversions(monkeypatch)  # nothing is converted here any more
    assert [payload(ImageFile.at(path), limits, store).size for path in big] == [(60, 60), (60, 60)]
    assert conversions == []


def test_deciding_what_goes_as_it_is_reads_only_the_start_of_each_file(tmp_path, monkeypatch):
    files = [_write(tmp_path, f"big{n}.png", _noisy(side=400 + n), "PNG") for n in range(3)]
    assert all(path.stat().st_size > HEAD_BYTES for path in files)
    sizes: list[int | None] = []
    original = ImageFile._read

    def counting(self: ImageFile, size: int | None) -> bytes:
        sizes.append(size)
        return original(self, size)

    monkeypatch.setattr(ImageFile, "_read", counting)
    assert prepare_payloads([ImageFile.at(path) for path in files], ImageLimits(), ConversionStore()) == 0
    assert sizes == [HEAD_BYTES] * 3  # no whole file read to find nothing to convert


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (lambda png: png[: len(png) // 2], "truncated PNG"),
        (lambda png: png[:-12], "truncated PNG"),
        (lambda png: b"just some notes, not a picture\n", "not a recognised image format"),
    ],
    ids=["half a PNG", "no IEND", "a text file"],
)
def test_an_unreadable_file_is_reported_naming_it(tmp_path, content, reason):
    buffer = io.BytesIO()
    _noisy().save(buffer, format="PNG")
    path = tmp_path / "model" / "s1.png"
    path.parent.mkdir()
    path.write_bytes(content(buffer.getvalue()))
    with pytest.raises(UnreadableImageFile, match=reason) as error:
        payload(ImageFile.at(path), ImageLimits())
    assert str(path) in str(error.value)


def test_truncated_jpeg_and_webp_are_not_sent(tmp_path):
    for name, image_format in (("cut.jpg", "JPEG"), ("cut.webp", "WEBP")):
        data = _write(tmp_path, name, _noisy(), image_format).read_bytes()
        with pytest.raises(UnreadableImageFile, match=rf"{name} is not a readable image"):
            payload(ImageFile.of_bytes(data[: len(data) - 40], name), ImageLimits())


def test_a_missing_file_names_it(tmp_path):
    with pytest.raises(UnreadableImageFile, match="gone.png"):
        payload(ImageFile.at(tmp_path / "gone.png"), ImageLimits())


def test_the_cache_key_hashes_the_bytes_once_and_follows_them(tmp_path, monkeypatch):
    one = _write(tmp_path, "one.png", _noisy(), "PNG")
    other = _write(tmp_path, "other.png", _noisy("L"), "PNG")
    backend = OfflineVLM(rule_book("offline"))
    sent = payload(ImageFile.at(one), ImageLimits())
    assert sent.sha256 == hashlib.sha256(one.read_bytes()).hexdigest()  # hashed when made
    hashed: list[int] = []
    real = base.sha256_hex
    monkeypatch.setattr(base, "sha256_hex", lambda data: hashed.append(len(data)) or real(data))
    keys = {request_key(backend, VLMRequest(task="judge", prompt=text, images=[sent])) for text in "ab"}
    assert len(keys) == 2 and len(sent) not in hashed  # no request hashed the image again
    monkeypatch.undo()

    def key(image: bytes) -> str:
        return request_key(backend, VLMRequest(task="judge", prompt="a", images=[image]))

    assert key(one.read_bytes()) == key(sent)  # the same bytes, the same key, however they came
    assert key(other.read_bytes()) != key(sent)


def test_limits_come_from_the_backend_config():
    from sciir.backends.openai_compat import OpenAICompatibleVLM

    judge = OpenAICompatibleVLM(
        base_url="http://localhost:1/v1", model="m", image_max_side=512, image_format="webp"
    )
    assert judge.image_limits == ImageLimits(512, "WEBP")
    assert OfflineVLM(rule_book("offline")).image_limits == ImageLimits()
    with pytest.raises(ValueError, match="image_format"):
        ImageLimits(image_format="GIF")


def test_the_dataset_loads_a_lazy_handle_and_saves_images_and_bytes(tmp_path):
    dataset = ImageFileDataset(filepath=str(tmp_path / "gen" / "m" / "s1.png"))
    assert not dataset.exists()
    dataset.save(_noisy())
    handle = dataset.load()
    assert isinstance(handle, ImageFile) and handle.image().size == (64, 64)
    raw = _write(tmp_path, "raw.webp", _noisy(), "WEBP").read_bytes()
    dataset.save(raw)
    assert dataset.load().read() == raw


def test_an_encoded_image_is_written_as_it_is_and_decoded_for_a_pillow_folder(tmp_path):
    # compress_level 0: bytes that encoding the decoded image again would never give back
    png = io.BytesIO()
    _noisy().save(png, format="PNG", compress_level=0)
    encoded = EncodedImage(png.getvalue())
    ImageFolderDataset(
        path=str(tmp_path / "ours"),
        dataset="sciir.catalog.image_dataset.ImageFileDataset",
        filename_suffix=".png",
    ).save({"m/s1": encoded})
    assert (tmp_path / "ours" / "m" / "s1.png").read_bytes() == png.getvalue()
    # The project's image folders are such folders: the generations entry as conf/base/catalog.yml has it.
    entries = yaml.safe_load((REPO / "conf" / "base" / "catalog.yml").read_text(encoding="utf-8"))
    entry = entries["generations"]
    entry["dataset"] = {**entry["dataset"], "path": str(tmp_path / "generations")}
    DataCatalog.from_config({"generations": entry}).save("generations", {"m/s1": encoded})
    assert (tmp_path / "generations" / "m" / "s1.png").read_bytes() == png.getvalue()
    PartitionedDataset(
        path=str(tmp_path / "pillow"), dataset="pillow.ImageDataset", filename_suffix=".png"
    ).save({"m/s1": encoded})
    written = tmp_path / "pillow" / "m" / "s1.png"
    assert written.read_bytes() != png.getvalue()
    with Image.open(written) as image:
        assert image.tobytes() == _noisy().tobytes()
