"""Tesseract processes: views of an image read by one ``tesseract`` process, each view a page of its own.

Starting Tesseract (loading its model) costs about 65 ms of CPU, a third of a typical pass over a figure,
so the views a reading takes with the same settings go to one process as a list file. Each page is read
as the same image alone would be (the LSTM engine carries nothing from page to page: the words, boxes and
confidences of the embedded sample's and the real figures' readings are the same to the digit), and the
words come back per page, as ``pytesseract.image_to_data`` gives them for one image.

Every process is single-threaded unless the user set ``OMP_THREAD_LIMIT``: readings run two at a time,
and OpenMP's own threads cost more CPU than they save.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pytesseract
from PIL import Image

Words = dict[str, list[Any]]  # image_to_data's DICT: one list per TSV column, one item per row


class _SingleThreadedEnvironment(Mapping[str, str]):
    """The process environment for Tesseract runs, with OpenMP limited to one thread unless the user set
    a limit."""

    def _merged(self) -> dict[str, str]:
        return {"OMP_THREAD_LIMIT": "1", **os.environ}

    def __getitem__(self, key: str) -> str:
        return self._merged()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())


# pytesseract starts every Tesseract process with this module-level environment.
pytesseract.pytesseract.environ = _SingleThreadedEnvironment()


def read_views(views: Iterable[Image.Image], lang: str, config: str) -> list[Words]:
    """The words of each view, in order, all read by one Tesseract process with ``config`` (``--psm``
    and ``-c`` settings). Each view is written to a file as it comes (uncompressed: fastest to hand
    over), so the caller may make them one at a time. Raises pytesseract.TesseractError."""
    with tempfile.TemporaryDirectory(prefix="sciir-tesseract-") as folder:
        paths = [_saved(view, os.path.join(folder, f"view{index}")) for index, view in enumerate(views)]
        if len(paths) == 1:
            source = paths[0]
        else:
            source = os.path.join(folder, "views.txt")
            with open(source, "w", encoding="utf-8") as listing:
                listing.write("".join(f"{path}\n" for path in paths))
        output = os.path.join(folder, "words")
        pytesseract.pytesseract.run_tesseract(
            source, output, extension="tsv", lang=lang, config=f"-c tessedit_create_tsv=1 {config.strip()}"
        )
        with open(f"{output}.tsv", encoding="utf-8") as words:
            table = pytesseract.pytesseract.file_to_dict(words.read(), "\t", -1)
    return _pages(table, len(paths))


def _saved(view: Image.Image, stem: str) -> str:
    view.format = "BMP"
    image, extension = pytesseract.pytesseract.prepare(view)
    path = f"{stem}.{extension.lower()}"
    image.save(path, format=extension)
    return path


def _pages(table: Words, count: int) -> list[Words]:
    """The rows of each page (``page_num`` 1 .. count), every column kept."""
    pages: list[Words] = [{column: [] for column in table} for _ in range(count)]
    for row, page in enumerate(table.get("page_num", [])):
        for column, values in table.items():
            pages[int(page) - 1][column].append(values[row])
    return pages
