"""Unpack article packages (PMC OA ``.tar.gz``: one folder with the ``.nxml`` and its images) safely.

A package comes from outside, so nothing in it is trusted: every member must be a plain file or folder
whose path stays inside the package's folder (no absolute paths, no ``..``, no links or devices); the
member count, the size of each member (the article's XML as large as ingest reads one, any other file as
large as the largest image it reads) and the unpacked total are bounded, all checked from the members'
headers before anything is written, so a small package that unpacks to gigabytes writes nothing. A package is
unpacked into a hidden folder first and renamed into place when complete, so a crash never leaves
half an article where ingest would read it.
"""

from __future__ import annotations

import logging
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sciir.figures.jats_reader import MAX_XML_BYTES
from sciir.sources.params import MAX_IMAGE_BYTES, MAX_PACKAGE_BYTES, FileLimits

logger = logging.getLogger(__name__)

PACKAGE_SUFFIXES = (".tar.gz", ".tgz")
XML_SUFFIXES = (".xml", ".nxml")
MAX_PACKAGE_MEMBERS = 10_000
_STAGING_PREFIX = ".unpacking-"


class UnsafePackageError(ValueError):
    """A package that is refused; the message names the package and the member at fault."""


@dataclass(frozen=True)
class PackageLimits:
    """How much one package may hold: members, bytes unpacked in all, and bytes of one member (ingest's
    ``ingest.limits``: the XML as ``max_xml_bytes``, every other file as ``max_image_bytes``)."""

    max_members: int = MAX_PACKAGE_MEMBERS
    max_bytes: int = MAX_PACKAGE_BYTES
    max_xml_bytes: int = MAX_XML_BYTES
    max_file_bytes: int = MAX_IMAGE_BYTES

    @classmethod
    def of(cls, limits: FileLimits) -> PackageLimits:
        """The bounds that ingest's file limits set on a package."""
        return cls(
            max_bytes=limits.max_package_bytes,
            max_xml_bytes=limits.max_xml_bytes,
            max_file_bytes=limits.max_image_bytes,
        )

    def member_bound(self, name: str) -> tuple[int, str]:
        """The largest size a member of this name may have, and the parameter that sets it."""
        if name.lower().endswith(XML_SUFFIXES):
            return self.max_xml_bytes, "ingest.limits.max_xml_bytes"
        return self.max_file_bytes, "ingest.limits.max_image_bytes"


def package_name(path: Path) -> str | None:
    """The article folder name of a package file (``PMC13900.tar.gz`` -> ``PMC13900``); None if not one."""
    lowered = path.name.lower()
    for suffix in PACKAGE_SUFFIXES:
        if lowered.endswith(suffix) and len(path.name) > len(suffix):
            return path.name[: -len(suffix)]
    return None


def _member_problem(member: tarfile.TarInfo) -> str | None:
    """Why a member cannot be unpacked: not a plain file or folder, or a path leaving the package."""
    if not (member.isfile() or member.isdir()):
        return "is a link or a special file; a package may hold only files and folders"
    path = PurePosixPath(member.name)
    if path.is_absolute() or member.name.startswith(("/", "\\")) or (path.parts and ":" in path.parts[0]):
        return "has an absolute path"
    if ".." in path.parts or "\\" in member.name:
        return "has a path that leaves the package folder"
    return None


def _checked_members(archive: tarfile.TarFile, package: Path, limits: PackageLimits) -> list[tarfile.TarInfo]:
    """Every member, once each has been found safe and within its bound, and the totals within theirs."""
    members, total = [], 0
    for member in archive:
        if problem := _member_problem(member) or _size_problem(member, limits):
            raise UnsafePackageError(f"package {package}: member {member.name!r} {problem}")
        members.append(member)
        total += member.size
        if len(members) > limits.max_members:
            raise UnsafePackageError(f"package {package}: more than {limits.max_members} members")
        if total > limits.max_bytes:
            raise UnsafePackageError(
                f"package {package}: unpacks to more than {limits.max_bytes} bytes (ingest.limits.max_package_bytes)"
            )
    return members


def _size_problem(member: tarfile.TarInfo, limits: PackageLimits) -> str | None:
    """Why a member is too large to unpack: larger than any file ingest would read from it."""
    bound, parameter = limits.member_bound(member.name)
    if member.size > bound:
        return f"is {member.size} bytes, over the {bound}-byte bound on one file ({parameter})"
    return None


def _article_root(staging: Path) -> Path:
    """The unpacked article: the package's single top folder (PMC's layout) when it has one, else all."""
    entries = list(staging.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return staging


def unpack_package(package: Path, target: Path, limits: PackageLimits | None = None) -> None:
    """Unpack ``package`` into the new folder ``target`` (the package's own top folder becomes ``target``).

    Raises :class:`UnsafePackageError` naming the package and what is wrong; nothing is left behind then.
    """
    limits = limits or PackageLimits()
    staging = Path(tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=target.parent))
    try:
        try:
            with tarfile.open(package, "r:*") as archive:
                members = _checked_members(archive, package, limits)
                # Python's own "data" filter (3.10.12+) checks every path a second time.
                extra: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                archive.extractall(staging, members=members, **extra)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise UnsafePackageError(f"package {package}: cannot unpack: {error}") from error
        _article_root(staging).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def unpack_packages(folder: Path, limits: PackageLimits | None = None) -> list[str]:
    """Unpack each package lying in ``folder`` beside it (``PMC1.tar.gz`` -> ``PMC1/``) unless that folder
    exists; a refused package is logged and skipped, so one bad file never stops the rest. Leftovers of
    an unpacking that was killed are removed first. Returns the reasons of the refused packages."""
    for leftover in folder.glob(f"{_STAGING_PREFIX}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    refused = []
    for package in sorted(path for path in folder.iterdir() if path.is_file()):
        name = package_name(package)
        if name is None or (folder / name).exists():
            continue
        try:
            unpack_package(package, folder / name, limits)
        except UnsafePackageError as error:
            logger.warning("%s; skipped", error)
            refused.append(str(error))
        else:
            logger.info("Unpacked %s into %s", package.name, folder / name)
    return refused
