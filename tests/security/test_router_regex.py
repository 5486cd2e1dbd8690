"""A flow's router rule that backtracks catastrophically must not hold a run (ReDoS).

Python's `re` holds the GIL while it matches, so a runaway match cannot even be timed out from
another thread: each attempt runs in a child process with a time limit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXT = "a" * 60 + "!"
# (a+)+$: 2**60 ways to split the a's before each failure; (a|aa)+$ backtracks in `regex` too
PATTERNS = ["(a+)+$", "(a|aa)+$"]
PATTERN = PATTERNS[1]


def run_isolated(code: str, limit_s: float = 30) -> tuple[str, str]:
    """(stdout, a note) of `code` in a child process, killed after `limit_s`."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=limit_s,
        )
    except subprocess.TimeoutExpired:
        return "", f"still matching after {limit_s:g} s (killed)"
    return done.stdout.strip(), f"exit {done.returncode}" + (
        f": {done.stderr[-300:]}" if done.returncode else ""
    )


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_catastrophic_rule_pattern_counts_as_no_match_within_a_second(attack, pattern):
    attack.tried(
        f"a router rule {pattern!r} against a message of 60 a's and '!'",
        expected="no match, returned within 1 s",
    )
    out, note = run_isolated(f"""
        import time
        from flowcall.calling.router import Rule, rule_matches
        from flowcall.core.messages import ToolSpec
        tool = ToolSpec(name="t", description="", parameters={{"type": "object", "properties": {{}}}})
        started = time.monotonic()
        chosen = rule_matches([Rule({pattern!r}, "t")], {TEXT!r}, [tool])
        print(len(chosen), round(time.monotonic() - started, 3))
    """)
    attack.observed(f"{note}; matches and seconds: {out!r}")
    assert out, note
    matches, seconds = out.split()
    assert matches == "0" and float(seconds) < 1.0


def test_a_routed_run_with_a_catastrophic_rule_finishes(attack):
    attack.tried(
        f"a flow on the router way with rule {PATTERN!r} -> get_time, asked 60 a's and '!'",
        expected="the run succeeds within seconds; the model chooses instead of the rule",
    )
    out, note = run_isolated(f"""
        import time
        from flowcall.engine.loop import Engine
        from flowcall.providers.base import Capabilities
        from flowcall.providers.scripted import ScriptedProvider
        from flowcall.core.spec import DecisionConfig, Flow, RouterRule
        from flowcall.core.steps import MemorySink
        from flowcall.tools.python_plugins import build_tool
        from flowcall.tools.registry import ToolRegistry

        def get_time() -> str:
            \"\"\"The current time.\"\"\"
            return "10:00"

        rule = RouterRule(pattern={PATTERN!r}, tool="get_time")
        flow = Flow(name="r", tools=["t/v1/get_time"], router_rules=[rule],
                    decision=DecisionConfig(provider="scripted", calling_way="router"))
        caps = Capabilities(native_tools=False, json_schema_output=True, grammar=True)
        provider = ScriptedProvider(['{{"tools": ["none"]}}', '{{"answer": "no tool"}}'], capabilities=caps)
        started = time.monotonic()
        registry = ToolRegistry([build_tool(get_time, "t/v1/get_time")])
        run = Engine(registry, lambda cfg: provider, MemorySink()).run(flow, {TEXT!r})
        print(run.status.value, round(time.monotonic() - started, 3))
    """)
    attack.observed(f"{note}; status and seconds: {out!r}")
    assert out, note
    status, seconds = out.split()
    assert status == "succeeded" and float(seconds) < 5
