"""Concurrent runs as separate processes (the real CLI, a scripted model, real plugin tools
that write to the same database) against one database: no lock errors, no lost steps. The
same measurement as benchmarks/reliability.py, with fewer and shorter runs."""

from __future__ import annotations

# The store tests' databases: db_url is an empty SQLite file, then a PostgreSQL database.
from tests.store.conftest import db_url, pg_database  # noqa: F401
from tests.support.reliability import concurrency


def test_concurrent_runs_lose_nothing_and_meet_no_lock(db_url: str) -> None:  # noqa: F811
    backend = "postgres" if db_url.startswith("postgres") else "sqlite"
    figures = concurrency(db_url, backend, processes=4, rounds=3, timeout_s=300)
    assert figures.lock_errors == 0, figures.line()
    assert figures.other_errors == [], figures.other_errors
    assert figures.runs_ok == 4 and figures.steps_lost == 0, figures.line()
    assert figures.steps_stored == figures.steps_reported >= 4 * (3 * 3 + 1), figures.line()
    assert figures.tasks_stored == figures.tasks_expected == 12, figures.line()
