"""Which generated images there are: each model's image of each benchmark sample, and why one is missing.

Images are keyed ``<model>/<sample_id>``: the ``generations`` dataset (``<model>/<sample_id>.png``) or a
folder of the user's own images with the same layout (.png, .jpg, .jpeg or .webp). Either gives lazy
handles (``sciir.images.payload.ImageFile``): a model request carries the file's own bytes
(:func:`image_payloads`), and pixels are decoded only by a consumer that needs them (:func:`open_image`).

Every model that drew anything is expected to have drawn every sample; a pair without a usable image (no
file, a failed generation, an unreadable file) gets a reason that names the model, the sample and what is
wrong, and an image file of no expected pair is listed as unused. Nothing is dropped silently.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from sciir.evaluation.known_files import KnownFiles, KnownPayload, checked_payload, payload_or_known
from sciir.images.conversion_workers import prepare_payloads
from sciir.images.payload import FOLDER_IMAGE_SUFFIXES, ImageFile, ImageLimits, Payload, image_file
from sciir.runs.long_lists import log_list

logger = logging.getLogger(__name__)

# <model>/<sample_id> -> a loader of that image file's handle (Kedro's partitioned dataset of
# ``sciir.catalog.image_dataset.ImageFileDataset``, or ``folder_images``), or of a decoded image.
ImageFiles = Mapping[str, Callable[[], ImageFile | Image.Image]]
# The same, or the handles or images themselves: a pipeline run in memory may pass those.
ImageLoaders = Mapping[str, Callable[[], ImageFile | Image.Image] | ImageFile | Image.Image]
# <model>/<sample_id> -> a loader of the bytes a model request carries for that image (or, for a file
# checked before, of its sha256 with the bytes read later: ``sciir.evaluation.known_files``).
PayloadLoaders = Mapping[str, Callable[[], Payload | KnownPayload]]
# (model, sample_id) -> that pair's generation manifest row (with ``status`` and ``reason``).
ManifestEntries = Mapping[tuple[str, str], Any]

MISSING_IMAGE_COLUMNS = ("model", "sample_id", "reason")


@dataclass(frozen=True)
class ExpectedImage:
    """The image a model is expected to have drawn for a benchmark sample."""

    model: str
    sample_id: str

    @property
    def image_id(self) -> str:
        return f"{self.model}/{self.sample_id}"

    def no_image(self, detail: str | None = None) -> str:
        """The reason recorded for this image when there is none to use, with ``detail`` when given."""
        reason = f"no image from model {self.model} for sample {self.sample_id}"
        return f"{reason}: {detail}" if detail else reason


class NoImageError(LookupError):
    """An expected image that is missing or cannot be read; the message names the image and the problem."""


def model_of(image_id: str) -> str:
    """The model part of an image id ``<model>/<sample_id>``."""
    return image_id.rsplit("/", 1)[0]


# ---- finding the images


def folder_images(folder: Path) -> dict[str, Callable[[], ImageFile]]:
    """``<model>/<sample_id>`` -> loader of its handle, for every image file in the model folders of
    ``folder`` (nothing is read here)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"images_dir {folder} is not a folder of <model>/<sample_id>.png images")
    loaders: dict[str, Callable[[], ImageFile]] = {}
    for path in sorted(folder.glob("*/*")):
        if not path.is_file() or path.suffix.lower() not in FOLDER_IMAGE_SUFFIXES:
            continue
        key = f"{path.parent.name}/{path.stem}"
        if key in loaders:
            logger.warning("images_dir holds two images for %s: %s is not used", key, path)
            continue
        loaders[key] = partial(ImageFile.at, path)
    return loaders


def image_source(generations: ImageLoaders, images_dir: str | None) -> ImageLoaders:
    """The images to use: the ``images_dir`` folder when set, else the ``generations`` dataset."""
    return folder_images(Path(images_dir)) if images_dir else generations


def image_models(images: ImageLoaders) -> list[str]:
    """The models that drew images (the folder part of ``<model>/<sample_id>``), in name order."""
    return sorted({model_of(key) for key in images if "/" in key})


def expected_images(images: ImageLoaders, sample_ids: Iterable[str]) -> list[ExpectedImage]:
    """Every model that drew images x every sample: an image each model is expected to have drawn."""
    sample_ids = list(sample_ids)
    return [ExpectedImage(model, sample) for model in image_models(images) for sample in sample_ids]


def manifest_roles(generation_manifest: pd.DataFrame) -> dict[str, str]:
    """Model -> role (``contestant`` / ``reference``) from the generation manifest's ``role`` column;
    empty when it has none."""
    if "role" not in generation_manifest.columns:
        return {}
    roles = generation_manifest[["model", "role"]].dropna().drop_duplicates("model")
    return dict(zip(roles["model"].astype(str), roles["role"].astype(str), strict=True))


def model_names(manifest_models: Iterable[str], images: ImageLoaders) -> list[str]:
    """Every model that has an image file or generation manifest rows, in name order."""
    return sorted(set(manifest_models) | set(image_models(images)))


def manifest_entries(generation_manifest: pd.DataFrame) -> dict[tuple[str, str], Any]:
    """The generation manifest's rows by (model, sample_id)."""
    return {(str(row.model), str(row.sample_id)): row for row in generation_manifest.itertuples(index=False)}


# ---- which expected images are usable


def open_image(entry: Callable[[], ImageFile | Image.Image] | ImageFile | Image.Image) -> Image.Image:
    """The image an entry of an image mapping gives, fully decoded; OSError or ValueError when the
    file cannot be read."""
    image = entry() if callable(entry) else entry
    if isinstance(image, ImageFile):
        return image.image()
    image.load()
    return image


def _payload_of(
    entry: Callable[[], ImageFile | Image.Image] | ImageFile | Image.Image,
    limits: ImageLimits,
    known: KnownFiles | None,
) -> Payload | KnownPayload:
    return payload_or_known(image_file(entry), limits, known)


def image_payloads(
    images: ImageLoaders, image_ids: Iterable[str], limits: ImageLimits, known: KnownFiles | None = None
) -> dict[str, Callable[[], Payload | KnownPayload]]:
    """Image id -> loader of the bytes a request carries for it under a backend's ``limits`` (the file's
    own bytes when they fit; ``sciir.images.payload.payload``), for ``image_ids``. With ``known`` files, a
    file checked before as it is now gives its sha256 without being read (``sciir.evaluation.known_files``), and one
    checked now is remembered (call ``known.flush()`` when done). The conversions some images need
    (format, depth, size) are made first, in worker processes; a loader raises OSError or ValueError
    naming the file when it cannot be read."""
    image_ids = list(image_ids)
    handles = dict(_readable_handles(images, image_ids))
    remembered = known.recall(handles, limits) if known is not None else {}
    prepare_payloads((handle for key, handle in handles.items() if key not in remembered), limits)
    return {
        image_id: (
            partial(remembered.__getitem__, image_id)
            if image_id in remembered
            else partial(_checked_payload_of, images[image_id], limits, known)
        )
        for image_id in image_ids
    }


def _checked_payload_of(
    entry: Callable[[], ImageFile | Image.Image] | ImageFile | Image.Image,
    limits: ImageLimits,
    known: KnownFiles | None,
) -> Payload:
    return checked_payload(image_file(entry), limits, known)


def _readable_handles(images: ImageLoaders, image_ids: Iterable[str]) -> Iterable[tuple[str, ImageFile]]:
    """(id, handle) of ``image_ids``, skipping those whose loader fails (their payload loader says why)."""
    for image_id in image_ids:
        try:
            yield image_id, image_file(images[image_id])
        except (OSError, ValueError):
            continue


def load_payload(
    expected: ExpectedImage, images: ImageLoaders, limits: ImageLimits, known: KnownFiles | None = None
) -> Payload | KnownPayload:
    """The bytes a request carries for the expected image under ``limits`` (a known file's sha256 only,
    as :func:`image_payloads` gives), or NoImageError naming what is wrong."""
    entry = images.get(expected.image_id)
    if entry is None:
        raise NoImageError(expected.no_image())
    try:
        return _payload_of(entry, limits, known)
    except (OSError, ValueError) as error:
        raise NoImageError(f"the image {expected.image_id} could not be read ({error})") from error


def load_image(expected: ExpectedImage, images: ImageLoaders) -> Image.Image:
    """The expected image, or NoImageError naming what is wrong."""
    entry = images.get(expected.image_id)
    if entry is None:
        raise NoImageError(expected.no_image())
    try:
        return open_image(entry)
    except (OSError, ValueError) as error:
        raise NoImageError(f"the image {expected.image_id} could not be read ({error})") from error


def unavailable_reason(
    expected: ExpectedImage, manifest: ManifestEntries, images: ImageLoaders
) -> str | None:
    """Why an expected image cannot be used, from the manifest (when it has the pair) and the image
    files; None when it can. A failed generation is not used even if an older file is still there."""
    entry = manifest.get((expected.model, expected.sample_id))
    has_file = expected.image_id in images
    if entry is not None and entry.status != "ok":
        stale = " (the image file there is from an earlier run and is not judged)" if has_file else ""
        return expected.no_image(f"{entry.reason}{stale}")
    if not has_file:
        return expected.no_image(
            "the manifest says ok but there is no image file" if entry is not None else "no image file"
        )
    return None


def unused_images(images: ImageLoaders, expected: Iterable[ExpectedImage]) -> list[str]:
    """The image files of no expected (model, sample) pair, in name order (logged as a warning)."""
    unused = sorted(set(images) - {item.image_id for item in expected})
    log_list(
        logger,
        logging.WARNING,
        "image files belong to no benchmark sample (not judged)",
        unused,
        "unused_images",
    )
    return unused


# ---- reporting what is missing


def warn_if_no_image(images: ImageLoaders, manifest: ManifestEntries, folder: str) -> None:
    """One warning when evaluate finds no image at all in ``folder``: the run still completes, and each
    pair of the manifest's models is a failed verdict listed in ``missing_images``, never a score."""
    if images:
        return
    models = sorted({model for model, _ in manifest})
    if models:
        logger.warning(
            "evaluate found no image in %s: none of the %d models of the generation manifest (%s) has one; "
            "each of their samples is listed with its reason in missing_images and left unjudged (coverage "
            "0), never scored",
            folder,
            len(models),
            ", ".join(models),
        )
        return
    logger.warning(
        "evaluate found no image in %s: there is no model to judge (generate draws into the generations "
        "folder; evaluate.images_dir=FOLDER names a folder of <model>/<sample_id> images)",
        folder,
    )


def missing_per_model(missing_ids: Iterable[str], models: Iterable[str]) -> dict[str, int]:
    """Per model (in the order given), how many of its expected images are missing or unusable."""
    missing = Counter(model_of(image_id) for image_id in missing_ids)
    return {model: missing.get(model, 0) for model in models}


def missing_image_table(unavailable: Mapping[str, str]) -> pd.DataFrame:
    """One row per image id without a usable image and the reason, in image id order."""
    rows = [(*image_id.rsplit("/", 1), reason) for image_id, reason in sorted(unavailable.items())]
    return pd.DataFrame(rows, columns=list(MISSING_IMAGE_COLUMNS))
