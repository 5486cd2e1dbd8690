"""Tasks: a to-do list kept in FlowCall's database (seed 000's task/v1/create_task)."""

from __future__ import annotations

import datetime
from typing import Any, Literal

from flowcall.store import Store, open_store
from flowcall.tools.base import RunContext
from flowcall.tools.python_plugins import tool

MAX_TITLE = 200


@tool("task/v1/create_task")
def create_task(
    context: RunContext,
    title: str,
    priority: Literal[1, 2, 3] = 2,
    due_date: datetime.date | None = None,
) -> dict[str, Any]:
    """创建一个新的待办任务。用户要求添加、记下、安排某件事时使用。
    Create a new to-do task.

    Args:
        title: 任务标题,简短,例如:写周报、Call Alice
        priority: 优先级:1 = 高/紧急 high, 2 = 普通 normal, 3 = 低 low
        due_date: 截止日期 YYYY-MM-DD,例如 2025-08-15;没有就不填
    """
    cleaned = " ".join(title.split())
    if not cleaned:
        raise ValueError("title is empty; give the task a short title such as 写周报")
    if len(cleaned) > MAX_TITLE:
        raise ValueError(f"title is {len(cleaned)} characters; keep it under {MAX_TITLE}")
    return _jsonable(_store(context).add_task(cleaned, priority, due_date))


PRIORITY_NUMBER = {"high": 1, "normal": 2, "low": 3}


@tool("task/v1/add_task")
def add_task(
    context: RunContext,
    title: str,
    priority: Literal["high", "normal", "low"] = "normal",
    due_date: datetime.date | None = None,
) -> dict[str, Any]:
    """创建一个新的待办任务。用户要求添加、记下、安排某件事时使用。
    Create a new to-do task.

    Args:
        title: 任务标题,简短,例如:写周报、Call Alice
        priority: 优先级:high = 高/紧急/重要, normal = 普通, low = 低/不急
        due_date: 截止日期 YYYY-MM-DD;用户没说日期就不填
    """
    # create_task takes 1/2/3: a small model mapped "优先级高" to 2 as often as to 1; words it maps as said.
    # The store keeps the number, so both tools' tasks sort and list alike.
    return create_task(context, title, PRIORITY_NUMBER[priority], due_date)


@tool("task/v1/list_tasks", read_only=True)
def list_tasks(context: RunContext) -> dict[str, Any]:
    """列出所有已创建的任务。用户问有哪些任务、待办时使用。
    List all saved to-do tasks, oldest first.
    """
    return {"tasks": [_jsonable(task) for task in _store(context).list_tasks()]}


def _store(context: RunContext) -> Store:
    """The run's database, where its steps are recorded; without a run (the Plugins page's
    "Try it") the configured one (FLOWCALL_DATABASE_URL)."""
    return context.store if isinstance(context.store, Store) else open_store()


def _jsonable(task: dict[str, Any]) -> dict[str, Any]:
    """The store hands back date and datetime objects; the model is sent JSON."""
    return {k: v.isoformat() if isinstance(v, datetime.date) else v for k, v in task.items()}
