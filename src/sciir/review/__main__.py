"""``python -m sciir.review``: the review command outside a Kedro project, from the settings' defaults
(``kedro review`` reads conf/base/review.yml)."""

from __future__ import annotations

from sciir.review.command import review_command
from sciir.review.settings import ReviewSettings
from sciir.runs.process_exit import skip_collections_at_exit

if __name__ == "__main__":
    skip_collections_at_exit()
    review_command(ReviewSettings)()
