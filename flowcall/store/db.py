"""Engines for the two supported databases: SQLite (the laptop default) and PostgreSQL.

The URL comes from the user (FLOWCALL_DATABASE_URL), so every problem with it becomes a
ConfigError that says what to write instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from flowcall.errors import ConfigError

_EXAMPLES = (
    "sqlite:////absolute/path/flowcall.db or postgresql+psycopg://user:password@host:5432/dbname"
)
_POSTGRES_ALIASES = {"postgres", "postgresql", "postgresql+psycopg"}


def _json_dumps(value: Any) -> str:
    # Chinese text stays readable in the database instead of becoming \\uXXXX escapes.
    return json.dumps(value, ensure_ascii=False)


def normalize_url(url: str) -> URL:
    """Parse and check a database URL; postgres:// and postgresql:// are rewritten to psycopg."""
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(
            f"database URL {url!r} cannot be parsed; set FLOWCALL_DATABASE_URL to e.g. {_EXAMPLES}"
        ) from exc
    if parsed.drivername in _POSTGRES_ALIASES:
        if not parsed.database:
            raise ConfigError(
                f"PostgreSQL URL {parsed.render_as_string(hide_password=True)} names no database; "
                "add one at the end, e.g. postgresql+psycopg://user@host:5432/flowcall"
            )
        return parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername in ("sqlite", "sqlite+pysqlite"):
        return parsed
    raise ConfigError(
        f"database URL scheme {parsed.drivername!r} is not supported; FlowCall runs on SQLite and "
        f"PostgreSQL (via psycopg). Use e.g. {_EXAMPLES}"
    )


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """WAL lets the UI read while a run writes; busy_timeout waits instead of failing at once."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    # In WAL mode NORMAL is still safe against a crashed process (only a power cut can lose the
    # last commits) and spares an fsync per step: each step is its own commit.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")  # off by default in SQLite; our cascades need it
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for `url`, with the SQLite folder created and its pragmas set per connection."""
    parsed = normalize_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
            try:
                Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    f"cannot create the folder for the SQLite database {parsed.database}: {exc}; "
                    "set FLOWCALL_HOME or FLOWCALL_DATABASE_URL to a writable place"
                ) from exc
        engine = create_engine(parsed, json_serializer=_json_dumps)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(parsed, json_serializer=_json_dumps, pool_pre_ping=True)
