"""Durable runs: a run killed mid-way shows `interrupted` and resumes from its last committed step;
a call that may have run already is repeated only when its tool is read-only; cancel and Ctrl-C
end a run `cancelled`; the hidden context (a loaded table) survives a pause, a crash and a re-run.

The killed runs are real processes (tests/durable_helper.py) on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from flowcall.core.errors import ConfigError
from flowcall.core.messages import Message
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus, StepKind, utcnow
from flowcall.engine.approval import MAYBE_RAN_NOTE, approve_all
from flowcall.engine.loop import Engine
from flowcall.engine.loop_state import LoopState
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.store import Store
from flowcall.store.models import RunRow
from flowcall.tools.registry import ToolRegistry
from tests.durable_helper import FLOW, parse_plan, service

# The store tests' databases: db_url is an empty SQLite file, then a PostgreSQL database.
from tests.store.conftest import db_url, pg_database  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent
HELPER = Path(__file__).resolve().parent / "durable_helper.py"
PLAN = "read:a,write:b,read:c"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DURABLE_TEST_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def flowcall(db_url: str, work: Path) -> Iterator[FlowCall]:  # noqa: F811
    made = service(db_url, parse_plan(PLAN))
    yield made
    made.store.close()


def _start(db_url: str, work: Path, hang_at: str, **env: str) -> subprocess.Popen:  # noqa: F811
    environment = {
        **os.environ,
        "FLOWCALL_DATABASE_URL": db_url,
        "DURABLE_TEST_DIR": str(work),
        "PYTHONPATH": str(ROOT),
        **env,
    }
    return subprocess.Popen(
        [sys.executable, str(HELPER), "run", PLAN, hang_at],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_started(work: Path, process: subprocess.Popen, within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while not (work / "started").exists():
        if process.poll() is not None:
            raise AssertionError(f"the run's process ended early: {process.communicate()}")
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.05)


def _executions(work: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in (work / "executions.log").read_text().splitlines()]


def _killed_run(flowcall: FlowCall, db_url: str, work: Path, hang_at: str):  # noqa: F811
    process = _start(db_url, work, hang_at)
    _wait_started(work, process)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    (work / "started").unlink()
    runs = flowcall.store.list_runs(flow_name=FLOW.name)
    assert len(runs) == 1
    return flowcall.store.get_run(runs[0].id)


def _uninterrupted_answer(db_url: str, work: Path) -> str:  # noqa: F811
    process = _start(db_url, work, "")
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    return json.loads(out.splitlines()[-1])["answer"]


def test_a_killed_run_is_interrupted_and_resumes_repeating_only_a_read_only_call(flowcall, db_url, work):  # noqa: F811
    run = _killed_run(flowcall, db_url, work, hang_at="c")
    assert run.status == RunStatus.INTERRUPTED
    assert [s.name for s in run.steps if s.kind == StepKind.TOOL_CALL] == ["read_item", "write_item"]
    assert flowcall.store.list_runs(status="interrupted")[0].id == run.id
    assert flowcall.store.list_runs(status="running") == []

    resumed = flowcall.resume(run.id, approver=None)  # read_item is safe to repeat: nobody is asked

    assert resumed.status == RunStatus.SUCCEEDED, resumed.error
    stored = flowcall.store.get_run(run.id)
    assert [s.model_dump() for s in stored.steps[: len(run.steps)]] == [s.model_dump() for s in run.steps]
    assert _executions(work) == ["read:a", "write:b", "read:c", "read:c"]  # c again, b never twice
    assert stored.final_answer == _uninterrupted_answer(db_url, work)


def test_a_call_that_may_have_run_and_changes_the_world_waits_for_a_person(flowcall, db_url, work):  # noqa: F811
    run = _killed_run(flowcall, db_url, work, hang_at="b")

    paused = flowcall.resume(run.id, approver=None)

    assert paused.status == RunStatus.WAITING_APPROVAL
    waiting = [s for s in paused.steps if s.kind == StepKind.APPROVAL]
    assert waiting[-1].name == "write_item" and waiting[-1].note == MAYBE_RAN_NOTE
    assert _executions(work) == ["read:a", "write:b"]  # not run again unasked

    finished = flowcall.resume(run.id, approver=approve_all)
    assert finished.status == RunStatus.SUCCEEDED, finished.error
    assert _executions(work) == ["read:a", "write:b", "write:b", "read:c"]
    assert finished.final_answer == _uninterrupted_answer(db_url, work)


def test_two_resumers_of_an_interrupted_run_give_one_run(flowcall, db_url, work):  # noqa: F811
    run = _killed_run(flowcall, db_url, work, hang_at="c")
    seen_by_second = flowcall.store.get_run(run.id)
    flowcall.resume(run.id, approver=None)
    with pytest.raises(ConfigError, match="already being resumed"):
        flowcall.store.run_resumed(seen_by_second)
    assert _executions(work).count("read:c") == 2


def test_cancel_stops_a_run_in_another_process_at_its_next_step(flowcall, db_url, work):  # noqa: F811
    process = _start(db_url, work, hang_at="b", DURABLE_HANG_S="2")
    _wait_started(work, process)
    run_id = flowcall.store.list_runs(flow_name=FLOW.name)[0].id
    assert flowcall.store.get_run(run_id).status == RunStatus.RUNNING  # its owner is alive

    flowcall.cancel(run_id, by="the test")

    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["status"] == "cancelled"
    stored = flowcall.store.get_run(run_id)
    assert stored.status == RunStatus.CANCELLED and stored.error == "cancelled by the test"
    assert stored.steps[-1].name == "write_item"  # the call in flight happened: it is recorded
    assert _executions(work) == ["read:a", "write:b"]  # and nothing after it ran
    with pytest.raises(ConfigError, match="already ended"):
        flowcall.cancel(run_id)


def test_ctrl_c_marks_the_run_cancelled(flowcall, db_url, work):  # noqa: F811
    process = _start(db_url, work, hang_at="b")
    _wait_started(work, process)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    run = flowcall.store.list_runs(flow_name=FLOW.name)[0]
    assert run.status == RunStatus.CANCELLED and run.error == "stopped with Ctrl-C"


def test_an_owner_on_another_host_holds_the_run_until_its_lease_runs_out(flowcall, db_url, work):  # noqa: F811
    run = flowcall.run(FLOW, "do the plan")
    for lease, status in (
        (utcnow() + timedelta(minutes=5), RunStatus.RUNNING),
        (utcnow() - timedelta(seconds=1), RunStatus.INTERRUPTED),
    ):
        with flowcall.store._session() as s, s.begin():
            s.execute(
                update(RunRow)
                .where(RunRow.id == run.id)
                .values(status="running", owner="another-host/4242/1", lease_until=lease)
            )
        assert flowcall.store.get_run(run.id).status == status


def test_a_dead_pid_on_this_host_is_interrupted_even_with_a_lease(flowcall, work):
    run = flowcall.run(FLOW, "do the plan")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    import socket

    with flowcall.store._session() as s, s.begin():
        s.execute(
            update(RunRow)
            .where(RunRow.id == run.id)
            .values(
                status="running",
                owner=f"{socket.gethostname()}/{dead.stdout.strip()}/1",
                lease_until=utcnow() + timedelta(minutes=5),
            )
        )
    assert flowcall.store.get_run(run.id).status == RunStatus.INTERRUPTED


def test_a_lease_is_renewed_while_a_long_step_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("FLOWCALL_LEASE_S", "1.5")
    store = Store.open(f"sqlite:///{tmp_path / 'lease.db'}")
    seen = []

    def slow(request):
        first = store.get_run(store.list_runs()[0].id).lease_until
        time.sleep(2.5)  # longer than the lease: only the keeper thread can keep it
        seen.append((first, store.get_run(store.list_runs()[0].id)))
        return "done"

    flow = Flow(name="slow", decision=DecisionConfig(provider="scripted"))
    Engine(ToolRegistry([]), lambda cfg: ScriptedProvider([slow]), store).run(flow, "q")
    first, during = seen[0]
    assert during.status == RunStatus.RUNNING and during.lease_until > first
    store.close()


# --- the hidden context (seed 003) is saved with the run's state ------------------------------

DATA_FLOW = Flow(
    name="clean",
    tools=["read_csv", "drop_missing"],
    max_rounds=3,
    needs_approval=["drop_missing"],
    decision=DecisionConfig(provider="scripted"),
)


@pytest.fixture
def data_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("a,b\n1,x\n,y\n3,\n4,z\n")
    monkeypatch.setenv("FLOWCALL_DATA_DIR", str(tmp_path / "data"))

    def make(script: list) -> FlowCall:
        made = FlowCall.open()
        made.provider_factory = lambda cfg: ScriptedProvider(list(script))
        return made

    yield make


def test_a_paused_run_keeps_the_loaded_table(data_service):
    script = [[("read_csv", {"path": "t.csv"})], [("drop_missing", {})], "cleaned"]
    paused = data_service(script).run(DATA_FLOW, "clean t.csv")
    assert paused.status == RunStatus.WAITING_APPROVAL

    resumed = data_service(script[2:]).resume(paused.id, approver=approve_all)

    assert resumed.status == RunStatus.SUCCEEDED, resumed.error
    dropped = [s for s in resumed.steps if s.name == "drop_missing" and s.kind == StepKind.TOOL_CALL][0]
    assert dropped.error_code is None and dropped.result["rows"] == 2 and dropped.result["rows_dropped"] == 2


def test_a_rerun_from_a_later_step_starts_with_the_table_as_it_was(data_service):
    script = [[("read_csv", {"path": "t.csv"})], [("drop_missing", {})], "cleaned"]
    done = data_service(script).run(DATA_FLOW, "clean t.csv", approver=approve_all)
    assert done.status == RunStatus.SUCCEEDED
    step = [s for s in done.steps if s.name == "drop_missing" and s.kind == StepKind.TOOL_CALL][0]

    rerun = data_service(["cleaned again"]).rerun_from(
        done.id, step.seq, arguments={"columns": ["a"]}, approver=approve_all
    )

    assert rerun.status == RunStatus.SUCCEEDED, rerun.error
    again = [s for s in rerun.steps if s.name == "drop_missing" and s.kind == StepKind.TOOL_CALL][-1]
    assert again.error_code is None and again.result["rows"] == 3  # only the row missing `a` went


def test_a_saved_table_round_trips_and_a_hostile_state_is_refused():
    import pandas as pd

    frame = pd.DataFrame({"n": [1, 2], "when": ["2026-01-01", None], "x": [1.5, None]})
    state = LoopState(
        messages=[Message(role="user", content="q")], budget=1, artifacts={"table": frame, "k": [1]}
    )
    back = LoopState.restore(json.loads(json.dumps(state.checkpoint())))
    pd.testing.assert_frame_equal(back.artifacts["table"], frame)
    assert back.artifacts["k"] == [1]
    hostile = {**state.checkpoint(), "artifacts": {"table": {"type": "pickle", "data": "gASV..."}}}
    with pytest.raises(ConfigError, match="unknown type 'pickle'"):
        LoopState.restore(hostile)
    with pytest.raises(ConfigError, match="incomplete or malformed"):
        LoopState.restore({"v": 1, "messages": "nope"})


# --- the CLI ------------------------------------------------------------------------------------


def _cli(flowcall: FlowCall, monkeypatch: pytest.MonkeyPatch, *args: str):
    from click.testing import CliRunner

    from flowcall.cli import main as cli

    monkeypatch.setattr(FlowCall, "open", classmethod(lambda cls, database_url=None: flowcall))
    return CliRunner().invoke(cli.cli, list(args))


def test_the_cli_lists_resumes_and_cancels_interrupted_runs(flowcall, db_url, work, monkeypatch):  # noqa: F811
    run = _killed_run(flowcall, db_url, work, hang_at="b")

    listed = _cli(flowcall, monkeypatch, "runs", "list", "--status", "interrupted")
    assert listed.exit_code == 0 and run.id[:8] in listed.output and "interrupted" in listed.output

    paused = _cli(flowcall, monkeypatch, "runs", "resume", run.id[:8], "--quiet")
    assert paused.exit_code == 3, paused.output  # write_item may have run: it waits for a person
    assert "waits for approval" in paused.output

    cancelled = _cli(flowcall, monkeypatch, "runs", "cancel", run.id[:8])
    assert cancelled.exit_code == 0 and f"run {run.id} cancelled" in cancelled.output
    assert flowcall.store.get_run(run.id).status == RunStatus.CANCELLED
    again = _cli(flowcall, monkeypatch, "runs", "cancel", run.id[:8])
    # main() prints a ConfigError as one line and exits 2 (tests/test_cli.py)
    assert isinstance(again.exception, ConfigError) and "already ended (cancelled)" in str(again.exception)
    assert _executions(work) == ["read:a", "write:b"]


def test_the_studio_ending_its_script_mid_run_cancels_the_run(flowcall):
    """Streamlit ends a page's script on a click (Stop) by raising its StopException or
    RerunException (BaseExceptions) inside the step callback: the run ends `cancelled`, not
    `running` for ever, and the exception goes on to Streamlit."""

    class RerunException(
        BaseException
    ):  # the name is what the engine reads; streamlit is not imported below it
        pass

    def click_during(step):
        if step.kind == StepKind.TOOL_CALL:
            raise RerunException()

    with pytest.raises(RerunException):
        flowcall.run(FLOW, "do the plan", on_step=click_during)
    run = flowcall.store.list_runs(flow_name=FLOW.name)[0]
    assert run.status == RunStatus.CANCELLED and run.error == "stopped in the studio"
    assert [s.name for s in flowcall.store.get_run(run.id).steps if s.kind == StepKind.TOOL_CALL] == [
        "read_item"
    ]
