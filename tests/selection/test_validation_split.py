"""The validation split by source article: no article on both sides, seeded, order-independent."""

from __future__ import annotations

import math

import pytest

from sciir.selection.validation_split import ArticleOverlapError, split_by_article

# 12 articles of 1 to 4 panels each, and two panels whose article is unknown.
ARTICLES = {f"art{a}-p{p}": f"10.1/art{a}" for a in range(12) for p in range(1 + a % 4)}
SAMPLES = [*ARTICLES, "orphan-1", "orphan-2"]


def _sides_by_article(train: list[str], validation: list[str]) -> dict[str, set[str]]:
    sides: dict[str, set[str]] = {}
    for side, samples in (("train", train), ("validation", validation)):
        for sample in samples:
            sides.setdefault(ARTICLES.get(sample, sample), set()).add(side)
    return sides


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5])
def test_no_article_has_panels_on_both_sides(seed: int, fraction: float) -> None:
    split = split_by_article(SAMPLES, ARTICLES, fraction, seed)
    assert split.validation and split.train
    assert sorted(split.train + split.validation) == sorted(SAMPLES)
    assert all(len(sides) == 1 for sides in _sides_by_article(split.train, split.validation).values())
    held_out = {ARTICLES.get(sample, sample) for sample in split.validation}
    assert len(held_out) == math.ceil(fraction * 14)  # GroupShuffleSplit's share of the 14 groups


def test_zero_fraction_keeps_everything_in_train() -> None:
    split = split_by_article(SAMPLES, ARTICLES, 0.0, seed=0)
    assert split.train == sorted(SAMPLES) and split.validation == []
    assert split.note == "no validation split (validation_fraction is 0)"


def test_the_split_is_seeded_and_independent_of_order() -> None:
    first = split_by_article(SAMPLES, ARTICLES, 0.25, seed=1)
    assert split_by_article(SAMPLES[::-1], ARTICLES, 0.25, seed=1).validation == first.validation
    others = {tuple(split_by_article(SAMPLES, ARTICLES, 0.25, seed=s).validation) for s in range(2, 6)}
    assert others - {tuple(first.validation)}


def test_one_article_cannot_be_split() -> None:
    one = {"a-p0": "10.1/a", "a-p1": "10.1/a"}
    split = split_by_article(one, one, 0.5, seed=0)
    assert split.train == ["a-p0", "a-p1"] and split.validation == []
    assert split.note.startswith("no validation split: 1 articles")


def test_a_splitter_that_leaks_an_article_is_caught(monkeypatch) -> None:
    class HalfByRow:  # splits rows, not groups: two panels of one article land on both sides
        def __init__(self, **kwargs) -> None:
            pass

        def split(self, samples, groups):
            rows = list(range(len(samples)))
            yield rows[::2], rows[1::2]

    # split_by_article imports the splitter when it runs (scikit-learn is not imported at start-up)
    monkeypatch.setattr("sklearn.model_selection.GroupShuffleSplit", HalfByRow)
    with pytest.raises(ArticleOverlapError, match="10.1/art"):
        split_by_article(SAMPLES, ARTICLES, 0.5, seed=0)
