"""A JSON Schema `pattern` from outside must not hang FlowCall (ReDoS), wherever it is checked.

A tool's parameter schema (an MCP server's inputSchema, an OpenAPI document), a shared flow's
polish `output_schema` and a dataset's schema are someone else's text. Each is checked here with
a pattern that backtracks catastrophically on 32 a's and a '!', in a child process killed
after a limit: with Python's `re` (plain jsonschema) the check never returns."""

from __future__ import annotations

import pytest

from tests.security.test_router_regex import run_isolated

EVIL = ["^(a|a)+$", "^(a+)+$", "(a|aa)+$"]
TEXT = "a" * 32 + "!"


@pytest.mark.parametrize("pattern", EVIL)
def test_a_tool_argument_against_a_catastrophic_pattern_is_refused_in_seconds(attack, pattern):
    attack.tried(
        f"an MCP/HTTP tool whose inputSchema says code: pattern {pattern!r}, called with 32 a's and '!'",
        expected="the call is refused as INVALID_ARGUMENT naming the field and the pattern, within 5 s",
    )
    out, note = run_isolated(f"""
        import time
        from flowcall.core.messages import ToolCall
        from flowcall.tools.base import Tool
        from flowcall.tools.execute import check_call
        schema = {{"type": "object", "properties": {{"code": {{"type": "string", "pattern": {pattern!r}}}}}}}
        tool = Tool(name="t", version="evil/v1/t", description="", parameters=schema, func=lambda **kw: None)
        started = time.monotonic()
        outcome = check_call(ToolCall(id="1", name="t", arguments={{"code": {TEXT!r}}}), {{"t": tool}})
        print(round(time.monotonic() - started, 2), outcome.error_code, "|", outcome.error_message)
    """)
    attack.observed(f"{note}; {out!r}")
    assert out, note
    seconds, rest = out.split(" ", 1)
    assert float(seconds) < 5 and rest.startswith("INVALID_ARGUMENT")
    # `regex` settles some of these at once (no match); the others run out of time, never hang
    assert "code:" in rest and pattern in rest and ("still matching" in rest or "does not match" in rest)


def test_a_shared_flows_polish_schema_with_a_catastrophic_pattern_does_not_hang_the_run(attack):
    pattern = EVIL[0]
    attack.tried(
        f"a shared flow whose polish output_schema holds pattern {pattern!r}; the answer is 32 a's and '!'",
        expected="the run ends failed, naming the pattern, within 10 s",
    )
    out, note = run_isolated(f"""
        import json, time
        from flowcall.engine.loop import Engine
        from flowcall.providers.scripted import ScriptedProvider
        from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
        from flowcall.core.steps import MemorySink
        from flowcall.tools.registry import ToolRegistry
        schema = {{"type": "object", "properties": {{"code": {{"type": "string", "pattern": {pattern!r}}}}},
                  "required": ["code"]}}
        flow = Flow(name="p", tools=[], decision=DecisionConfig(provider="scripted"),
                    polish=PolishConfig(provider="scripted", output_schema=schema))
        answer = json.dumps({{"code": {TEXT!r}}})
        provider = ScriptedProvider(["no tool needed"] + [answer] * 5)
        started = time.monotonic()
        run = Engine(ToolRegistry([]), lambda cfg: provider, MemorySink()).run(flow, "hi")
        print(round(time.monotonic() - started, 2), run.status.value, "|", run.error)
    """)
    attack.observed(f"{note}; {out!r}")
    assert out, note
    seconds, rest = out.split(" ", 1)
    assert float(seconds) < 10 and rest.startswith("failed") and pattern in rest


def test_the_eval_checker_and_the_dataset_check_share_the_bound(attack):
    pattern = EVIL[1]
    attack.tried(
        f"schemas.validator (eval, rescore, the schema form) on pattern {pattern!r} and 32 a's and '!'",
        expected="not valid, within 5 s",
    )
    out, note = run_isolated(f"""
        import time
        from flowcall.core import schemas
        started = time.monotonic()
        valid = schemas.validator({{"type": "string", "pattern": {pattern!r}}}).is_valid({TEXT!r})
        print(round(time.monotonic() - started, 2), valid)
    """)
    attack.observed(f"{note}; {out!r}")
    assert out, note
    seconds, valid = out.split()
    assert float(seconds) < 5 and valid == "False"


def test_pattern_properties_are_bounded_too(attack):
    pattern = EVIL[2]
    attack.tried(
        f"a tool schema with patternProperties {{{pattern!r}: ...}}, an argument named 32 a's and '!'",
        expected="checked within 5 s",
    )
    out, note = run_isolated(f"""
        import time
        from flowcall.core import schemas
        started = time.monotonic()
        schema = {{"type": "object", "patternProperties": {{{pattern!r}: {{"type": "integer"}}}}}}
        errors = list(schemas.validator(schema).iter_errors({{{TEXT!r}: "x"}}))
        print(round(time.monotonic() - started, 2), len(errors))
    """)
    attack.observed(f"{note}; {out!r}")
    assert out, note
    seconds, count = out.split()
    assert float(seconds) < 5 and int(count) >= 1
