import pytest

from sciir.runs.system import MissingSystemProgramError, missing_programs, require_program


def test_missing_program_error_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingSystemProgramError, match="apt-get install tesseract-ocr"):
        require_program("tesseract")
    assert missing_programs() == ["dot", "tesseract"]


def test_present_program_is_found():
    assert require_program("sh").endswith("sh")
