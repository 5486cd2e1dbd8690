"""What a restart of PostgreSQL does to the workers (issue 13, point 6), caused for real without
stopping the server others share: every connection to the test's database is cut by the server
(pg_terminate_backend, what a restart does to them) twice while 2 real `flowcall worker`
processes run an experiment whose tool is not read-only. Then, as after a kill:

- the experiment finishes, and no run is left queued, running or interrupted;
- every step committed before a cut is still there, unchanged;
- no call of the tool ran twice; a run ends succeeded, or waits for a person where a call it
  started may have run (never re-run unasked).
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from flowcall.core.steps import RunStatus, StepKind
from flowcall.engine.approval import MAYBE_RAN_NOTE
from flowcall.store.experiments import get_experiment
from flowcall.workers.local_workers import PG_ADMIN
from tests.workers.on_workers import experiment_on_workers, lost_steps

pytestmark = [pytest.mark.postgres, pytest.mark.workers]

ITEMS = 12


def _cut_connections(database: str) -> int:
    """Have the server end every session on `database`, as a restart would; how many it ended."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        return len(
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            ).fetchall()
        )


def test_connections_cut_by_the_database_lose_nothing_and_repeat_no_call(
    worker_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = worker_env["FLOWCALL_DATABASE_URL"].rsplit("/", 1)[1]
    cuts, befores = [], []
    with experiment_on_workers(
        worker_env,
        monkeypatch,
        tmp_path / "logs",
        ITEMS,
        {"FLOWCALL_REDELIVERY_S": "4", "WORKER_TEST_TOOL_S": "1.0"},
    ) as on:
        for executions in (3, 7):  # each cut lands while tools run (each takes 1 s)
            on.wait(f"execution {executions} of the tool", lambda: len(on.executions()) >= executions, 60)
            befores.append(on.steps())
            cuts.append(_cut_connections(database))
        on.wait_for_the_end(180)
        after = on.steps()
        ended = get_experiment(on.app.store, on.experiment.id)
        runs = {run_id: on.app.store.get_run(run_id) for run_id in on.run_ids}
        executions_seen = on.executions()
        explain = on.explain()

    assert all(n > 0 for n in cuts), f"a cut found no session to end: {cuts}"
    assert ended.status.value == "finished", explain
    stuck = {
        r: run.status
        for r, run in runs.items()
        if run.status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)
    }
    assert not stuck, f"runs left unfinished: {stuck}"
    for before in befores:
        lost = lost_steps(before, after)
        assert lost == 0, f"{lost} steps committed before a cut changed or vanished"

    counts: dict[str, int] = {}
    for _, run_id in executions_seen:
        counts[run_id] = counts.get(run_id, 0) + 1
    assert max(counts.values()) == 1, f"the non-read-only tool ran more than once for {counts}"
    for run in runs.values():
        if run.status == RunStatus.WAITING_APPROVAL:  # its call may have run: a person decides
            assert [s for s in run.steps if s.kind == StepKind.APPROVAL][-1].note == MAYBE_RAN_NOTE
        else:
            assert run.status == RunStatus.SUCCEEDED, (run.id, run.status, run.error)
            assert counts.get(run.id) == 1
    print(
        f"\ndatabase cuts: {cuts} sessions ended; "
        f"{sum(r.status == RunStatus.SUCCEEDED for r in runs.values())} of {ITEMS} runs succeeded, "
        f"{sum(r.status == RunStatus.WAITING_APPROVAL for r in runs.values())} wait for a person; tool "
        f"executions {sum(counts.values())}, repeated 0"
    )
