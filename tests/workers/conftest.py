"""Real Redis and PostgreSQL for the worker tests, each test on its own: a new PostgreSQL
database (dropped after) and a Redis database number nobody else uses (flushed after), with
a queue of its own. As in tests/store/conftest.py: a server that is not there skips the test,
except in CI (CI=true), where it fails, saying which server and where."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis

from flowcall.workers.local_workers import REDIS, scratch_database, scratch_redis

PLUGINS = Path(__file__).resolve().parent / "plugins"


def _missing(what: str, exc: Exception) -> None:
    message = f"{what} is not reachable: {exc}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI=true, so the worker tests must run", pytrace=False)
    pytest.skip(message)


@contextmanager
def _or_missing(scratch: Any, what: str, errors: tuple[type[Exception], ...]) -> Iterator[str]:
    try:
        url = scratch.__enter__()
    except errors as exc:
        _missing(what, exc)
    try:
        yield url
    finally:
        scratch.__exit__(None, None, None)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test, dropped at the end."""
    with _or_missing(
        scratch_database(prefix="flowcall_workers"),
        "PostgreSQL at 127.0.0.1:5432 (user postgres, database test)",
        (psycopg.OperationalError,),
    ) as url:
        yield url


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A Redis database number nobody else uses, flushed at the end."""
    with _or_missing(scratch_redis(), f"Redis at {REDIS}", (redis.RedisError,)) as url:
        yield url


@pytest.fixture
def worker_env(
    pg_url: str, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The settings of this test's workers, also set in this process (which submits)."""
    settings = {
        "FLOWCALL_DATABASE_URL": pg_url,
        "FLOWCALL_BROKER_URL": redis_url,
        "FLOWCALL_QUEUE": f"flowcall-test-{uuid.uuid4().hex[:8]}",
        "FLOWCALL_PLUGIN_DIRS": str(PLUGINS),
        "FLOWCALL_HOME": str(tmp_path / "home"),
        "WORKER_TEST_LOG": str(tmp_path / "executions.log"),
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    return {**os.environ, **settings}
