"""One door for runs (flowcall/service/door.py), on a real SQLite store and the scripted model:
a run started through the in-process door and through the thread-pool door (the studio's
runner) is recorded, then run; the in-process door shows each step as it commits and answers
for a person; an experiment goes through a door too; a door that is not ready records nothing;
and `choose` sends runs to the workers only when asked or when a broker is set. (The Celery
door, and a door that refuses, are in tests/workers/test_door_workers.py: they need PostgreSQL.)"""

from __future__ import annotations

import pytest

from flowcall.core.datasets import DatasetItem
from flowcall.core.errors import ConfigError
from flowcall.core.experiment_record import ExperimentStatus
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus, StepKind
from flowcall.engine.approval import Decision
from flowcall.eval import experiments
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.broker import WorkersDoor
from flowcall.service.door import choose, enter, start_run
from flowcall.service.front import FlowCall
from flowcall.workers.here import HereDoor
from flowcall.workers.runner import Runner

WAIT_S = 30  # an upper bound for a few scripted steps on a busy CI machine, not a timed target


def service_with(script_for) -> FlowCall:
    made = FlowCall.open()
    made.provider_factory = lambda cfg: ScriptedProvider(script_for())
    return made


def flow(name: str = "chat", **kw) -> Flow:
    return Flow(name=name, decision=DecisionConfig(provider="scripted"), **kw)


def test_the_in_process_door_runs_the_run_now_and_shows_each_step():
    service = service_with(lambda: ["你好!"])
    seen = []
    run = start_run(service, HereDoor(service, on_step=seen.append), flow(), "hello")
    assert run.status == RunStatus.SUCCEEDED and run.final_answer == "你好!"
    assert [s.seq for s in seen] == [s.seq for s in run.steps] and seen
    stored = service.get_run(run.id)
    assert stored.status == RunStatus.SUCCEEDED and stored.queued_at is not None  # recorded first


def test_the_in_process_door_answers_for_a_person(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("a,b\n1,x\n,y\n")
    monkeypatch.setenv("FLOWCALL_DATA_DIR", str(tmp_path / "data"))
    script = [[("read_csv", {"path": "t.csv"})], [("drop_missing", {})], "cleaned"]
    clean = flow("clean", tools=["read_csv", "drop_missing"], max_rounds=3, needs_approval=["drop_missing"])
    service = service_with(lambda: list(script))
    paused = start_run(service, HereDoor(service), clean, "clean t.csv")
    assert paused.status == RunStatus.WAITING_APPROVAL  # nobody to ask: it waits
    approve = lambda call, tool: Decision(action="approve")
    approving = HereDoor(service_with(lambda: list(script)), approver=approve)
    done = start_run(approving.service, approving, clean, "clean t.csv")
    assert done.status == RunStatus.SUCCEEDED and done.final_answer == "cleaned"
    assert [s.name for s in done.steps if s.kind == StepKind.TOOL_CALL] == ["read_csv", "drop_missing"]
    HereDoor(service_with(lambda: list(script[2:]))).continue_with(paused.id, approve)
    assert service.get_run(paused.id).final_answer == "cleaned"


def test_the_thread_pool_door_records_the_run_then_runs_it_on_a_lane():
    service = service_with(lambda: ["on a lane"])
    run = start_run(service, Runner(service), flow(), "hello")
    assert run.status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.SUCCEEDED)
    ended = service.follow(run.id, timeout_s=WAIT_S)
    assert ended.status == RunStatus.SUCCEEDED and ended.final_answer == "on a lane"


def test_an_experiment_goes_through_the_door_it_is_given():
    service = service_with(lambda: ["an answer"])
    from flowcall.store.datasets import save_dataset

    save_dataset(service.store, "two", [DatasetItem(question=f"q{n}") for n in range(2)], source="test")
    experiment = experiments.submit(service, flow(), "chat", "two", door=HereDoor(service))
    assert experiment.status == ExperimentStatus.FINISHED  # its last item's scoring finished it
    assert [item.passed for item in experiment.items] == [True, True]
    assert {service.get_run(item.run_id).status for item in experiment.items} == {RunStatus.SUCCEEDED}


def test_a_missing_key_is_refused_before_anything_is_recorded(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    service = FlowCall.open()
    remote = Flow(name="remote", decision=DecisionConfig(provider="openai", model="gpt-4o-mini"))
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        start_run(service, HereDoor(service), remote, "hello")
    assert service.list_runs() == []


def test_a_door_that_is_not_ready_records_nothing(monkeypatch):
    """The workers' door on SQLite: workers elsewhere could not share the runs."""
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:1/0")
    service = service_with(lambda: ["never"])
    recorded = []
    with pytest.raises(ConfigError, match="PostgreSQL"):
        enter(service, WorkersDoor(service), lambda: recorded.append(1) or [])
    assert recorded == [] and service.list_runs() == []


def test_runs_go_to_the_workers_when_asked_or_when_a_broker_is_set(monkeypatch):
    service = service_with(lambda: [])
    here = HereDoor(service)
    monkeypatch.delenv("FLOWCALL_BROKER_URL", raising=False)
    assert choose(service, here) is here and choose(service, here, queue=False) is here
    assert isinstance(choose(service, here, queue=True), WorkersDoor)
    with pytest.raises(ConfigError, match="FLOWCALL_BROKER_URL"):
        choose(service, None)  # a caller with no way of its own to run (a queue only)
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:6379/0")
    assert isinstance(choose(service, here), WorkersDoor)
    assert choose(service, here, queue=False) is here  # `flowcall run` without --queue runs here
