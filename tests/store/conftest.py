"""Real databases for the store tests: a SQLite file per test, and a PostgreSQL database per
session (its schema wiped after every test). PostgreSQL missing skips, except in CI, where it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

from flowcall.store import Store

PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=3"


def _pg_admin() -> psycopg.Connection:
    try:
        return psycopg.connect(PG_ADMIN, autocommit=True)
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL is not reachable at 127.0.0.1:5432 (user postgres, database test): {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI=true, so the PostgreSQL tests must run", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh, uniquely named database for this test session, dropped at the end."""
    name = f"flowcall_test_{uuid.uuid4().hex[:12]}"
    with _pg_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    with _pg_admin() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _wipe_pg(url: str) -> None:
    dbname = url.rsplit("/", 1)[1]
    with psycopg.connect(f"host=127.0.0.1 port=5432 user=postgres dbname={dbname}", autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path) -> Iterator[str]:
    """An empty database of each backend: every test starts before any migration."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'nested' / 'flowcall.db'}"
        return
    url = request.getfixturevalue("pg_database")
    yield url
    _wipe_pg(url)


@pytest.fixture
def open_stores(db_url: str) -> Iterator[Callable[[], Store]]:
    """Opens Stores on the test database and closes them all afterwards (before the wipe)."""
    opened: list[Store] = []

    def _open() -> Store:
        store = Store.open(db_url)
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.close()


@pytest.fixture
def store(open_stores: Callable[[], Store]) -> Store:
    return open_stores()
