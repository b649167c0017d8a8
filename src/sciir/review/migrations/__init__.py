"""Alembic's migrations of the review store, applied by ``sciir.review.store.open_store`` at start-up.

A change to ``sciir.review.models`` is one more module in ``versions/`` (``tests/review/test_store.py``
checks that the migrated schema is the models' schema).
"""
