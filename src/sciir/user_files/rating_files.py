"""Rating and metric-score files from outside the pipeline, read into human_corr's two input formats.

- ratings: columns image_id, rater_id, score (one row per rater and image; any numeric scale);
- metric scores: columns image_id, metric, score (one row per image and metric; an empty score means
  the metric has no value for that image), plus any extra columns describing the image (e.g.
  ``model``) that ``group_by`` can name.

``read_ratings_file`` and ``read_metric_scores_file`` read these formats from CSV, TSV or parquet.
The other readers convert published human-rating releases, so their correlation studies can be
re-run through the same statistics as the pipeline:

- TIFA (github.com/Yushi-Hu/tifa, ``human_annotations_with_scores.json``): per image key
  ``{text_id}_{t2i_model}``, two Likert ratings in ``human_scores`` and automatic scores per metric.
  TIFA does not name its raters; ``rater_id`` is the rating's position (``rater1``, ``rater2``).
  Its sample evaluation (question file + result file) reads as a verdict table for ``sciir.evaluation.aggregation``.
- VIEScore / ImagenHub (github.com/TIGER-AI-Lab/VIEScore): human ratings in
  ``<task>_rater{k}.tsv`` (column ``uid`` and one column per generator model, cells ``[SC, PQ]``),
  and the VLM judge's answers in ``<model>/<component>.json`` (per uid a ``score`` list on 0-10,
  read as min(score list) / 10, the repository's rule).

Images of published releases are named ``<model>/<uid>``, as the pipeline names generated images.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, cast

import pandas as pd

from sciir.user_files.table_files import TableFile, TableFileError, is_missing

logger = logging.getLogger(__name__)

RATING_COLUMNS = ("image_id", "rater_id", "score")
METRIC_SCORE_COLUMNS = ("image_id", "metric", "score")
RatingComponent = Literal["SC", "PQ"]
COMPONENT_INDEX: dict[RatingComponent, int] = {"SC": 0, "PQ": 1}
RATER_FILE = re.compile(r"_rater(\d+)\.tsv$")
_SHOWN = 5


def _numeric_scores(table: pd.DataFrame, source: TableFile, allow_empty: bool) -> pd.Series:
    """The score column as floats; TableFileError naming the rows whose score is not a number."""
    scores = pd.to_numeric(table["score"], errors="coerce")
    bad = scores.isna() & (table["score"].notna() | (not allow_empty))
    if bad.any():
        expected = "a number on any scale" + (" or an empty cell" if allow_empty else "")
        raise source.bad_cells(table, bad, "score", expected)
    return scores.astype(float)


def _refuse_duplicates(table: pd.DataFrame, keys: list[str], source: TableFile) -> None:
    """TableFileError naming the repeated key pairs and their rows: never silently merged."""
    repeated = table[table.duplicated(keys, keep=False)]
    if not repeated.empty:
        pairs = sorted(set(map(tuple, repeated[keys].astype(str).to_numpy())))
        rows = ", ".join(source.row(int(index)) for index in repeated.index[: 2 * _SHOWN])
        raise TableFileError(
            f"{source.label}: {keys} repeated: {pairs[:_SHOWN]} ({len(pairs)} pairs; {rows}); "
            f"expected at most one row per {' and '.join(keys)}"
        )


def read_ratings_file(path: str | Path) -> pd.DataFrame:
    """Ratings (image_id, rater_id, score): every score a number, each rater at most once per image.

    The index is the row's place in the file (``TableFile.row``), so later checks can name it.
    """
    source = TableFile(Path(path), "ratings file")
    table = source.read(RATING_COLUMNS, text_columns=("image_id", "rater_id"))
    source.refuse(
        table, "image_id", lambda value: not is_missing(value), "an image id, e.g. 'model/sample_id'"
    )
    source.refuse(table, "rater_id", lambda value: not is_missing(value), "a rater id")
    ratings = pd.DataFrame(
        {
            "image_id": table["image_id"].astype(str),
            "rater_id": table["rater_id"].astype(str),
            "score": _numeric_scores(table, source, allow_empty=False),
        }
    )
    _refuse_duplicates(ratings, ["image_id", "rater_id"], source)
    return ratings


def read_metric_scores_file(path: str | Path) -> pd.DataFrame:
    """Metric scores (image_id, metric, score, extra columns kept): scores numbers or empty, one per image and metric."""
    source = TableFile(Path(path), "metric scores file")
    table = source.read(METRIC_SCORE_COLUMNS, text_columns=("image_id", "metric"))
    source.refuse(
        table, "image_id", lambda value: not is_missing(value), "an image id, e.g. 'model/sample_id'"
    )
    source.refuse(table, "metric", lambda value: not is_missing(value), "a metric name")
    scores = table.assign(
        image_id=table["image_id"].astype(str),
        metric=table["metric"].astype(str),
        score=_numeric_scores(table, source, allow_empty=True),
    )
    _refuse_duplicates(scores, ["image_id", "metric"], source)
    return scores


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON: {exc}") from exc


def _tifa_model(key: str, image: dict[str, Any]) -> str:
    """The generator model of a TIFA image key ``{text_id}_{t2i_model}``."""
    prefix = f"{image.get('text_id')}_"
    if not key.startswith(prefix):
        raise ValueError(f"TIFA image {key!r} does not start with its text_id {image.get('text_id')!r}")
    return key[len(prefix) :]


def tifa_ratings(path: str | Path) -> pd.DataFrame:
    """Ratings (image_id, rater_id, score) from TIFA's ``human_annotations_with_scores.json``."""
    images = _read_json(Path(path))
    rows = [
        {
            "image_id": f"{_tifa_model(key, image)}/{image['text_id']}",
            "rater_id": f"rater{k + 1}",
            "score": score,
        }
        for key, image in images.items()
        for k, score in enumerate(image["human_scores"])
    ]
    return pd.DataFrame(rows, columns=list(RATING_COLUMNS))


def tifa_metric_scores(path: str | Path, metrics: Sequence[str]) -> pd.DataFrame:
    """Metric scores (image_id, metric, score, model) of the named TIFA metrics (e.g. ``tifa_mplug-large``)."""
    images = _read_json(Path(path))
    rows = []
    for key, image in images.items():
        model = _tifa_model(key, image)
        for metric in metrics:
            if metric not in image:
                raise ValueError(f"TIFA image {key!r} has no score {metric!r}")
            rows.append(
                {
                    "image_id": f"{model}/{image['text_id']}",
                    "metric": metric,
                    "score": image[metric],
                    "model": model,
                }
            )
    return pd.DataFrame(rows, columns=[*METRIC_SCORE_COLUMNS, "model"])


def _component(cell: Any, component: RatingComponent, where: str) -> float:
    """One component of an ImagenHub ``[SC, PQ]`` cell; ValueError naming the cell when malformed."""
    try:
        values = json.loads(cell)
        return float(values[COMPONENT_INDEX[component]])
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise ValueError(f"{where}: cell {cell!r} is not a [SC, PQ] list") from exc


def imagenhub_ratings(folder: str | Path, component: RatingComponent = "SC") -> pd.DataFrame:
    """Ratings of one component from the ``*_rater{k}.tsv`` files of an ImagenHub task folder."""
    files = sorted(path for path in Path(folder).glob("*.tsv") if RATER_FILE.search(path.name))
    if not files:
        raise ValueError(f"no *_rater<k>.tsv files in {folder}")
    rows = []
    for path in files:
        rater = f"rater{cast(re.Match[str], RATER_FILE.search(path.name)).group(1)}"  # files match it
        table = pd.read_csv(path, sep="\t", dtype=str)
        for record in table.to_dict("records"):
            uid = record.pop("uid")
            for model, cell in record.items():
                where = f"{path.name} uid {uid} model {model}"
                rows.append(
                    {
                        "image_id": f"{model}/{uid}",
                        "rater_id": rater,
                        "score": _component(cell, component, where),
                    }
                )
    return pd.DataFrame(rows, columns=list(RATING_COLUMNS))


def _judge_score(answer: Any, where: str) -> float:
    """min(score list) / 10 of one VIEScore answer; NaN (logged, naming the answer) when it has no scores."""
    scores = answer.get("score") if isinstance(answer, dict) else None
    if not isinstance(scores, list) or not scores or not all(isinstance(s, int | float) for s in scores):
        logger.warning("%s: no numeric score list (%r); the image has no judge score", where, scores)
        return math.nan
    lowest: float = min(scores)  # the list's items are numbers (checked above)
    return lowest / 10


def viescore_metric_scores(
    folder: str | Path, component: RatingComponent = "SC", metric: str = "viescore"
) -> pd.DataFrame:
    """Metric scores (image_id, metric, score, model) from ``<model>/<component>.json`` answer files.

    The metric is named ``<metric>_<component>`` (e.g. ``viescore_SC``).
    """
    files = sorted(Path(folder).glob(f"*/{component}.json"))
    if not files:
        raise ValueError(f"no <model>/{component}.json answer files in {folder}")
    rows = []
    for path in files:
        model = path.parent.name
        for uid, answer in _read_json(path).items():
            score = _judge_score(answer, f"{path} {uid}")
            rows.append(
                {
                    "image_id": f"{model}/{uid}",
                    "metric": f"{metric}_{component}",
                    "score": score,
                    "model": model,
                }
            )
    return pd.DataFrame(rows, columns=[*METRIC_SCORE_COLUMNS, "model"])


def tifa_verdicts(questions_path: str | Path, result_path: str | Path) -> pd.DataFrame:
    """A verdict table (sample_id, question_id, verdict, answer, vqa_answer) of a TIFA evaluation.

    Questions (``question_id`` is the question's text, unique within a caption) and their expected
    answers come from TIFA's question file (``sample_question_answers.json``), the VQA model's
    multiple-choice answers from its result file (``question_details`` of ``sample_evaluation_result.json``).
    As in TIFA a question is correct ("yes") when the two answers match, else "no"; a question the
    result file does not answer has no verdict (null, unjudged) and is logged.
    """
    questions = _read_json(Path(questions_path))
    details = _read_json(Path(result_path)).get("question_details", {})
    rows = []
    for item in questions:
        answered = details.get(item["id"], {}).get(item["question"])
        vqa = answered.get("multiple_choice_vqa") if isinstance(answered, dict) else None
        if vqa is None:
            logger.warning(
                "TIFA question %r of %s has no VQA answer in %s", item["question"], item["id"], result_path
            )
        rows.append(
            {
                "sample_id": item["id"],
                "question_id": item["question"],
                "verdict": None if vqa is None else ("yes" if vqa == item["answer"] else "no"),
                "answer": item["answer"],
                "vqa_answer": vqa,
            }
        )
    return pd.DataFrame(rows, columns=["sample_id", "question_id", "verdict", "answer", "vqa_answer"])
