"""Unpack article packages (PMC OA ``.tar.gz``: one folder with the ``.nxml`` and its images) safely.

A package comes from outside, so nothing in it is trusted: every member must be a plain file or folder
whose path stays inside the package's folder (no absolute paths, no ``..``, no links or devices), and
the member count and unpacked size are bounded, all checked before anything is written. A package is
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

logger = logging.getLogger(__name__)

PACKAGE_SUFFIXES = (".tar.gz", ".tgz")
MAX_PACKAGE_MEMBERS = 10_000
MAX_PACKAGE_BYTES = 4 * 1024**3
_STAGING_PREFIX = ".unpacking-"


class UnsafePackageError(ValueError):
    """A package that is refused; the message names the package and the member at fault."""


@dataclass(frozen=True)
class PackageLimits:
    """How much one package may hold."""

    max_members: int = MAX_PACKAGE_MEMBERS
    max_bytes: int = MAX_PACKAGE_BYTES


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
    """Every member, once each has been found safe and the totals within bounds."""
    members, total = [], 0
    for member in archive:
        if problem := _member_problem(member):
            raise UnsafePackageError(f"package {package}: member {member.name!r} {problem}")
        members.append(member)
        total += member.size
        if len(members) > limits.max_members:
            raise UnsafePackageError(f"package {package}: more than {limits.max_members} members")
        if total > limits.max_bytes:
            raise UnsafePackageError(f"package {package}: unpacks to more than {limits.max_bytes} bytes")
    return members


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
                extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
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
