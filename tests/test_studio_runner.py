"""The studio's pages with the runner beside them (AppTest, a real SQLite store, real threads,
a scripted model held mid-run): the Runs page lists a run going on, live, and stops it; the Run
page follows a run another tab started and says where it is."""

from __future__ import annotations

import threading

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.workers.runner import runner_for
from tests.test_studio import page, texts

WAIT_S = 30  # a bound for a few scripted steps on a busy machine, not a timed target


def held_run(question: str) -> tuple[FlowCall, str, threading.Event]:
    """A run handed to the studio's runner whose model waits until the returned event is set."""
    started, gate = threading.Event(), threading.Event()

    def held(request):
        started.set()
        gate.wait(WAIT_S)
        return "done"

    service = FlowCall.open()
    service.seed_examples()
    service.provider_factory = lambda cfg: ScriptedProvider([held])
    runner = runner_for(service)  # the runner the pages find for this database
    flow = Flow(name="slow", description="Answers slowly.", decision=DecisionConfig(provider="scripted"))
    run_id = service.submit(service.prepare(flow), question).id
    runner.start(run_id)
    assert started.wait(WAIT_S)
    return service, run_id, gate


def test_the_runs_page_lists_a_run_going_on_and_stops_it():
    service, run_id, gate = held_run("a question that takes long")
    try:
        app = page("pages/runs.py")
        shown = texts(app)
        assert "Going on now (1)" in shown and "a question that takes long" in shown
        assert "slow · running · " in shown  # where it is, and for how long
        stop = [b for b in app.button if b.label == "Stop"]
        assert stop, [b.label for b in app.button]
        stop[0].click().run()
        assert not app.exception, app.exception
    finally:
        gate.set()
    ended = service.follow(run_id, timeout_s=WAIT_S)
    assert ended.status == RunStatus.CANCELLED and "studio" in (ended.error or "")


def test_the_run_page_follows_a_run_started_elsewhere():
    service, run_id, gate = held_run("started in another tab")
    try:
        app = page("pages/run.py")
        app.session_state["run_id"] = run_id
        app.run()
        assert not app.exception, app.exception
        assert f"Run {run_id[:8]}: running" in texts(app)
        assert [b for b in app.button if b.label == "Stop"]
    finally:
        gate.set()
    assert service.follow(run_id, timeout_s=WAIT_S).status == RunStatus.SUCCEEDED
