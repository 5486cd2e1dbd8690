"""An experiment whose process is killed (SIGKILL: no handler runs) does not stay "running" for
ever: `flowcall experiments resume` goes on with it. The items scored before the kill are kept
and not run again, the run that was cut off goes on from its last committed step (its tool is
not executed twice), a decision-only run that was cut off is asked again in a new run (the old
one ends failed, saying so), and the experiment ends as if it had never stopped. With a real
killed process (tests/experiment_helper.py), on SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update

from flowcall.core.datasets import DatasetItem
from flowcall.core.errors import ConfigError
from flowcall.core.experiment_record import ExperimentStatus
from flowcall.core.steps import RunStatus, StepKind
from flowcall.eval import experiments
from flowcall.service.front import FlowCall
from flowcall.store import experiments as stored
from flowcall.store.datasets import save_dataset
from flowcall.store.models import RunRow
from flowcall.store.ownership import lease_until, this_process
from tests.experiment_helper import FLOW, service

# The store tests' databases: db_url is an empty SQLite file, then a PostgreSQL database.
from tests.store.conftest import db_url, pg_database  # noqa: F401
from tests.test_cli import flowcall

ROOT = Path(__file__).resolve().parent.parent
HELPER = Path(__file__).resolve().parent / "experiment_helper.py"
WEATHER = [
    {
        "id": "cd",
        "question": "成都 rain?",
        "expect_calls": [{"name": "get_weather", "arguments": {"city": "成都"}}],
        "answer_contains": "yes",
    },
    {
        "id": "bj",
        "question": "北京 rain?",
        "answer_regex": "no$",
        "expect_calls": [{"name": "get_weather", "arguments": {"city": "北京"}}],
    },
    {"id": "hi", "question": "hello", "expect_no_call": True, "answer_equals": "hi there"},
    {
        "id": "sh",
        "question": "上海 rain?",
        "expect_calls": [{"name": "get_weather", "arguments": {"city": "上海"}}],
    },
]
ADD = {
    "name": "add",
    "description": "Add two numbers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
}
OWN_TOOLS = [
    {
        "id": "sum",
        "question": "1+2?",
        "tools": [ADD],
        "expect_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
    },
    {
        "id": "sum2",
        "question": "what is 1+2 again?",
        "tools": [ADD],
        "expect_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
    },
    {"id": "none", "question": "hello", "tools": [ADD], "expect_no_call": True},
]


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where get_weather writes one line per execution, in this process and in the helper."""
    path = tmp_path / "executions.log"
    monkeypatch.setenv("EXPERIMENT_TEST_LOG", str(path))
    return path


@pytest.fixture
def app(db_url: str, log: Path) -> Iterator[FlowCall]:  # noqa: F811
    made = service(db_url)
    save_dataset(made.store, "weather", [DatasetItem.model_validate(i) for i in WEATHER], source="test")
    save_dataset(made.store, "own-tools", [DatasetItem.model_validate(i) for i in OWN_TOOLS], source="test")
    yield made
    made.store.close()


def _killed_while_running(db_url: str, dataset: str, hang_on: str) -> int:  # noqa: F811
    """Run the experiment in another process, kill it where the model hangs; the experiment id."""
    env = {**os.environ, "FLOWCALL_DATABASE_URL": db_url, "PYTHONPATH": str(ROOT)}
    helper = subprocess.Popen(
        [sys.executable, str(HELPER), dataset, hang_on],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        line = helper.stdout.readline()
        assert line.strip() == "hung", (line, helper.stderr.read() if helper.poll() is not None else "")
        os.kill(helper.pid, signal.SIGKILL)
        helper.wait(timeout=30)
    finally:
        helper.kill()
        helper.communicate(timeout=30)
    found = service(db_url)
    try:
        return stored.list_experiments(found.store)[0].id
    finally:
        found.store.close()


def test_a_killed_experiment_goes_on_from_where_it_stopped_and_no_tool_runs_twice(
    app: FlowCall,
    db_url: str,  # noqa: F811
    log: Path,
):
    # killed while the model writes 北京's answer: 北京's tool has run, its step is committed
    number = _killed_while_running(db_url, "weather", '"rain": false')
    left = stored.get_experiment(app.store, number)
    assert left.status == ExperimentStatus.RUNNING and [i.passed for i in left.items] == [
        True,
        None,
        None,
        None,
    ]
    cut_off = app.store.get_run(left.items[1].run_id)
    assert cut_off.status == RunStatus.INTERRUPTED and log.read_text().splitlines() == ["成都", "北京"]

    done = experiments.resume_experiment(app, number)
    assert done.status == ExperimentStatus.FINISHED and done.summary.runs == 4
    assert [i.passed for i in done.items] == [True, True, True, True], [i.verdicts for i in done.items]
    assert log.read_text().splitlines() == ["成都", "北京", "上海"]  # each tool ran once, 北京's not again
    resumed = app.store.get_run(left.items[1].run_id)  # the same run, gone on from its tool step
    assert resumed.id == cut_off.id and resumed.status == RunStatus.SUCCEEDED
    assert [s.kind for s in resumed.steps].count(StepKind.TOOL_CALL) == 1
    assert resumed.final_answer == "rain tomorrow: no"
    with pytest.raises(ConfigError, match="is finished; only one that still says running"):
        experiments.resume_experiment(app, number)


def test_a_cut_off_decision_only_run_is_asked_again_in_a_new_run_and_the_old_says_why(
    app: FlowCall,
    db_url: str,  # noqa: F811
):
    number = _killed_while_running(db_url, "own-tools", "again")  # killed while the model reads item 2
    left = stored.get_experiment(app.store, number)
    assert [i.passed for i in left.items] == [True, None, None]
    old_run_id = left.items[1].run_id

    done = experiments.resume_experiment(app, number)
    assert done.status == ExperimentStatus.FINISHED and [i.passed for i in done.items] == [True, True, True]
    assert done.items[0].run_id == left.items[0].run_id  # kept, not asked again
    new_run_id = done.items[1].run_id
    assert new_run_id != old_run_id
    old = app.store.get_run(old_run_id)
    assert old.status == RunStatus.FAILED and f"asks again in run {new_run_id}" in old.error
    new = app.store.get_run(new_run_id)
    assert new.status == RunStatus.SUCCEEDED and new.question == old.question
    assert new.final_answer["tool_calls"][0]["arguments"] == {"a": 1, "b": 2}


def test_an_experiment_whose_run_is_live_elsewhere_is_not_resumed(app: FlowCall):
    experiment = experiments.start(app, FLOW, "weather", "weather")
    live = experiment.items[0].run_id
    with (
        app.store.engine.begin() as conn
    ):  # as its own `experiments run` leaves it: running, this process alive
        conn.execute(
            update(RunRow)
            .where(RunRow.id == live)
            .values(status=str(RunStatus.RUNNING), owner=this_process(), lease_until=lease_until())
        )
    with pytest.raises(
        ConfigError, match=f"is still running: run {live[:8]} is being executed by a live process"
    ):
        experiments.resume_experiment(app, experiment.id)
    assert (
        stored.get_experiment(app.store, experiment.id).status == ExperimentStatus.RUNNING
    )  # left as it was
    assert app.store.get_run(experiment.items[1].run_id).status == RunStatus.QUEUED


def test_the_cli_resumes_only_an_experiment_that_still_says_running(app: FlowCall, db_url: str):  # noqa: F811
    done = experiments.run_experiment(app, FLOW, "weather", "weather")
    refused = flowcall("--db", db_url, "experiments", "resume", str(done.id), check=False)
    assert refused.returncode == 2, refused.stderr
    assert f"experiment {done.id} is finished; only one that still says running" in refused.stderr
    assert "experiments resume" not in flowcall("--db", db_url, "experiments", "show", str(done.id)).stdout
    running = experiments.start(app, FLOW, "weather", "weather")
    shown = flowcall("--db", db_url, "experiments", "show", str(running.id)).stdout
    assert f"flowcall experiments resume {running.id}" in shown


def test_an_experiment_left_running_can_be_given_up_and_keeps_what_was_scored(
    app: FlowCall,
    db_url: str,  # noqa: F811
    log: Path,
):
    number = _killed_while_running(db_url, "weather", '"rain": false')
    given_up = flowcall("--db", db_url, "experiments", "cancel", str(number))
    assert f"experiment {number}  cancelled" in given_up.stdout and "stopped: cancelled by" in given_up.stdout
    done = stored.get_experiment(app.store, number)
    assert done.status == ExperimentStatus.CANCELLED and [i.passed for i in done.items] == [
        True,
        None,
        None,
        None,
    ]
    assert done.summary.runs == 1 and done.summary.not_run == 3
    assert {app.store.get_run(i.run_id).status for i in done.items[1:]} == {RunStatus.CANCELLED}
    assert log.read_text().splitlines() == ["成都", "北京"]  # nothing ran after the kill
    again = flowcall("--db", db_url, "experiments", "cancel", str(number), check=False)
    assert again.returncode == 2 and "is cancelled; there is nothing to cancel" in again.stderr
    with pytest.raises(ConfigError, match="is cancelled; only one that still says running"):
        experiments.resume_experiment(app, number)
