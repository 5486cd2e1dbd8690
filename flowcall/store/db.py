"""Engines for the two supported databases: SQLite (the laptop default) and PostgreSQL.

The URL comes from the user (FLOWCALL_DATABASE_URL), so every problem with it becomes a
ConfigError that says what to write instead.
"""

from __future__ import annotations

import functools
import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from sqlalchemy import Engine, Integer, Table, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from flowcall.core.errors import ConfigError

_EXAMPLES = "sqlite:////absolute/path/flowcall.db or postgresql+psycopg://user:password@host:5432/dbname"
_POSTGRES_ALIASES = {"postgres", "postgresql", "postgresql+psycopg"}


T = TypeVar("T")


def _finite(value: Any) -> Any:
    """`value` with NaN and the infinities as the strings "NaN", "Infinity", "-Infinity"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _json_dumps(value: Any) -> str:
    """JSON columns as text. Chinese text stays readable instead of becoming \\uXXXX escapes.

    Strict JSON: Python writes NaN and Infinity, which are not JSON; PostgreSQL's json refuses
    them (the step, and so the run, would fail to record), SQLite keeps them. A model's arguments
    or a tool's result can hold them, so they are stored as strings, the same on both."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False)


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


SQLITE_BUSY_TIMEOUT_MS = 5_000


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """WAL lets the UI read while a run writes; busy_timeout waits instead of failing at once.

    busy_timeout comes first: switching a new database to WAL takes a lock, and a process that
    asks while another holds it must wait for it, not fail with "database is locked". A write
    waits only for other writes, each one short transaction (milliseconds), so 5 s is reached
    only when something holds the database far longer than FlowCall ever does."""
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode=WAL")
    # In WAL mode NORMAL is still safe against a crashed process (only a power cut can lose the
    # last commits) and spares an fsync per step: each step is its own commit.
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")  # off by default in SQLite; our cascades need it
    cursor.close()


NUL_REPLACEMENT = "\ufffd"  # what a NUL character in a text value becomes on PostgreSQL


def _pg_text_without_nul(dbapi_connection: Any, _record: Any) -> None:
    """PostgreSQL text cannot hold the NUL character (psycopg raises DataError), SQLite's can. A
    model's text, a tool's error or an imported run may carry one, and a step must never fail to
    record for it: on PostgreSQL each NUL in a string value becomes U+FFFD (the replacement
    character). JSON columns are unaffected: their text escapes NUL as \\u0000."""
    from psycopg.adapt import Dumper, PyFormat

    for fmt in (PyFormat.TEXT, PyFormat.BINARY):
        inner_class = dbapi_connection.adapters.get_dumper(str, fmt)

        class NulFree(Dumper):  # psycopg's own str dumpers are C types: wrapped, not subclassed
            format = inner_class.format

            def __init__(self, cls: type, context: Any = None, inner_class: Any = inner_class):
                super().__init__(cls, context)
                self._inner = inner_class(cls, context)
                self.oid = self._inner.oid

            def dump(self, obj: str) -> Any:
                return self._inner.dump(obj.replace("\x00", NUL_REPLACEMENT) if "\x00" in obj else obj)

            def quote(self, obj: str) -> Any:
                return self._inner.quote(obj.replace("\x00", NUL_REPLACEMENT) if "\x00" in obj else obj)

        dbapi_connection.adapters.register_dumper(str, NulFree)


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
    engine = create_engine(parsed, json_serializer=_json_dumps, pool_pre_ping=True)
    event.listen(engine, "connect", _pg_text_without_nul)
    return engine


# --- a write whose connection was dropped -----------------------------------------------------
# PostgreSQL can end a connection at any time (a restart, a failover, pg_terminate_backend, an
# idle timeout of a proxy). pool_pre_ping replaces a connection that died while it sat in the
# pool; a connection that dies *during* a statement or a commit raises DBAPIError with
# connection_invalidated set, and the pool has already dropped it: the same transaction on a
# new connection is then the right answer.


def is_disconnect(exc: BaseException) -> bool:
    """True when `exc` says the database connection was lost (the pool has discarded it)."""
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def retry_on_disconnect(
    work: Callable[[], T], *, attempts: int = 3, wait_s: float = 0.25, landed: Callable[[], Any] | None = None
) -> T:
    """Run `work`, one whole transaction that opens its own session or connection, and run it
    again (up to `attempts` times in all) when the connection was dropped under it.

    A connection lost during COMMIT leaves it unknown whether the commit happened. `landed`,
    if given, is asked before each new attempt: True means the first one did commit, and
    `work` is not run again (e.g. "is step (run_id, seq) stored?"). Without it, `work` must be
    safe to run twice. A truthy answer of `landed` is returned as `work`'s result (so a write
    that returns True on success can say `landed=lambda: ... is stored`). Any other error, and
    the last disconnect, are raised as they are."""
    for attempt in range(1, attempts + 1):
        try:
            return work()
        except DBAPIError as exc:
            if not is_disconnect(exc) or attempt == attempts:
                raise
            time.sleep(wait_s * attempt)
            if landed is not None:
                try:
                    done = landed()
                except DBAPIError as again:
                    if not is_disconnect(again):
                        raise
                    continue
                if done:
                    return done  # type: ignore[return-value]
    raise AssertionError("unreachable")  # pragma: no cover


def retried_on_disconnect(method: Callable[..., T]) -> Callable[..., T]:
    """retry_on_disconnect as a decorator, for Store methods that are one short transaction
    each and safe to run twice (an UPDATE to fixed values, a compare-and-set, a read)."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return retry_on_disconnect(lambda: method(*args, **kwargs))

    return wrapper


# --- values that fit their columns ------------------------------------------------------------
# SQLite stores any text in a VARCHAR(n) and any integer in an INTEGER; PostgreSQL refuses what
# does not fit (DataError), so the same step records on one database and not on the other. A
# model writes what it likes (a 300-character tool name); an imported run holds anything.

INT32 = (-(2**31), 2**31 - 1)  # PostgreSQL's integer


def _limits(row: Any) -> Iterator[tuple[Any, Any]]:
    for column in row.__table__.columns:
        yield column, getattr(row, column.key, None)


@functools.cache
def _cuttable(table: Table) -> tuple[tuple[str, int], ...]:
    """(column, length) of each text column of `table` that fit_values may cut: no keys."""
    return tuple(
        (c.key, c.type.length)
        for c in table.columns
        if getattr(c.type, "length", None) and not c.primary_key and not c.foreign_keys
    )


def fit_values(table: Table, values: dict[str, Any]) -> dict[str, Any]:
    """`values` (a row of `table`, changed in place) with each text longer than its column cut
    to fit, ending in "…". Keys (primary and foreign) are never cut: a cut id would name
    another row (see misfits)."""
    for key, length in _cuttable(table):
        value = values.get(key)
        if isinstance(value, str) and len(value) > length:
            values[key] = value[: length - 1] + "…"
    return values


def misfits(row: Any) -> list[str]:
    """What in `row` no database column can take as it is: a key longer than its column, an
    integer beyond PostgreSQL's integer. For refusing an import before anything is written."""
    problems = []
    table = row.__table__.name
    for column, value in _limits(row):
        length = getattr(column.type, "length", None)
        if (
            length
            and isinstance(value, str)
            and len(value) > length
            and (column.primary_key or column.foreign_keys)
        ):
            problems.append(
                f"{table}.{column.key} is {len(value)} characters long; it may have at most {length}"
            )
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and isinstance(column.type, Integer)
            and not INT32[0] <= value <= INT32[1]
        ):
            problems.append(f"{table}.{column.key} is {value}, out of range (at most {INT32[1]})")
    return problems
