"""Tools that misbehave on purpose, for the reliability suite (tests/support/reliability.py,
run by tests/reliability/ and benchmarks/reliability.py). The suite adds this folder with
FLOWCALL_PLUGIN_DIRS; nothing else loads it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from flowcall.tools.python_plugins import tool


@tool("reliability/v1/sleep_past", read_only=True)
def sleep_past(seconds: float = 3600.0) -> str:
    """Sleep, far past any tool timeout; answers only if it ever wakes.

    Args:
        seconds: how long to sleep
    """
    time.sleep(seconds)
    return "woke up"


@tool("reliability/v1/huge_result", read_only=True)
def huge_result(megabytes: int = 50) -> dict[str, Any]:
    """A result of about `megabytes` MB: one JSON object with a long list of rows.

    Args:
        megabytes: the size of the result
    """
    row = "order 1234567, customer 7654321, 3 items, 199.00 CNY, shipped;"  # 64 characters
    rows = (megabytes * 1024 * 1024) // (len(row) + 4)
    return {"rows": [row] * rows, "count": rows}


@tool("reliability/v1/drop_db_connections", read_only=True)
def drop_db_connections() -> dict[str, Any]:
    """End every other connection to this run's PostgreSQL database (pg_terminate_backend), as a
    database restart or a proxy's idle timeout would."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(os.environ["FLOWCALL_DATABASE_URL"])
    with psycopg.connect(
        host=url.host or "127.0.0.1",
        port=url.port or 5432,
        user=url.username or "postgres",
        dbname=url.database,
        autocommit=True,
    ) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (url.database,),
        ).fetchone()[0]
    return {"connections_ended": ended}
