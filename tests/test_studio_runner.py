"""The studio's pages with the runner beside them (AppTest, a real SQLite store, real threads,
a scripted model held mid-run): the Runs page lists a run going on, live, and stops it; the Run
page follows a run another tab started and says where it is. And what a hosted model writes
reaches the runner as it is written (the fake OpenAI-compatible server, streaming)."""

from __future__ import annotations

import threading
import time

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.testing.fake_server import FakeModelServer
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
    runner.hand_over([run_id])
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


def test_a_hosted_models_text_shows_while_it_writes(monkeypatch):
    """The runner keeps the text of a run on a hosted model as the model writes it, as it does
    for the embedded model: the Run page shows it. The server streams a word each 50 ms."""
    question = "what does a hosted model show while it writes its answer?"
    with FakeModelServer(delay_s=0.0, piece_delay_s=0.05) as model:
        monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", model.base_url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        service = FlowCall.open()
        runner = runner_for(service)
        flow = Flow(name="hosted", decision=DecisionConfig(provider="openai-compatible", model="fake"))
        run_id = service.submit(service.prepare(flow), question).id
        runner.hand_over([run_id])
        seen: list[str] = []
        deadline = time.monotonic() + WAIT_S
        while runner.holds(run_id) and time.monotonic() < deadline:
            writing = runner.writing.get(run_id)
            if writing and writing.text and writing.text not in seen:
                seen.append(writing.text)
            time.sleep(0.005)
        run = service.follow(run_id, timeout_s=WAIT_S)
    assert run.status == RunStatus.SUCCEEDED and run.final_answer == f"answer to: {question}"
    assert len(seen) >= 3 and seen[0] != run.final_answer  # a piece at a time, while it wrote
    assert all(run.final_answer.startswith(text) for text in seen)
    assert run.steps[0].request["stream"] is True and model.bodies[0]["stream"] is True
