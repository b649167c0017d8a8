"""The folder source: PMC OA layouts (``.nxml`` articles, ``.tar.gz`` packages) read as the sample is, and
hostile packages refused member by member without stopping the others or writing outside the folder."""

from __future__ import annotations

import gzip
import io
import json
import random
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from sciir.pipelines.ingest.nodes import ingest_articles, prepare_source
from sciir.sample import write_embedded_sample
from sciir.sample.build import MANIFEST_NAME
from sciir.sources.packages import PackageLimits, UnsafePackageError, unpack_package

REPO = Path(__file__).resolve().parents[2]
FIELDS = ["figure_uid", "figure_id", "caption", "licence_name", "status"]


@pytest.fixture(scope="module")
def sample_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("folder_source") / "sample"
    write_embedded_sample(folder, 7)
    return folder


def _params(folder: Path) -> dict[str, Any]:
    params = yaml.safe_load((REPO / "conf" / "base" / "parameters_ingest.yml").read_text(encoding="utf-8"))[
        "ingest"
    ]
    params["source"].update(kind="jats_folder", path=str(folder))
    return params


def _ingest(folder: Path) -> tuple[Any, Any]:
    params = _params(folder)
    return ingest_articles(prepare_source(params), params)


def _add_file(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    member = tarfile.TarInfo(name)
    member.size = len(data)
    archive.addfile(member, io.BytesIO(data))


def _pmc_package(path: Path, article: Path, top: str) -> None:
    """A PMC OA package of ``article``: one top folder with the article as ``<top>.nxml`` and its images."""
    with tarfile.open(path, "w:gz") as archive:
        for file in sorted(article.iterdir()):
            name = f"{top}.nxml" if file.suffix == ".xml" else file.name
            _add_file(archive, f"{top}/{name}", file.read_bytes())


def _rows(figures: Any) -> list[dict[str, Any]]:
    return figures[FIELDS].sort_values("figure_uid").to_dict("records")


def _accepted_articles(folder: Path, count: int) -> list[str]:
    """The first ``count`` articles the sample's manifest expects ingest to accept."""
    manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    return [row["article_id"] for row in manifest["articles"] if row["expected"] == "kept"][:count]


@pytest.mark.slow
def test_pmc_packages_and_nxml_articles_are_read_as_the_plain_folder(sample_folder, tmp_path):
    first, second, third = _accepted_articles(sample_folder, 3)
    source = tmp_path / "oa"
    source.mkdir()
    _pmc_package(source / "PMC100001.tar.gz", sample_folder / first, "PMC100001")
    _pmc_package(source / "PMC100003.tgz", sample_folder / third, "PMC100003")
    nxml = source / "PMC100002"
    shutil.copytree(sample_folder / second, nxml)
    (nxml / "article.xml").rename(nxml / "PMC100002.nxml")

    articles, figures = _ingest(source)
    plain = tmp_path / "plain"
    for name in (first, second, third):
        shutil.copytree(sample_folder / name, plain / name)
    plain_articles, plain_figures = _ingest(plain)

    assert sorted(articles["article_id"]) == ["PMC100001", "PMC100002", "PMC100003"]
    assert (articles["status"] == "accepted").all() and (figures["status"] == "kept").sum() >= 8
    assert sorted(articles["doi"]) == sorted(plain_articles["doi"])
    assert _rows(figures) == _rows(plain_figures)
    assert (source / "PMC100001" / "PMC100001.nxml").is_file()  # unpacked beside the package

    unpacked = (source / "PMC100001" / "PMC100001.nxml").stat().st_mtime_ns
    _ingest(source)
    assert (source / "PMC100001" / "PMC100001.nxml").stat().st_mtime_ns == unpacked  # not unpacked twice


def _hostile(path: Path, build: str) -> None:
    with tarfile.open(path, "w:gz") as archive:
        _add_file(archive, "PMC1/PMC1.nxml", b"<article/>")
        if build == "traversal":
            _add_file(archive, "PMC1/../../escaped.txt", b"outside")
        elif build == "absolute":
            _add_file(archive, "/tmp/sciir-absolute-member.txt", b"outside")
        elif build == "symlink":
            link = tarfile.TarInfo("PMC1/fig1.png")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
            archive.addfile(link)
        elif build == "hardlink":
            link = tarfile.TarInfo("PMC1/fig1.png")
            link.type, link.linkname = tarfile.LNKTYPE, "PMC1/PMC1.nxml"
            archive.addfile(link)


@pytest.mark.parametrize(
    ("build", "words"),
    [
        ("traversal", "'PMC1/../../escaped.txt' has a path that leaves the package folder"),
        ("absolute", "'/tmp/sciir-absolute-member.txt' has an absolute path"),
        ("symlink", "'PMC1/fig1.png' is a link or a special file"),
        ("hardlink", "'PMC1/fig1.png' is a link or a special file"),
    ],
)
def test_a_hostile_package_is_refused_naming_the_member_and_writes_nothing(tmp_path, build, words):
    folder = tmp_path / "in"
    folder.mkdir()
    _hostile(folder / "bad.tar.gz", build)
    with pytest.raises(UnsafePackageError, match=words.replace("(", r"\(").replace(".", r"\.")):
        unpack_package(folder / "bad.tar.gz", folder / "bad")
    assert sorted(path.name for path in folder.iterdir()) == ["bad.tar.gz"]
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/sciir-absolute-member.txt").exists()


def test_package_size_and_member_count_are_bounded(tmp_path):
    package, noise = tmp_path / "big.tar.gz", random.Random(0)
    with tarfile.open(package, "w:gz") as archive:
        for index in range(5):
            _add_file(archive, f"PMC1/file{index}.png", noise.randbytes(1000))  # so a cut lands in the data
    with pytest.raises(UnsafePackageError, match="more than 4 members"):
        unpack_package(package, tmp_path / "a", PackageLimits(max_members=4))
    with pytest.raises(UnsafePackageError, match="unpacks to more than 2500 bytes"):
        unpack_package(package, tmp_path / "b", PackageLimits(max_bytes=2500))
    with pytest.raises(UnsafePackageError, match="cannot unpack"):
        (tmp_path / "torn.tar.gz").write_bytes(package.read_bytes()[:3000])
        unpack_package(tmp_path / "torn.tar.gz", tmp_path / "c")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["big.tar.gz", "torn.tar.gz"]


def _bomb(path: Path, member: str, size: int) -> None:
    """A package whose one image ``member`` unpacks to ``size`` bytes of zeros from a few MB packed, as
    gzip members of 1 MiB each (gzip reads concatenated members as one stream), without compressing it."""
    xml = tarfile.TarInfo("PMC2/PMC2.nxml")
    xml.size = 10
    header = xml.tobuf() + b"<article/>".ljust(tarfile.BLOCKSIZE, b"\0")
    image = tarfile.TarInfo(member)
    image.size = size
    chunk = gzip.compress(bytes(1024**2))
    with path.open("wb") as out:
        out.write(gzip.compress(header + image.tobuf()))
        for _ in range(size // 1024**2):
            out.write(chunk)
        out.write(gzip.compress(bytes(2 * tarfile.RECORDSIZE)))  # the end-of-archive blocks


def test_a_package_unpacking_to_gigabytes_is_refused_naming_the_member_before_writing(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    _bomb(folder / "PMC2.tar.gz", "PMC2/fig1.png", 2 * 1024**3)
    assert (folder / "PMC2.tar.gz").stat().st_size < 3 * 1024**2  # 2 GiB from about 2 MB
    bound = "over the 268435456-byte bound on one file (ingest.limits.max_image_bytes)"
    with pytest.raises(
        UnsafePackageError, match=re.escape(f"member 'PMC2/fig1.png' is 2147483648 bytes, {bound}")
    ):
        unpack_package(folder / "PMC2.tar.gz", folder / "PMC2")
    assert sorted(path.name for path in folder.iterdir()) == ["PMC2.tar.gz"]


def test_an_article_xml_member_is_bounded_as_ingest_reads_it(tmp_path):
    package = tmp_path / "PMC3.tar.gz"
    with tarfile.open(package, "w:gz") as archive:
        _add_file(archive, "PMC3/PMC3.nxml", b"<article>" + bytes(2000) + b"</article>")
        _add_file(archive, "PMC3/fig1.png", bytes(3000))
    with pytest.raises(
        UnsafePackageError, match=r"'PMC3/PMC3\.nxml' is 2019 bytes, .*ingest\.limits\.max_xml_bytes"
    ):
        unpack_package(package, tmp_path / "a", PackageLimits(max_xml_bytes=2000))
    unpack_package(package, tmp_path / "b", PackageLimits(max_xml_bytes=2019, max_file_bytes=3000))
    assert (tmp_path / "b" / "fig1.png").stat().st_size == 3000


def test_ingest_skips_a_package_beyond_its_limits_and_reads_the_others(sample_folder, tmp_path):
    source = tmp_path / "oa"
    source.mkdir()
    _pmc_package(source / "PMC100001.tar.gz", sample_folder / "sample-001", "PMC100001")
    _bomb(source / "PMC2.tar.gz", "PMC2/fig1.png", 300 * 1024**2)
    params = _params(source)
    params["limits"]["max_package_bytes"] = 200 * 1024**2  # the bound on the whole package is a parameter
    params["limits"]["max_image_bytes"] = 400 * 1024**2
    articles, _ = ingest_articles(prepare_source(params), params)
    assert list(articles["article_id"]) == ["PMC100001"]
    assert sorted(path.name for path in source.iterdir()) == ["PMC100001", "PMC100001.tar.gz", "PMC2.tar.gz"]


def test_bad_packages_are_skipped_and_the_good_ones_still_read(sample_folder, tmp_path):
    source = tmp_path / "oa"
    source.mkdir()
    _pmc_package(source / "PMC100001.tar.gz", sample_folder / "sample-001", "PMC100001")
    _hostile(source / "PMC666.tar.gz", "traversal")
    (source / ".unpacking-left-by-a-crash").mkdir()  # a killed unpacking's leftovers are removed
    articles, _ = _ingest(source)
    assert list(articles["article_id"]) == ["PMC100001"]
    assert sorted(path.name for path in source.iterdir()) == [
        "PMC100001",
        "PMC100001.tar.gz",
        "PMC666.tar.gz",
    ]
