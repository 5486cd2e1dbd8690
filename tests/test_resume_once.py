"""Resume exactly once: claiming a paused run is one compare-and-set on its status in the database,
so of two processes resuming the same run only one runs the approved call; the other exits 2 with
a one-line reason. With real processes (tests/resume_helper.py), on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, update
from streamlit.testing.v1 import AppTest

from flowcall.core.errors import ConfigError
from flowcall.core.steps import Run, RunStatus, StepKind
from flowcall.engine.approval import approve_all
from flowcall.engine.loop import Engine
from flowcall.service.front import FlowCall
from flowcall.store import Store
from flowcall.store.models import RunRow
from tests.resume_helper import FLOW, service

# The store tests' databases: db_url is an empty SQLite file, then a PostgreSQL database.
from tests.store.conftest import db_url, pg_database  # noqa: F401
from tests.support.studio import followed

ROOT = Path(__file__).resolve().parent.parent
HELPER = Path(__file__).resolve().parent / "resume_helper.py"
TAKEN = "is already being resumed (or finished); see `flowcall runs show"


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where delete_report writes one line per execution, in this process and in the helpers."""
    path = tmp_path / "executions.log"
    monkeypatch.setenv("RESUME_TEST_LOG", str(path))
    return path


@pytest.fixture
def flowcalls(db_url: str, log: Path) -> Iterator[Callable[[list], FlowCall]]:  # noqa: F811
    """Services on the test database; their store is closed before the database is wiped."""
    made: list[FlowCall] = []

    def make(script: list) -> FlowCall:
        made.append(service(db_url, script))
        return made[-1]

    yield make
    for flowcall in made:
        flowcall.store.close()


def _pause(flowcalls: Callable[[list], FlowCall]) -> Run:
    paused = flowcalls([[("delete_report", {"path": "q3.pdf"})]]).run(FLOW, "delete the Q3 report")
    assert paused.status == RunStatus.WAITING_APPROVAL
    return paused


def _helper(db: str, log: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FLOWCALL_DATABASE_URL": db, "RESUME_TEST_LOG": str(log), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(HELPER), *args],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _raw_row(flowcall: FlowCall, run_id: str) -> tuple[str, dict | None]:
    with flowcall.store.engine.connect() as conn:
        return tuple(conn.execute(select(RunRow.status, RunRow.checkpoint).where(RunRow.id == run_id)).one())


def _executions(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_two_processes_resume_a_run_once(db_url: str, flowcalls, log: Path, tmp_path: Path) -> None:  # noqa: F811
    paused = _pause(flowcalls)
    go = tmp_path / "go"
    resumers = [_helper(db_url, log, "resume", paused.id, str(go)) for _ in range(2)]
    try:
        for resumer in resumers:  # both are started and connected before either resumes
            assert resumer.stdout.readline().strip() == "ready", resumer.stderr.read()
        go.touch()
        ended = [(*r.communicate(timeout=120), r.returncode) for r in resumers]
    finally:
        for resumer in resumers:
            resumer.kill()
    assert sorted(code for _, _, code in ended) == [0, 2], ended
    out, err, _ = next(e for e in ended if e[2] == 0)
    assert out.strip() == "done" and err == ""
    _, err, _ = next(e for e in ended if e[2] == 2)
    assert len(err.strip().splitlines()) == 1 and err.startswith(
        f"error: run {paused.id} {TAKEN} {paused.id}`"
    ), err

    assert len(_executions(log)) == 1  # the approved destructive call ran once
    run = flowcalls([]).store.get_run(paused.id)
    assert run.status == RunStatus.SUCCEEDED and run.final_answer == "done"
    assert [s.kind for s in run.steps].count(StepKind.TOOL_CALL) == 1
    assert [s.seq for s in run.steps] == list(range(1, len(run.steps) + 1))
    assert _raw_row(flowcalls([]), paused.id) == (RunStatus.SUCCEEDED, None)  # finished: no paused state left


def test_a_resumer_killed_right_after_claiming_leaves_the_paused_state(
    db_url: str,  # noqa: F811
    flowcalls,
    log: Path,
) -> None:
    """A process that dies (SIGKILL) after claiming a run, before anything ran, leaves the run
    `running` with its paused state (the checkpoint) still in the database, and the steps say
    how far it got. Its owner is gone, so it reads `interrupted`, and a resume goes on from
    that state: the call still needs a person, and runs once."""
    paused = _pause(flowcalls)
    flowcall = flowcalls(["done"])
    saved = flowcall.store.get_checkpoint(paused.id)
    resumer = _helper(db_url, log, "hang", paused.id)
    try:
        assert resumer.stdout.readline().strip() == "claimed", resumer.stderr.read()
        os.kill(resumer.pid, signal.SIGKILL)
        assert resumer.wait(timeout=30) == -signal.SIGKILL
    finally:
        resumer.kill()
        resumer.communicate()

    assert _raw_row(flowcall, paused.id) == (RunStatus.RUNNING, saved)
    assert saved["v"] == 1 and [c["name"] for c in saved["pending"]] == ["delete_report"]
    assert len(flowcall.store.get_run(paused.id).steps) == len(paused.steps)  # it was killed before any step
    assert flowcall.store.get_run(paused.id).status == RunStatus.INTERRUPTED
    assert flowcall.resume(paused.id, approver=None).status == RunStatus.WAITING_APPROVAL  # asks again
    assert _executions(log) == []
    resumed = flowcall.resume(paused.id, approver=approve_all)
    assert resumed.status == RunStatus.SUCCEEDED, resumed.error
    assert len(_executions(log)) == 1


def test_the_checkpoint_has_a_version_and_an_unknown_one_is_refused(flowcalls, log: Path) -> None:
    paused = _pause(flowcalls)
    flowcall = flowcalls(["done"])
    saved = flowcall.store.get_checkpoint(paused.id)
    assert saved["v"] == 1

    def store_checkpoint(checkpoint: dict) -> None:
        with flowcall.store.engine.begin() as conn:
            conn.execute(update(RunRow).where(RunRow.id == paused.id).values(checkpoint=checkpoint))

    store_checkpoint({**saved, "v": 2})
    with pytest.raises(ConfigError, match="format version 2, and this FlowCall reads version 1 only"):
        flowcall.resume(paused.id, approver=approve_all)
    assert flowcall.store.get_run(paused.id).status == RunStatus.WAITING_APPROVAL  # refused before the claim
    assert _executions(log) == []

    store_checkpoint({k: v for k, v in saved.items() if k != "v"})  # saved before the field existed
    resumed = flowcall.resume(paused.id, approver=approve_all)
    assert resumed.status == RunStatus.SUCCEEDED and len(_executions(log)) == 1


def test_a_state_older_than_the_runs_steps_is_not_resumed(flowcalls, log: Path) -> None:
    """A resumer that read the run before it was resumed and paused again has the older state and
    steps: its claim fails (the step count differs), so the older pending call never runs again."""
    paused = _pause(flowcalls)
    stale = flowcalls([]).store.get_checkpoint(paused.id)
    again = flowcalls([[("delete_report", {"path": "q4.pdf"})]])
    only_q3 = lambda call, tool: approve_all(call, tool) if call.arguments["path"] == "q3.pdf" else None  # noqa: E731
    repaused = again.resume(paused.id, approver=only_q3)  # q3 deleted; the model asks for q4, which waits
    assert repaused.status == RunStatus.WAITING_APPROVAL and len(_executions(log)) == 1
    engine = Engine(again.registry, again.provider_factory, again.store)
    with pytest.raises(ConfigError, match="already being resumed"):
        engine.resume(paused, FLOW, stale, approver=approve_all)  # `paused` has the steps of the first pause
    assert again.store.get_run(paused.id).status == RunStatus.WAITING_APPROVAL and len(_executions(log)) == 1


def test_the_studio_shows_why_it_did_not_continue_a_run_another_resumer_took(
    log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Continue the run on the Run page while the CLI (another store here) claims it first: the
    page runs nothing and keeps the one-line reason on screen."""
    url = os.environ["FLOWCALL_DATABASE_URL"]  # the studio's database (tests/conftest.py)
    paused = service(url, [[("delete_report", {"path": "q3.pdf"})]]).run(FLOW, "delete the Q3 report")
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    app.run()
    app.switch_page("pages/run.py")
    app.session_state["run_id"] = paused.id
    app.run()
    assert any("waits for you" in w.value for w in app.warning), app.exception

    other = Store.open(url)  # a second connection, as another process has
    resume = FlowCall.resume

    def taken_first(self: FlowCall, run_id: str, **kwargs: object) -> Run:
        other.run_resumed(other.get_run(run_id))  # the CLI claims the run just before the studio does
        return resume(self, run_id, **kwargs)

    monkeypatch.setattr(FlowCall, "resume", taken_first)
    try:
        next(b for b in app.button if b.label == "Continue the run").click().run()
        followed(app, paused.id)  # the runner tried, and says why it could not
    finally:
        other.close()
    assert not app.exception
    assert any(TAKEN in e.value.replace("\\", "") for e in app.error), [e.value for e in app.error]
    assert _executions(log) == []
