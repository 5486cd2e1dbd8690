"""create_task and list_tasks against a real SQLite database in tmp_path."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json

import pytest
from pydantic import ValidationError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("flowcall.store") is None,
    reason="flowcall.store (open_store) is not written yet; the task plugins need it",
)


@pytest.fixture(autouse=True)
def database(monkeypatch, tmp_path):
    monkeypatch.setenv("FLOWCALL_DATABASE_URL", f"sqlite:///{tmp_path / 'tasks.db'}")
    yield
    from flowcall.store import open_store

    open_store().close()


def test_create_task_as_in_seed_000(call) -> None:
    task = call("create_task", title="写周报", priority=1, due_date="2025-08-15")
    assert task["title"] == "写周报" and task["priority"] == 1 and task["due_date"] == "2025-08-15"
    assert isinstance(task["id"], int)
    created = dt.datetime.fromisoformat(task["created_at"])
    assert abs(dt.datetime.now(dt.timezone.utc) - created) < dt.timedelta(minutes=1)
    json.dumps(task)


def test_defaults_and_listing(call) -> None:
    assert call("list_tasks") == {"tasks": []}
    first = call("create_task", title="  Call   Alice ")
    second = call("create_task", title="买牛奶", priority=3)
    assert first["title"] == "Call Alice" and first["priority"] == 2 and first["due_date"] is None
    listed = call("list_tasks")["tasks"]
    assert listed == [first, second]
    json.dumps(listed, ensure_ascii=False)


@pytest.mark.parametrize("title", ["", "   ", "\n\t"])
def test_empty_title_is_refused(call, title: str) -> None:
    with pytest.raises(ValueError, match="title is empty"):
        call("create_task", title=title)
    assert call("list_tasks") == {"tasks": []}


def test_overlong_title_is_refused(call) -> None:
    with pytest.raises(ValueError, match="keep it under 200"):
        call("create_task", title="x" * 201)


@pytest.mark.parametrize(
    "arguments",
    [
        {"title": "a", "priority": 4},
        {"title": "a", "due_date": "明天"},
        {"title": "a", "due_date": "2025-13-01"},
        {"priority": 1},
        {"title": "a", "owner": "me"},
    ],
    ids=["priority-4", "due-text", "due-month-13", "no-title", "unknown-field"],
)
def test_bad_arguments_never_reach_the_database(call, arguments: dict) -> None:
    with pytest.raises(ValidationError):
        call("create_task", **arguments)
    assert call("list_tasks") == {"tasks": []}


def test_a_run_writes_its_task_to_the_run_s_database(tmp_path) -> None:
    """FLOWCALL_DATABASE_URL (the fixture above) names another database than the service's:
    the task goes where the run is recorded, not to the process-wide store."""
    from flowcall.core.spec import DecisionConfig, Flow
    from flowcall.core.steps import RunStatus
    from flowcall.providers.scripted import ScriptedProvider
    from flowcall.service.front import FlowCall
    from flowcall.store import open_store

    run_db = FlowCall.open(f"sqlite:///{tmp_path / 'run.db'}").store
    service = FlowCall(
        store=run_db,
        provider_factory=lambda cfg: ScriptedProvider(
            [[("create_task", {"title": "写周报", "priority": 1})], "记好了"]
        ),
    )
    flow = Flow(
        name="tasks",
        tools=["task/v1/create_task"],
        max_rounds=2,
        decision=DecisionConfig(provider="scripted"),
    )
    try:
        run = service.run(flow, "添加任务:写周报")
        assert run.status == RunStatus.SUCCEEDED and run.final_answer == "记好了"
        assert [t["title"] for t in run_db.list_tasks()] == ["写周报"]
        assert open_store().list_tasks() == []  # the environment's database got nothing
    finally:
        run_db.close()


def test_add_task_takes_the_priority_as_a_word_and_stores_the_number(call) -> None:
    high = call("add_task", title="写周报", priority="high", due_date="2026-12-05")
    plain = call("add_task", title="买牛奶")
    assert (high["priority"], high["due_date"], plain["priority"]) == (1, "2026-12-05", 2)
    assert call("add_task", title="整理书架", priority="low")["priority"] == 3
    assert [t["title"] for t in call("list_tasks")["tasks"]] == ["写周报", "买牛奶", "整理书架"]


def test_add_task_refuses_a_number_for_the_priority(call) -> None:
    with pytest.raises(Exception, match="priority"):
        call("add_task", title="x", priority=1)
    assert call("list_tasks") == {"tasks": []}
