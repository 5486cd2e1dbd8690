"""The tool of the worker tests (FLOWCALL_PLUGIN_DIRS points here): not read-only, so a call of
it that was started but never committed must wait for a person, never run twice. Each execution
appends "PID RUN_ID" to WORKER_TEST_LOG (flushed to disk before the tool goes on), then takes
WORKER_TEST_TOOL_S seconds; the execution numbered WORKER_TEST_HANG_AT (1, 2, ...) hangs, so a
test can kill its worker while it surely runs."""

from __future__ import annotations

import os
import time

from flowcall.tools.base import RunContext
from flowcall.tools.python_plugins import tool


@tool("workertest/v1/record_item")
def record_item(ctx: RunContext, item: str) -> str:
    """Record an item in the ledger (changes the world: never repeated unasked).

    Args:
        item: what to record
    """
    path, line = os.environ["WORKER_TEST_LOG"], f"{os.getpid()} {ctx.run_id}\n"
    with open(path, "a", encoding="utf-8") as log:  # one short append: whole, whoever else appends
        log.write(line)
        log.flush()
        os.fsync(log.fileno())
    with open(path, encoding="utf-8") as log:
        number = next(n for n, seen in enumerate(log, 1) if seen == line)  # this execution's place
    hang = number == int(os.environ.get("WORKER_TEST_HANG_AT", "0"))
    time.sleep(600 if hang else float(os.environ.get("WORKER_TEST_TOOL_S", "0.5")))
    return f"recorded {item}"
