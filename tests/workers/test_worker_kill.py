"""A worker dies, nothing is lost (issue 13, point 4): real Redis, real PostgreSQL, 2 real
`flowcall worker` processes, an experiment whose model is an OpenAI-compatible server answering
after 200 ms and whose tool is not read-only and logs each execution. One worker is killed
(kill -9 of it and its pool process) while that tool runs: the fourth execution of the tool
hangs, so the kill surely lands inside it. Then:

- every item is scored and the experiment finished: no run is left queued, running or interrupted;
- every step committed before the kill is still there, unchanged (0 lost);
- no call of the tool ran twice: the killed run's call, started but never committed, waits for
  a person (the run ends waiting_approval), and every other run ran it once.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from flowcall.core.steps import RunStatus, StepKind
from flowcall.engine.approval import MAYBE_RAN_NOTE
from flowcall.store.experiments import get_experiment
from tests.workers.on_workers import experiment_on_workers, lost_steps

pytestmark = [pytest.mark.postgres, pytest.mark.workers]

ITEMS = 16


def test_a_killed_worker_loses_nothing_and_repeats_no_call(
    worker_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with experiment_on_workers(
        worker_env,
        monkeypatch,
        tmp_path / "logs",
        ITEMS,
        {"FLOWCALL_REDELIVERY_S": "4", "WORKER_TEST_HANG_AT": "4"},
    ) as on:
        # kill the worker whose tool call is running now: the fourth execution, which hangs
        on.wait("a fourth execution of the tool", lambda: len(on.executions()) >= 4, 60)
        pid, killed_run = on.executions()[3]
        victim = on.workers.index_of(pid)
        assert victim is not None, f"the tool ran in pid {pid}, which belongs to no worker"
        on.workers.kill(victim)
        killed_at = time.monotonic()
        before = on.steps()
        on.wait_for_the_end(120)
        finished_in = time.monotonic() - killed_at
        after = on.steps()
        ended = get_experiment(on.app.store, on.experiment.id)
        runs = {run_id: on.app.store.get_run(run_id) for run_id in on.run_ids}
        executions = on.executions()
        explain = on.explain()

    assert ended.status.value == "finished", explain
    assert all(item.passed is not None for item in ended.items)
    stuck = {
        r: run.status
        for r, run in runs.items()
        if run.status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)
    }
    assert not stuck, f"runs left unfinished: {stuck}"

    lost = lost_steps(before, after)
    assert lost == 0, f"{lost} steps committed before the kill changed or vanished"

    counts: dict[str, int] = {}
    for _, run_id in executions:
        counts[run_id] = counts.get(run_id, 0) + 1
    assert max(counts.values()) == 1, f"the non-read-only tool ran more than once for {counts}"
    assert counts.get(killed_run) == 1

    resumed = runs[killed_run]
    assert resumed.status == RunStatus.WAITING_APPROVAL, (resumed.status, resumed.error)
    waiting = [s for s in resumed.steps if s.kind == StepKind.APPROVAL]
    assert waiting and waiting[-1].note == MAYBE_RAN_NOTE
    others = [run for r, run in runs.items() if r != killed_run]
    assert all(run.status == RunStatus.SUCCEEDED for run in others), {r.id: r.status for r in others}
    assert all(counts.get(run.id) == 1 for run in others)
    print(
        f"\nkill figures: {ITEMS} items, 1 worker of 2 killed while run {killed_run[:8]}'s tool ran; "
        f"experiment finished {finished_in:.1f} s after the kill; steps before the kill "
        f"{sum(map(len, before.values()))}, lost 0; tool executions {sum(counts.values())} for "
        f"{len(counts)} runs, repeated 0; the killed run waits for approval"
    )
