"""The attack catalogue: every test here tries one attack and proves it had no effect.

Each test names its attack and the outcome FlowCall must show, then records what it observed:

    def test_x(attack):
        attack.tried("a flow's MCP stdio command runs on `flowcall run`", expected="exit 2, nothing started")
        ...                                   # the attack, for real
        attack.observed(f"exit {code}, file created: {marker.exists()}")
        assert code == 2 and not marker.exists()

`benchmarks/security_report.py` runs this folder with FLOWCALL_ATTACK_REPORT set and prints the
table; a test that fails (or errors) counts as an escape.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import pytest


@dataclass
class Attack:
    test: str
    attack: str = ""
    expected: str = ""
    seen: list[str] = field(default_factory=list)

    def tried(self, attack: str, *, expected: str) -> None:
        self.attack, self.expected = attack, expected

    def observed(self, what: str) -> None:
        self.seen.append(what)


@pytest.fixture
def attack(request):
    record = Attack(test=request.node.nodeid)
    request.node._attack = record
    yield record


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    path = os.environ.get("FLOWCALL_ATTACK_REPORT")
    record = getattr(item, "_attack", None)
    if not path or record is None:
        return
    # one line per test: its call phase, or the setup phase if that already failed
    if report.when == "call" or (report.when == "setup" and not report.passed):
        line = {
            **asdict(record),
            "outcome": report.outcome,
            "error": (str(report.longrepr).splitlines() or [""])[-1][:200] if report.failed else "",
        }
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
