"""What a worker does with a run id (flowcall/workers/work.py), in this process, on a real PostgreSQL:
each state a delivered task can meet, twice delivered tasks, experiments scored and finished
once, and the set-ups refused before anything is queued (a broker without PostgreSQL, no broker,
a broker that is down)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import update

from flowcall.cli.main import cli
from flowcall.core.datasets import DatasetItem
from flowcall.core.errors import ConfigError
from flowcall.core.experiment_record import ExperimentStatus
from flowcall.core.steps import RunStatus, StepKind, utcnow
from flowcall.engine.approval import MAYBE_RAN_NOTE
from flowcall.eval import experiments
from flowcall.service.door import choose, start_run
from flowcall.service.front import FlowCall
from flowcall.store.datasets import save_dataset
from flowcall.store.experiments import finish_when_scored, get_experiment
from flowcall.store.models import RunRow
from flowcall.store.ownership import this_process
from flowcall.workers.work import Later, work_on
from tests.durable_helper import FLOW, service

pytestmark = pytest.mark.postgres
ELSEWHERE = "another-host/4242/1"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DURABLE_TEST_DIR", str(tmp_path))
    return tmp_path / "executions.log"


@pytest.fixture
def app(pg_url: str, work: Path):
    flowcall = service(pg_url, [("write", "a")])
    yield flowcall
    flowcall.store.close()


def _queued(app: FlowCall) -> str:
    return app.submit(app.prepare(FLOW), "write a").id


def _owned_elsewhere(app: FlowCall, run_id: str, *, lease_left_s: float) -> None:
    with app.store._session() as s, s.begin():
        s.execute(
            update(RunRow)
            .where(RunRow.id == run_id)
            .values(status="running", owner=ELSEWHERE, lease_until=utcnow() + timedelta(seconds=lease_left_s))
        )


def _executions(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_queued_run_is_run_once_even_when_its_task_comes_twice(app: FlowCall, work: Path) -> None:
    run_id = _queued(app)
    first = work_on(app, run_id)
    again = work_on(app, run_id)
    assert first.status == again.status == RunStatus.SUCCEEDED
    assert [s.seq for s in again.steps] == [s.seq for s in first.steps]
    assert _executions(work) == 1


def test_a_run_another_live_process_holds_comes_back_later(app: FlowCall) -> None:
    run_id = _queued(app)
    _owned_elsewhere(app, run_id, lease_left_s=60)
    outcome = work_on(app, run_id)
    assert isinstance(outcome, Later) and ELSEWHERE in outcome.why
    assert app.store.get_run(run_id).status == RunStatus.RUNNING


def test_a_run_whose_worker_died_before_any_tool_starts_again_from_its_question(
    app: FlowCall, work: Path
) -> None:
    run_id = _queued(app)
    _owned_elsewhere(app, run_id, lease_left_s=-1)  # its lease ran out: the worker is gone
    assert app.store.get_run(run_id).status == RunStatus.INTERRUPTED
    assert work_on(app, run_id).status == RunStatus.SUCCEEDED
    assert _executions(work) == 1


def test_a_run_this_process_held_when_its_database_went_away_is_resumed(app: FlowCall) -> None:
    run_id = _queued(app)
    with app.store._session() as s, s.begin():
        s.execute(update(RunRow).where(RunRow.id == run_id).values(status="running", owner=this_process()))
    assert work_on(app, run_id).status == RunStatus.SUCCEEDED


def test_a_started_call_whose_result_was_lost_waits_for_a_person(pg_url: str, work: Path) -> None:
    """The tool hands the run to a dead owner while it runs, as a worker killed mid-call would
    leave it: started, never committed. The next delivery resumes it and the call waits."""
    app = service(pg_url, [("write", "a")])
    original = app.registry.get("write_item").func

    def lose_the_worker(label: str) -> str:
        _owned_elsewhere(app, run_id, lease_left_s=-1)
        return original(label=label)

    try:
        run_id = _queued(app)
        app.registry.get("write_item").func = lose_the_worker
        app.execute(run_id)  # its last commit finds the run taken over: nothing after the call is recorded
        assert app.store.get_run(run_id).status == RunStatus.INTERRUPTED
        app.registry.get("write_item").func = original
        resumed = work_on(app, run_id)
        assert resumed.status == RunStatus.WAITING_APPROVAL
        assert resumed.steps[-1].kind == StepKind.APPROVAL and resumed.steps[-1].note == MAYBE_RAN_NOTE
        assert _executions(work) == 1
    finally:
        app.registry.get("write_item").func = original
        app.store.close()


def test_a_worker_without_the_flows_key_fails_the_run_saying_so(app: FlowCall, monkeypatch) -> None:
    from flowcall.providers import NotConfigured

    run_id = _queued(app)

    def no_key(config):
        raise NotConfigured("set OPENAI_API_KEY")

    monkeypatch.setattr(app, "provider_factory", no_key)
    run = work_on(app, run_id)
    assert run.status == RunStatus.FAILED and "a worker could not run it" in run.error
    assert "OPENAI_API_KEY" in run.error


def _experiment(app: FlowCall, items: int) -> int:
    save_dataset(
        app.store,
        "writes",
        [DatasetItem(question=f"write {n}", expect_calls=[{"name": "write_item"}]) for n in range(items)],
        source="test",
    )
    return experiments.start(app, FLOW, "durable", "writes").id


def test_the_worker_that_scores_the_last_item_finishes_the_experiment(app: FlowCall) -> None:
    experiment_id = _experiment(app, 3)
    runs = [item.run_id for item in get_experiment(app.store, experiment_id).items]
    for run_id in runs[:2]:
        work_on(app, run_id)
        assert get_experiment(app.store, experiment_id).status == ExperimentStatus.RUNNING
    work_on(app, runs[2])
    done = get_experiment(app.store, experiment_id)
    assert done.status == ExperimentStatus.FINISHED and done.summary.passed == 3
    work_on(app, runs[2])  # delivered again: the same verdicts, still finished once
    assert get_experiment(app.store, experiment_id).summary == done.summary


def test_two_workers_finishing_at_once_finish_the_experiment_once(app: FlowCall) -> None:
    experiment_id = _experiment(app, 2)
    for item in get_experiment(app.store, experiment_id).items:
        work_on(app, item.run_id)
    with app.store._session() as s, s.begin():  # as if both had just scored their item
        from flowcall.store.models import ExperimentRow

        s.execute(update(ExperimentRow).where(ExperimentRow.id == experiment_id).values(status="running"))
    gate, finished = threading.Barrier(8), []

    def finish() -> None:
        gate.wait()
        finished.append(finish_when_scored(app.store, experiment_id))

    threads = [threading.Thread(target=finish) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert finished.count(True) == 1


def test_a_broker_with_sqlite_is_refused_naming_both_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:6379/0")
    result = CliRunner().invoke(cli, ["run", "flows/current_time.json", "现在几点了?", "--queue"], obj={})
    assert result.exit_code != 0
    message = str(result.exception)
    assert "FLOWCALL_BROKER_URL" in message and "FLOWCALL_DATABASE_URL" in message and "PostgreSQL" in message


def test_queue_without_a_broker_says_what_to_set(monkeypatch) -> None:
    monkeypatch.delenv("FLOWCALL_BROKER_URL", raising=False)
    result = CliRunner().invoke(cli, ["run", "flows/current_time.json", "现在几点了?", "--queue"], obj={})
    assert "FLOWCALL_BROKER_URL" in str(result.exception) and "flowcall worker" in str(result.exception)


def test_a_broker_that_is_down_leaves_nothing_queued(app: FlowCall, monkeypatch) -> None:
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    save_dataset(app.store, "one", [DatasetItem(question="write 1")], source="test")
    with pytest.raises(ConfigError, match="did not take"):
        experiments.submit(app, FLOW, "durable", "one")
    experiment = get_experiment(app.store, 1)
    assert experiment.status == ExperimentStatus.FAILED and "did not take" in experiment.error
    assert app.store.get_run(experiment.items[0].run_id).status == RunStatus.CANCELLED
    with pytest.raises(ConfigError, match="did not take"):
        start_run(app, choose(app, None, queue=True), FLOW, "write b")
    assert app.store.list_runs(status="queued") == []


def test_requeue_hands_queued_runs_to_the_broker_again(app: FlowCall, worker_env: dict[str, str]) -> None:
    """After Redis lost its tasks: the runs still queued in the database go back to the queue."""
    import redis

    run_ids = {_queued(app) for _ in range(3)}
    result = CliRunner().invoke(cli, ["runs", "requeue", "--queued"], obj={})
    assert result.exit_code == 0, result.output
    assert "handed 3 run(s) to the workers" in result.output
    client = redis.Redis.from_url(worker_env["FLOWCALL_BROKER_URL"])
    tasks = client.lrange(worker_env["FLOWCALL_QUEUE"], 0, -1)
    assert len(tasks) == 3 and all(any(r.encode() in t for t in tasks) for r in run_ids)
