"""lookup_employee on the bundled staff table."""

from __future__ import annotations

import csv

import pytest

from flowcall.core.config import REPO_ROOT

with (REPO_ROOT / "plugins" / "data" / "staff.csv").open(encoding="utf-8", newline="") as _f:
    ROWS = list(csv.DictReader(_f))


def test_table_shape() -> None:
    assert list(ROWS[0]) == [
        "employee_id",
        "name",
        "english_name",
        "department",
        "title",
        "age",
        "email",
        "phone_ext",
        "office",
        "hire_date",
    ]
    assert 18 <= len(ROWS) <= 30
    assert len({r["employee_id"] for r in ROWS}) == len(ROWS)
    assert len({r["name"] for r in ROWS}) == len(ROWS)


def test_zhang_san_is_36_as_in_seed_002(call) -> None:
    employee = call("lookup_employee", name="张三")
    assert employee["age"] == 36 and employee["employee_id"] == "E1001"
    assert "note" not in employee and "matches" not in employee


@pytest.mark.parametrize(
    "name", ["Alice Chen", "alice chen", "  ALICE   CHEN ", "AliceChen", "陈爱丽", "e1012"]
)
def test_exact_name_english_name_or_id(call, name: str) -> None:
    assert call("lookup_employee", name=name)["email"] == "alice.chen@example.com"


@pytest.mark.parametrize("name", ["李四", "王五", "赵敏", "David Miller", "Zhang San"])
def test_every_field_comes_back(call, name: str) -> None:
    employee = call("lookup_employee", name=name)
    assert set(employee) == set(ROWS[0])
    assert isinstance(employee["age"], int)


def test_unique_partial_match_says_so(call) -> None:
    employee = call("lookup_employee", name="Miller")
    assert employee["name"] == "David Miller"
    assert employee["note"] == "partial match for 'Miller'"
    assert call("lookup_employee", name="小雨")["name"] == "林小雨"


@pytest.mark.parametrize(
    ("name", "expected"),
    [("王", {"王五", "王芳", "王丽"}), ("Alice", {"陈爱丽", "王丽"}), ("敏", {"赵敏", "吴敏"})],
)
def test_ambiguous_partial_returns_every_match(call, name: str, expected: set[str]) -> None:
    result = call("lookup_employee", name=name)
    assert {e["name"] for e in result["matches"]} == expected
    assert "ask which one" in result["note"]


def test_exact_beats_partial(call) -> None:
    """'Chen Chen' is 陈晨's English name; it must not become a partial list of every Chen."""
    assert call("lookup_employee", name="Chen Chen")["name"] == "陈晨"


@pytest.mark.parametrize("name", ["诸葛亮", "Bob Smith"])
def test_nobody(call, name: str) -> None:
    with pytest.raises(ValueError, match=f"no employee matches '{name}'; check the spelling"):
        call("lookup_employee", name=name)


@pytest.mark.parametrize("name", ["", "   "])
def test_empty_name(call, name: str) -> None:
    with pytest.raises(ValueError, match="name is empty"):
        call("lookup_employee", name=name)
