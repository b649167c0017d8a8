"""``python -m sciir.benchmark_import aibench``: AIBench's published file refused precisely when it cannot
be read, its questions left out and listed when one cannot be used, and the benchmark file's
multiple-choice questions checked on reading. The whole route (import, generate, evaluate) is
tests/pipelines/test_aibench_file_pipelines.py."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from sciir.aibench.choices import INSUFFICIENT_OPTION, insufficient_letter, level_number
from sciir.benchmark_import import main
from sciir.user_files.benchmark_file import BenchmarkFileError, read_benchmark_file
from sciir.user_files.importers.latex_text import latex_text

QUESTION = {
    "id": "q1",
    "level": "Level 1: Component Existence",
    "question": "Which component appears?",
    "options": {"A": "Encoder", "B": INSUFFICIENT_OPTION},
    "correct_option": "A",
}


def _paper(**fields: Any) -> dict[str, Any]:
    return {
        "id": "CVPR_2025/2506.07857v1",
        "method_text": "An ``Encoder''.",
        "checklist": [QUESTION],
    } | fields


def _write(path: Path, papers: list[Any]) -> Path:
    path.write_text("".join(json.dumps(paper) + "\n" for paper in papers), encoding="utf-8")
    return path


def _import(tmp_path: Path, papers: list[Any], capsys) -> tuple[int, str, str]:
    source = _write(tmp_path / "aibench.jsonl", papers)
    code = main(["aibench", str(source), "-o", str(tmp_path / "out.jsonl")])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("paper", "expected"),
    [
        (_paper(method_text=None), "line 1 (paper 'CVPR_2025/2506.07857v1'): field 'method_text' is empty"),
        ({"id": "x", "checklist": []}, "line 1: no field 'method_text'; line 1 has fields: id, checklist"),
        (_paper(checklist="q1"), "field 'checklist': expected a list of questions, found str"),
        ({"method_text": "x", "checklist": []}, "line 1: no field 'id'"),
        (_paper(checklist=[QUESTION, QUESTION]), "checklist question 2: question id 'q1' appears twice"),
        (_paper(checklist=[{**QUESTION, "question": ""}]), "checklist question 1: field 'question' is empty"),
        (_paper(id="CVPR 2025/x"), "'CVPR 2025__x' cannot name an image file"),
    ],
)
def test_a_paper_that_cannot_be_read_stops_the_command_naming_it(tmp_path, capsys, paper, expected) -> None:
    code, _, error = _import(tmp_path, [paper], capsys)
    assert code == 1 and f"AIBench file {tmp_path / 'aibench.jsonl'}, " in error and expected in error


def test_questions_that_cannot_be_used_are_left_out_and_listed(tmp_path, capsys) -> None:
    unusable = [
        {**QUESTION, "id": "q2", "correct_option": "C"},
        {**QUESTION, "id": "q3", "level": "Level 7"},
        {**QUESTION, "id": "q4", "options": ["Encoder", "Decoder"]},
    ]
    empty = _paper(id="ICLR_2025/2501.1", checklist=[{**QUESTION, "correct_option": "Z"}])
    code, said, _ = _import(tmp_path, [_paper(checklist=[QUESTION, *unusable]), empty], capsys)
    assert code == 0 and "samples: 1" in said and "skipped: 5" in said
    assert "(id 'q2'): the correct option 'C' is none of its options ['A', 'B']" in said
    assert "(id 'q3'): level 'Level 7' is none of AIBench's levels 1-4" in said
    assert "(id 'q4'): options must be an object of at least two letters" in said
    assert "(paper 'ICLR_2025/2501.1'): no usable checklist question: nothing to ask" in said


def test_the_benchmark_files_multiple_choice_questions_are_checked(tmp_path) -> None:
    def sample(**question: Any) -> dict[str, Any]:
        choice = {"id": "q1", "text": "Which?", "level": 2, "options": {"A": "x", "B": "y"}, "answer": "A"}
        return {"sample_id": "s", "prompt": "p", "choice_questions": [choice | question]}

    for bad, expected in [
        (sample(answer="C"), "choice question 1: the correct option 'C' is none of its options"),
        (sample(level=0), "choice question 1: level 0 is none of AIBench's levels"),
        (sample(options={"A": "x", "": "y"}), "options [''] need a label"),
        ({**sample(), "questions": [{"id": "q1", "text": "t"}]}, "question ids ['q1'] appear more than once"),
        ({"sample_id": "s", "prompt": "p"}, "expected a non-empty list of questions"),
    ]:
        path = _write(tmp_path / "bench.jsonl", [bad])
        with pytest.raises(BenchmarkFileError, match="benchmark file .*bench.jsonl, line 1") as error:
            read_benchmark_file(path)
        assert expected in str(error.value)
    tables = read_benchmark_file(_write(tmp_path / "bench.jsonl", [sample()]))
    row = tables.choice_questions.iloc[0]
    assert (row["level"], row["gold_answer"], row["insufficient_option"]) == (2, "A", None)


def test_levels_and_the_insufficient_option_are_read_as_aibench_writes_them() -> None:
    assert [level_number(v) for v in ("Level 3: Phase Architecture", "level 4", 2, "L1", "Level 5", True)] == [
        3, 4, 2, 1, None, None
    ]  # fmt: skip
    assert insufficient_letter({"A": "x", "D": INSUFFICIENT_OPTION.upper()}) == "D"
    assert insufficient_letter({"A": "The image does not contain sufficient information."}) == "A"
    assert insufficient_letter({"A": "The image is sufficient."}) is None


def test_latex_becomes_what_a_reader_of_the_paper_sees() -> None:
    latex = (
        "\\section{Overview}\\label{sec:o}\n% hidden\nThe ``Encoder''~\\cite{a,b} (Fig.~\\ref{f}) uses "
        "\\textbf{\\emph{$\\alpha$-blending}} at 50\\%.\n\\begin{figure}[t]\\includegraphics{x}\\end{figure}\n"
        "\\begin{itemize}\n\\item first\n\\end{itemize}"
    )
    assert latex_text(latex) == (
        "Overview.\n\nThe \u201cEncoder\u201d (Fig.) uses $\\alpha$-blending at 50%.\n\n- first"
    )


def _documented_example(name: str) -> str:
    script = Path(__file__).resolve().parents[1] / "e2e" / "doc_fixtures.py"
    spec = importlib.util.spec_from_file_location("doc_fixtures", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.documented_jsonl(script.parents[2], name)


def test_the_documented_example_converts_as_the_page_says(tmp_path, capsys) -> None:
    (tmp_path / "aibench_papers.jsonl").write_text(
        _documented_example("aibench_papers.jsonl"), encoding="utf-8"
    )
    code = main(["aibench", str(tmp_path / "aibench_papers.jsonl"), "-o", str(tmp_path / "aibench.jsonl")])
    said = capsys.readouterr().out
    assert code == 0 and "skipped: 0" in said
    tables = read_benchmark_file(tmp_path / "aibench.jsonl")
    assert set(tables.choice_questions["level"]) == {1, 2, 3, 4}
    assert tables.choice_questions["insufficient_option"].notna().all()


def test_a_file_that_names_a_field_otherwise_is_read_with_a_field_map(tmp_path, capsys) -> None:
    paper = _paper()
    renamed = {"paper": paper["id"], "method": paper["method_text"], "checklist": paper["checklist"]}
    source = _write(tmp_path / "renamed.jsonl", [renamed])
    output = str(tmp_path / "out.jsonl")
    assert main(["aibench", str(source), "-o", output]) == 1
    assert "no field 'id' and no field 'method_text'" in capsys.readouterr().err
    fields = ["--field", "id=paper", "--field", "method_text=method"]
    assert main(["aibench", str(source), "-o", output, *fields]) == 0
    assert list(read_benchmark_file(output).benchmark["sample_id"]) == ["CVPR_2025__2506.07857v1"]
