"""Staff directory: look an employee up by name in the bundled sample table (data/staff.csv).

Seed 002's example plugin answered an employee's age by name; here 张三 is 36, as there.
"""

from __future__ import annotations

import csv
import re
from typing import Any

from flowcall.core.config import data_dir
from flowcall.tools.python_plugins import tool


@tool("hr/v1/lookup_employee", read_only=True)
def lookup_employee(name: str) -> dict[str, Any]:
    """按姓名查询员工信息:部门、职位、年龄、邮箱、分机、办公地点、入职日期。用户问某位同事或员工的信息时使用。
    Look up an employee by name.

    Args:
        name: 员工姓名(中文或英文),例如:张三、Alice Chen;也可用工号,例如 E1001
    """
    wanted = _key(name)
    if not wanted:
        raise ValueError("name is empty; give an employee's name such as 张三 or Alice Chen")
    staff = load_staff()
    exact = [e for e in staff if wanted in {_key(e["name"]), _key(e["english_name"]), _key(e["employee_id"])}]
    if exact:
        return _answer(name, exact, partial=False)
    partial = [e for e in staff if wanted in _key(e["name"]) or wanted in _key(e["english_name"])]
    if partial:
        return _answer(name, partial, partial=True)
    raise ValueError(
        f"no employee matches '{name}'; check the spelling or give a full name such as 张三 or Alice Chen"
    )


def load_staff() -> list[dict[str, Any]]:
    path = data_dir() / "staff.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"staff table {path} is missing; restore plugins/data or fix FLOWCALL_DATA_DIR"
        )
    with path.open(encoding="utf-8", newline="") as f:
        return [{**row, "age": int(row["age"])} for row in csv.DictReader(f)]


def _key(text: str) -> str:
    """Case and spacing never decide a match: "alice  chen" is Alice Chen, "张 三" is 张三."""
    return re.sub(r"\s+", "", text.casefold())


def _answer(name: str, found: list[dict[str, Any]], *, partial: bool) -> dict[str, Any]:
    if len(found) == 1:
        return {**found[0], "note": f"partial match for '{name}'"} if partial else found[0]
    return {
        "matches": found,
        "note": f"{len(found)} employees match '{name}'; ask which one is meant",
    }
