"""Durable state: SQLAlchemy tables, Alembic migrations, transactional operations."""

from trainyard.store.db import Database, open_database

__all__ = ["Database", "open_database"]
