"""The review store's migrations, oldest first (Alembic reads every module here)."""
