"""``python -m sciir.review``: the review command outside a Kedro project, from the settings' defaults
(``kedro review`` reads conf/base/review.yml)."""

from __future__ import annotations

from sciir.review.command import review_command
from sciir.review.settings import ReviewSettings

if __name__ == "__main__":
    review_command(ReviewSettings)()
