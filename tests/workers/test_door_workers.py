"""The door to the Celery workers (service/broker.py WorkersDoor) for real: a run started
through it is recorded, handed to Redis and run by a real `flowcall worker` process; and a
broker that does not take the run (a Redis URL where nothing listens) leaves it cancelled,
saying why, with nothing left queued."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowcall.core.spec import parse_flow
from flowcall.core.steps import RunStatus
from flowcall.service.broker import WorkersDoor
from flowcall.service.door import Refused, choose, start_run
from flowcall.service.front import FlowCall
from flowcall.workers.local_workers import LocalWorkers
from tests.durable_helper import FLOW, service

RECORD = parse_flow(
    {
        "name": "through-the-door",
        "tools": ["workertest/v1/record_item"],
        "decision": {"provider": "scripted", "model": "schema"},
    }
)


@pytest.mark.postgres
def test_a_broker_that_does_not_take_the_run_leaves_it_cancelled_saying_why(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DURABLE_TEST_DIR", str(tmp_path))
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    app = service(pg_url, [("write", "a")])
    try:
        with pytest.raises(Refused, match="did not take") as refused:
            start_run(app, WorkersDoor(app), FLOW, "write a")
        (run_id,) = refused.value.run_ids
        run = app.get_run(run_id)
        assert run.status == RunStatus.CANCELLED
        assert "the broker did not take it" in run.error and "FLOWCALL_BROKER_URL" in run.error
        assert app.list_runs(status=RunStatus.QUEUED) == []
    finally:
        app.store.close()


@pytest.mark.workers
def test_a_run_through_the_workers_door_runs_on_a_worker(worker_env: dict[str, str], tmp_path: Path) -> None:
    app = FlowCall.open()
    app.grant(RECORD, by="test")
    try:
        with LocalWorkers(1, worker_env, tmp_path / "workers") as workers:
            workers.wait_ready(timeout_s=90)
            door = choose(app, None)  # FLOWCALL_BROKER_URL is set: the workers
            queued = start_run(app, door, RECORD, "record the item")
            assert isinstance(door, WorkersDoor) and queued.status == RunStatus.QUEUED
            ended = app.follow(queued.id, timeout_s=90)
        assert ended.status == RunStatus.SUCCEEDED, ended.error
        log = Path(worker_env["WORKER_TEST_LOG"]).read_text().splitlines()
        (pid, run_id), *_ = [line.split() for line in log]
        assert run_id == queued.id and pid != str(os.getpid())  # a worker process ran its tool
    finally:
        app.store.close()
