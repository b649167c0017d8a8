"""Images as a rater gets them: a PNG without its text chunks, pixels unchanged; JPEG and WebP without EXIF."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, PngImagePlugin

from sciir.review.blind_images import NotAnImage, blind_png, png_without_text


def _pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA"))


def test_a_png_keeps_its_pixels_and_loses_its_text(tmp_path: Path) -> None:
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "secret-generator v2")
    info.add_itxt("workflow", '{"ckpt": "secret-checkpoint.safetensors"}', zip=True)
    source = Image.fromarray(np.random.default_rng(0).integers(0, 255, (20, 30, 4), dtype=np.uint8), "RGBA")
    path = tmp_path / "x.png"
    source.save(path, pnginfo=info)
    assert b"secret-generator" in path.read_bytes()
    served = blind_png(path)
    assert b"secret" not in served and b"tEXt" not in served and b"iTXt" not in served
    assert np.array_equal(_pixels(served), np.asarray(source))
    assert Image.open(io.BytesIO(served)).info.get("Software") is None


@pytest.mark.parametrize("image_format", ["JPEG", "WEBP"])
def test_jpeg_and_webp_are_sent_as_png_without_exif(tmp_path: Path, image_format: str) -> None:
    exif = Image.Exif()
    exif[0x0131] = "secret-generator"  # Software
    path = tmp_path / "x.img"
    Image.new("RGB", (16, 12), (10, 200, 30)).save(path, image_format, exif=exif.tobytes())
    assert b"secret-generator" in path.read_bytes()
    served = blind_png(path)
    assert served.startswith(b"\x89PNG") and b"secret" not in served
    assert Image.open(io.BytesIO(served)).size == (16, 12)


def test_what_is_not_an_image_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.png"
    path.write_text("<svg></svg>")
    with pytest.raises(NotAnImage):
        blind_png(path)
    with pytest.raises(NotAnImage, match="truncated"):
        png_without_text(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\xffIHDR")
