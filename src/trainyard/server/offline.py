"""The store wired for commands that run with no server: `trainyard admin bootstrap`."""

from __future__ import annotations

from pathlib import Path

from trainyard.auth.authenticator import Authenticator
from trainyard.services.access import AccessService, CreatedToken
from trainyard.store.access import AccessStore
from trainyard.store.db import open_database, sqlite_url


def bootstrap_admin(data_dir: Path, database_url: str, name: str,
                    expires_in: float = 0.0) -> CreatedToken:
    """The first admin and their token, made in the store under data_dir (or at
    database_url)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db = open_database(database_url or sqlite_url(data_dir.resolve()))
    try:
        store = AccessStore(db)
        service = AccessService(store, Authenticator(store, loopback_only=True))
        return service.bootstrap(name, expires_in=expires_in)
    finally:
        db.close()
