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
from sqlalchemy import select

from flowcall.datasets import DatasetItem
from flowcall.engine import MAYBE_RAN_NOTE
from flowcall.experiments import submit
from flowcall.fake_server import FakeModelServer
from flowcall.local_workers import LocalWorkers
from flowcall.service import FlowCall
from flowcall.spec import parse_flow
from flowcall.steps import RunStatus, StepKind
from flowcall.store.datasets import save_dataset
from flowcall.store.experiments import get_experiment
from flowcall.store.models import StepRow

pytestmark = [pytest.mark.postgres, pytest.mark.workers]

ITEMS = 16
FLOW = {"format": "flowcall.flow/v1", "name": "worker-kill", "tools": ["workertest/v1/record_item"],
        "max_rounds": 1, "decision": {"provider": "openai-compatible", "model": "fake", "calling_way": "native"},
        "polish": {"provider": "openai-compatible", "model": "fake"}}


def _executions(log: Path) -> list[tuple[int, str]]:
    if not log.exists():
        return []
    return [(int(pid), run_id) for pid, run_id in (line.split() for line in log.read_text().splitlines() if line)]


def _steps(app: FlowCall, run_ids: list[str]) -> dict[str, list[tuple]]:
    with app.store._session() as s:
        rows = s.execute(select(StepRow.run_id, StepRow.seq, StepRow.kind, StepRow.name, StepRow.tool_call_id,
                                StepRow.tokens_in, StepRow.error_code)
                         .where(StepRow.run_id.in_(run_ids)).order_by(StepRow.run_id, StepRow.seq)).all()
    found: dict[str, list[tuple]] = {run_id: [] for run_id in run_ids}
    for row in rows:
        found[row[0]].append(tuple(row[1:]))
    return found


def _wait(what: str, ready, timeout_s: float, explain) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen within {timeout_s:g} s\n{explain()}", pytrace=False)


def test_a_killed_worker_loses_nothing_and_repeats_no_call(worker_env: dict[str, str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    log = Path(worker_env["WORKER_TEST_LOG"])
    with FakeModelServer(delay_s=0.2) as model:
        for key, value in (("OPENAI_COMPATIBLE_BASE_URL", model.base_url), ("FLOWCALL_REDELIVERY_S", "4"),
                           ("WORKER_TEST_HANG_AT", "4")):
            worker_env[key] = value
            monkeypatch.setenv(key, value)
        app = FlowCall.open(worker_env["FLOWCALL_DATABASE_URL"])
        save_dataset(app.store, "kill", [DatasetItem(id=f"item-{n}", question=f"item {n}",
                                                     expect_calls=[{"name": "record_item"}]) for n in range(ITEMS)],
                     source="test")
        workers = LocalWorkers(2, worker_env, tmp_path / "logs")
        try:
            workers.start().wait_ready(timeout_s=90)
            experiment = submit(app, parse_flow(FLOW), "worker-kill", "kill")
            run_ids = [item.run_id for item in experiment.items]

            def explain() -> str:
                current = get_experiment(app.store, experiment.id)
                statuses = {r: app.store.get_run(r).status.value for r in run_ids}
                return (f"experiment {current.status.value}, {sum(i.passed is not None for i in current.items)} of "
                        f"{ITEMS} items scored; runs: {statuses}\n"
                        + "\n".join(workers.tail(n) for n in range(2)))

            # kill the worker whose tool call is running now: the fourth execution, which hangs
            _wait("a fourth execution of the tool", lambda: len(_executions(log)) >= 4, 60, explain)
            pid, killed_run = _executions(log)[3]
            victim = workers.index_of(pid)
            assert victim is not None, f"the tool ran in pid {pid}, which belongs to no worker"
            workers.kill(victim)
            killed_at = time.monotonic()
            before = _steps(app, run_ids)

            _wait("the experiment's end", lambda: get_experiment(app.store, experiment.id).status.value != "running",
                  120, explain)
            finished_in = time.monotonic() - killed_at
            after = _steps(app, run_ids)
            ended = get_experiment(app.store, experiment.id)
            runs = {run_id: app.store.get_run(run_id) for run_id in run_ids}
        finally:
            workers.stop()
            app.store.close()

    assert ended.status.value == "finished", explain()
    assert all(item.passed is not None for item in ended.items)
    stuck = {r: run.status for r, run in runs.items()
             if run.status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.INTERRUPTED)}
    assert not stuck, f"runs left unfinished: {stuck}"

    lost = sum(len(steps) - len(after[r][: len(steps)]) + sum(a != b for a, b in zip(steps, after[r]))
               for r, steps in before.items())
    assert lost == 0, f"{lost} steps committed before the kill changed or vanished"

    counts: dict[str, int] = {}
    for _, run_id in _executions(log):
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
    print(f"\nkill figures: {ITEMS} items, 1 worker of 2 killed while run {killed_run[:8]}'s tool ran; "
          f"experiment finished {finished_in:.1f} s after the kill; steps before the kill "
          f"{sum(map(len, before.values()))}, lost 0; tool executions {sum(counts.values())} for "
          f"{len(counts)} runs, repeated 0; the killed run waits for approval")
