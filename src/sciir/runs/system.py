"""Checks for the system programs SciIR calls (Graphviz, Tesseract), with install hints."""

from __future__ import annotations

import shutil

# program -> (Debian package, what needs it)
SYSTEM_PROGRAMS: dict[str, tuple[str, str]] = {
    "dot": ("graphviz", "the embedded sample's diagrams and the programmatic generator"),
    "tesseract": ("tesseract-ocr", "the ocr and offline backends (reading text in images)"),
}


class MissingSystemProgramError(RuntimeError):
    """A required system program is not on PATH."""


def require_program(program: str) -> str:
    """Path of ``program``, or an error naming the package to install and what needs it."""
    path = shutil.which(program)
    if path:
        return path
    package, needed_by = SYSTEM_PROGRAMS.get(program, (program, "SciIR"))
    raise MissingSystemProgramError(
        f"'{program}' was not found on PATH; it is needed by {needed_by}. "
        f"Install it: `sudo apt-get install {package}` (Debian/Ubuntu), `brew install {package.split('-')[0]}` "
        f"(macOS), or see the README's 'System packages' section."
    )


def missing_programs(programs: list[str] | None = None) -> list[str]:
    """Programs among ``programs`` (default: all known) that are not installed."""
    return [p for p in (programs or list(SYSTEM_PROGRAMS)) if shutil.which(p) is None]
