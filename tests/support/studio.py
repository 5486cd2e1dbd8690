"""For AppTest tests of pages that hand runs to the studio's runner: the runner goes on in this
process's threads, so a test waits for it, as a person watching the page would, then draws the
page again."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from flowcall.service.front import FlowCall
from flowcall.workers.runner import runner_for

WAIT_S = 600  # a bound for a run on the embedded model on a slow machine, not a timed target


def followed(app: AppTest, run_id: str | None = None, timeout_s: float = WAIT_S) -> AppTest:
    """The page once the runner is done with the run it shows (`run_id`, else the page's), drawn again."""
    run_id = run_id or app.session_state["run_id"]
    runner = runner_for(FlowCall.open())  # the page's runner: one per database in this process
    deadline = time.monotonic() + timeout_s
    while runner.holds(run_id):
        assert time.monotonic() < deadline, f"run {run_id} still goes on after {timeout_s} s"
        time.sleep(0.1)
    app.run()
    return app
