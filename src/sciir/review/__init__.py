"""The review app: one web app for every step that waits for a person (docs/review.md).

Its parts, in import order: ``settings`` (one pydantic class), ``models`` (raters, queues, items, answers and
the raters' web sessions as SQLAlchemy tables), ``store`` (the engine, SQLite's pragmas, one transaction per
answer) and ``migrations`` (Alembic, applied at start-up), ``raters`` (names, tokens, sessions), ``queue_store``
(what any queue does: the next item for a rater, an answer, undo, progress), one module per queue
(``ratings_queue``: blind Likert ratings of generated images), the web layer (``security``, ``pages``,
``queue_pages`` and one ``*_pages`` module per queue, ``app``) and the command (``command``: ``kedro review``,
``python -m sciir.review``).

The app knows queues and items, never a pipeline's internals: the ratings queue is filled from image files and
a benchmark table, and a stage reads the answers back through ``sciir.catalog.review_ratings_dataset``.
"""
