"""A validation split held out of the train split by source article, with scikit-learn's GroupShuffleSplit.

Panels of one article share its style, terms and often its text, so a validation panel whose article also
has panels in training would measure memory, not generalisation. Samples are grouped by their source
article (``sciir.selection.leakage.source_article``: the DOI, else the URL; a sample whose article is unknown is a
group of its own), and whole articles go to validation. The finished split is checked again from the
groups, never trusted because of how it was made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


class ArticleOverlapError(ValueError):
    """An article has samples on both sides of the train/validation split."""


@dataclass(frozen=True)
class ArticleSplit:
    """Sample ids of each side and a sentence for the log."""

    train: list[str]
    validation: list[str]
    note: str


def article_groups(sample_ids: Sequence[str], articles: Mapping[str, str]) -> list[str]:
    """Each sample's group: its source article, or the sample itself when the article is unknown."""
    return [articles.get(sample, f"sample:{sample}") for sample in sample_ids]


def articles_on_both_sides(
    train: Iterable[str], validation: Iterable[str], articles: Mapping[str, str]
) -> set[str]:
    """The groups (articles) that have samples in both ``train`` and ``validation``."""
    train_groups = set(article_groups(list(train), articles))
    return train_groups & set(article_groups(list(validation), articles))


def split_by_article(
    sample_ids: Iterable[str], articles: Mapping[str, str], fraction: float, seed: int
) -> ArticleSplit:
    """Whole articles, about ``fraction`` of them, to validation (seeded; independent of the order of
    ``sample_ids``). No split when ``fraction`` is 0 or fewer than two articles leave nothing on one side."""
    from sklearn.model_selection import GroupShuffleSplit

    samples = sorted(set(sample_ids))
    groups = article_groups(samples, articles)
    n_articles = len(set(groups))
    if fraction <= 0:
        return ArticleSplit(samples, [], "no validation split (validation_fraction is 0)")
    splitter = GroupShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)
    try:
        train_rows, validation_rows = next(splitter.split(samples, groups=groups))
    except ValueError as error:  # too few articles for both sides at this fraction
        return ArticleSplit(samples, [], f"no validation split: {n_articles} articles, {error}")
    train = [samples[row] for row in train_rows]
    validation = [samples[row] for row in validation_rows]
    shared = articles_on_both_sides(train, validation, articles)
    if shared:
        raise ArticleOverlapError(f"articles on both sides of the validation split: {sorted(shared)[:10]}")
    held_out = len(set(article_groups(validation, articles)))
    note = (
        f"validation split: {len(validation)} samples of {held_out} of {n_articles} articles; "
        f"{len(train)} samples stay in train"
    )
    return ArticleSplit(train, validation, note)
