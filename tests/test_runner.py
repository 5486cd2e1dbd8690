"""The runner beside the studio (flowcall/workers/runner.py), on this process's threads and a
real SQLite store: a handed-over run goes on with nobody watching, runs on the model that takes
turns wait in line and say where, Stop stops one, a paused run continues with a person's
decisions, and a failing job leaves the runner working."""

from __future__ import annotations

import threading
import time

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus, StepKind
from flowcall.engine.approval import Decision
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.workers.runner import Runner

WAIT_S = 30  # an upper bound for a few scripted steps on a busy CI machine, not a timed target
ENDED = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


def service_with(script_for) -> FlowCall:
    made = FlowCall.open()
    made.provider_factory = lambda cfg: ScriptedProvider(script_for())
    return made


def flow(name: str = "chat", **kw) -> Flow:
    return Flow(name=name, decision=DecisionConfig(provider="scripted"), **kw)


def queued(service: FlowCall, question: str, made: Flow | None = None) -> str:
    return service.submit(service.prepare(made or flow()), question).id


def test_a_run_handed_over_goes_on_with_nobody_watching():
    service = service_with(lambda: ["你好!"])
    run_id = queued(service, "hello")
    Runner(service).hand_over([run_id])
    ended = service.follow(run_id, timeout_s=WAIT_S)
    assert ended.status == RunStatus.SUCCEEDED and ended.final_answer == "你好!"


def test_runs_that_take_turns_wait_in_line_and_say_where():
    gate = threading.Event()

    def held(request):
        gate.wait(WAIT_S)
        return "first"

    scripts = iter([[held], ["second"]])
    service = service_with(lambda: next(scripts))
    runner = Runner(service, take_turns=("scripted",))
    first, second = queued(service, "one"), queued(service, "two")
    runner.hand_over([first])
    runner.hand_over([second])
    assert runner.place(first) == 0 and runner.place(second) == 1
    assert service.store.get_run(second).status == RunStatus.QUEUED  # not started before its turn
    gate.set()
    assert service.follow(first, timeout_s=WAIT_S).final_answer == "first"
    assert service.follow(second, timeout_s=WAIT_S).final_answer == "second"
    assert runner.place(first) is None


def test_stop_stops_a_run_the_runner_has():
    started, gate = threading.Event(), threading.Event()

    def held(request):
        started.set()
        gate.wait(WAIT_S)
        return [("nothing", {})]

    service = service_with(lambda: [held, "never read"])
    run_id = queued(service, "long")
    Runner(service).hand_over([run_id])
    assert started.wait(WAIT_S)
    service.cancel(run_id, by="studio")
    gate.set()
    ended = service.follow(run_id, timeout_s=WAIT_S)
    assert ended.status == RunStatus.CANCELLED


def ended(service: FlowCall, run_id: str):
    """The run once it has ended (a paused run is not ended: it is waited past)."""
    deadline = time.monotonic() + WAIT_S
    while (run := service.store.get_run(run_id)).status not in ENDED and time.monotonic() < deadline:
        time.sleep(0.05)
    return run


def test_a_paused_run_continues_with_a_persons_decisions(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("a,b\n1,x\n,y\n")
    monkeypatch.setenv("FLOWCALL_DATA_DIR", str(tmp_path / "data"))
    script = [[("read_csv", {"path": "t.csv"})], [("drop_missing", {})], "cleaned"]
    clean = flow("clean", tools=["read_csv", "drop_missing"], max_rounds=3, needs_approval=["drop_missing"])
    paused = service_with(lambda: list(script)).run(clean, "clean t.csv")
    assert paused.status == RunStatus.WAITING_APPROVAL
    service = service_with(lambda: list(script[2:]))
    Runner(service).continue_with(paused.id, lambda call, tool: Decision(action="approve"))
    done = ended(service, paused.id)
    assert done.status == RunStatus.SUCCEEDED and done.final_answer == "cleaned"


def test_a_job_that_fails_leaves_the_runner_working():
    service = service_with(lambda: ["after"])
    runner = Runner(service)
    broken = queued(service, "first")
    runner._hand(broken, lambda: (_ for _ in ()).throw(RuntimeError("boom")))  # a fault, not a run's
    run_id = queued(service, "next")
    runner.hand_over([run_id])
    assert service.follow(run_id, timeout_s=WAIT_S).status == RunStatus.SUCCEEDED
    assert runner.problems[broken] == "boom"  # said on the run's page, not lost in a log
    assert not runner.holds(broken)


def test_the_runner_holds_a_run_until_it_is_done_with():
    gate = threading.Event()

    def held(request):
        gate.wait(WAIT_S)
        return "done"

    service = service_with(lambda: [held])
    runner = Runner(service)
    run_id = queued(service, "wait")
    runner.hand_over([run_id])
    assert runner.holds(run_id)
    gate.set()
    assert service.follow(run_id, timeout_s=WAIT_S).status == RunStatus.SUCCEEDED
    deadline = time.monotonic() + WAIT_S
    while runner.holds(run_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not runner.holds(run_id)


def test_a_rerun_is_recorded_first_then_goes_on_in_the_runner():
    """A re-run is queued with the steps it reuses and the state they lead to, so it can wait in
    line (or go to a worker, or survive a restart) and go on from its cut given only its id."""
    script = [[("get_current_time", {"timezone": "Asia/Shanghai"})], "it is noon"]
    clock = flow("clock", tools=["time/v1/get_current_time"], max_rounds=2)
    original = service_with(lambda: list(script)).run(clock, "what time is it?")
    assert original.status == RunStatus.SUCCEEDED
    call = next(s for s in original.steps if s.kind == StepKind.TOOL_CALL)
    service = service_with(lambda: ["it is noon in Tokyo"])
    new = service.queue_rerun(original.id, call.seq, arguments={"timezone": "Asia/Tokyo"})
    stored = service.store.get_run(new.id)
    assert stored.status == RunStatus.QUEUED and len(stored.steps) == call.seq - 1
    assert all("reused" in s.note for s in stored.steps)
    Runner(service).hand_over([new.id])
    done = service.follow(new.id, timeout_s=WAIT_S)
    assert done.status == RunStatus.SUCCEEDED and done.final_answer == "it is noon in Tokyo"
    assert [s.arguments for s in done.steps if s.kind == StepKind.TOOL_CALL] == [{"timezone": "Asia/Tokyo"}]
