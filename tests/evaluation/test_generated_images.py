"""Finding each model's image of each sample, and why one is missing or unused."""

from __future__ import annotations

import io
import logging

import pandas as pd
import pytest
from PIL import Image

from sciir.evaluation.generated_images import (
    ExpectedImage,
    NoImageError,
    folder_images,
    image_models,
    image_source,
    load_image,
    manifest_entries,
    missing_image_table,
    missing_per_model,
    model_names,
    open_image,
    unavailable_reason,
    unused_images,
)


def white() -> Image.Image:
    return Image.new("RGB", (32, 32), "white")


def unreadable() -> Image.Image:
    return Image.open(io.BytesIO(b"not a png"))


MANIFEST = pd.DataFrame(
    {
        "model": ["good", "good", "bad"],
        "sample_id": ["s1", "s2", "s1"],
        "status": ["ok", "ok", "failed"],
        "reason": [None, None, "CUDA out of memory"],
    }
)


def test_a_folder_gives_one_loader_per_model_and_sample(tmp_path, caplog):
    for name in ("alpha/s1.png", "alpha/s2.JPG", "beta/s1.webp", "beta/s1.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (40, 30), "black").save(tmp_path / name, format="PNG")
    (tmp_path / "beta" / "notes.txt").write_text("not an image")
    (tmp_path / "loose.png").write_bytes(b"")  # not inside a model folder
    with caplog.at_level(logging.WARNING):
        images = folder_images(tmp_path)
    assert sorted(images) == ["alpha/s1", "alpha/s2", "beta/s1"]
    assert open_image(images["alpha/s2"]).size == (40, 30)  # a PNG named .JPG: the bytes tell
    # beta/s1.png sorts first and is used; the second image for the same pair is named in the log
    assert "beta/s1.webp is not used" in caplog.text


def test_a_missing_folder_is_an_error_that_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere is not a folder"):
        folder_images(tmp_path / "nowhere")


def test_the_folder_replaces_the_generations_only_when_set(tmp_path):
    generations = {"gen/s1": white}
    assert image_source(generations, None) is generations
    (tmp_path / "mine").mkdir()
    white().save(tmp_path / "mine" / "s1.png")
    assert list(image_source(generations, str(tmp_path))) == ["mine/s1"]


def test_models_come_from_image_keys_and_the_manifest():
    images = {"zeta/s1": white, "alpha/s2": white, "top-level": white}
    assert image_models(images) == ["alpha", "zeta"]  # a key outside a model folder names no model
    assert model_names(["manifest_only", "alpha"], images) == ["alpha", "manifest_only", "zeta"]


def test_unavailable_reasons_name_the_pair_and_the_problem():
    manifest = manifest_entries(MANIFEST)
    images = {"good/s1": white, "bad/s1": white}
    assert unavailable_reason(ExpectedImage("good", "s1"), manifest, images) is None
    assert unavailable_reason(ExpectedImage("good", "s2"), manifest, images) == (
        "no image from model good for sample s2: the manifest says ok but there is no image file"
    )
    assert unavailable_reason(ExpectedImage("bad", "s1"), manifest, images) == (
        "no image from model bad for sample s1: CUDA out of memory"
        " (the image file there is from an earlier run and is not judged)"
    )
    assert unavailable_reason(ExpectedImage("new", "s1"), manifest, images) == (
        "no image from model new for sample s1: no image file"
    )


def test_loading_an_image_names_what_is_wrong():
    images = {"m/s1": white, "m/s2": unreadable, "m/s3": white()}
    assert load_image(ExpectedImage("m", "s1"), images).size == (32, 32)
    assert load_image(ExpectedImage("m", "s3"), images).size == (32, 32)  # an image held in memory
    with pytest.raises(NoImageError, match=r"^the image m/s2 could not be read \(cannot identify"):
        load_image(ExpectedImage("m", "s2"), images)
    with pytest.raises(NoImageError, match="^no image from model m for sample s4$"):
        load_image(ExpectedImage("m", "s4"), images)


def test_unused_images_are_listed_and_logged(caplog):
    images = {"m/s1": white, "m/s9": white, "other/s1": white}
    with caplog.at_level(logging.WARNING):
        unused = unused_images(images, [ExpectedImage("m", "s1"), ExpectedImage("other", "s1")])
    assert unused == ["m/s9"] and "1 image files belong to no benchmark sample" in caplog.text
    assert unused_images(images, [ExpectedImage(*key.split("/")) for key in images]) == []


def test_missing_images_counted_per_model_and_tabulated():
    unavailable = {"b/s2": "no image from model b for sample s2: OOM", "a/s1": "no image: lost"}
    assert missing_per_model(unavailable, ["c", "b", "a"]) == {"c": 0, "b": 1, "a": 1}
    table = missing_image_table(unavailable)
    assert table.values.tolist() == [
        ["a", "s1", "no image: lost"],
        ["b", "s2", "no image from model b for sample s2: OOM"],
    ]
    assert list(missing_image_table({}).columns) == ["model", "sample_id", "reason"]
