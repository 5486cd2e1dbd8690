"""An answer no tool result backs says so: the run's outcome, the polish model's prompt, the CLI.

Driven by the scripted provider: every way a wanted tool can give no result (refused by a
check, failed, denied, never called although the flow demands it)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from flowcall.cli.main import cli
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, MemorySink, RunStatus, StepKind
from flowcall.engine.approval import Decision
from flowcall.engine.final_answer import NO_TOOL_RESULT_NOTE
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.testing import SCHEMA_MODEL
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry


def get_weather(location: str) -> dict:
    """Weather for a city.

    Args:
        location: city name, e.g. 北京
    """
    return {"location": location, "weather": "小雨", "temp_c": 12}


def broken(location: str) -> str:
    """Always fails.

    Args:
        location: a city
    """
    raise RuntimeError("upstream service down")


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(
        [build_tool(get_weather, "weather/v1/get_weather"), build_tool(broken, "test/v1/broken")]
    )


def run(registry, flow, decisions, polish=(), question="成都明天会下雨吗?", approver=None):
    decider, polisher = ScriptedProvider(list(decisions)), ScriptedProvider(list(polish))
    engine = Engine(
        registry, lambda cfg: decider if isinstance(cfg, DecisionConfig) else polisher, MemorySink()
    )
    return engine.run(flow, question, approver=approver), polisher


def flow(**kw) -> Flow:
    kw.setdefault("tools", ["weather/v1/get_weather"])
    return Flow(
        name="t", decision=DecisionConfig(provider="scripted"), polish=PolishConfig(provider="scripted"), **kw
    )


def test_calls_all_refused_end_unbacked_and_the_polish_model_is_told(registry):
    """The model writes the docs' example city twice for a question about another city: the
    call is never made, and the polish model must not present a forecast."""
    refused = [("get_weather", {"location": "北京"})]
    result, polisher = run(registry, flow(), [[refused[0]], [refused[0]], "晴天"], ["无法查询天气"])
    assert result.status == RunStatus.SUCCEEDED and result.outcome == ANSWERED_WITHOUT_TOOLS
    assert result.outcome_reasons == [
        "get_weather was not run: its location '北京' is the tool's own example, "
        "and nothing in the conversation says it"
    ]
    system, user = polisher.requests[0].messages
    assert NO_TOOL_RESULT_NOTE in system.content
    assert "No tool result came back" in user.content and "'北京' is the tool's own example" in user.content
    polish = next(s for s in result.steps if s.kind == StepKind.POLISH)
    assert polish.note.startswith("no tool result backs this answer")


def test_a_failed_tool_and_a_denied_call_are_reasons(registry):
    result, _ = run(
        registry, flow(tools=["test/v1/broken"]), [[("broken", {"location": "成都"})], "好的"], ["?"]
    )
    assert result.outcome == ANSWERED_WITHOUT_TOOLS
    assert (
        result.outcome_reasons[0].startswith("broken failed: TOOL_ERROR")
        and "upstream" in result.outcome_reasons[0]
    )

    denied = flow(needs_approval=["get_weather"])
    result, _ = run(
        registry,
        denied,
        [[("get_weather", {"location": "成都"})], "好的"],
        ["?"],
        approver=lambda call, tool: Decision(action="deny", reason="not now", by="test"),
    )
    assert result.outcome == ANSWERED_WITHOUT_TOOLS and result.outcome_reasons == [
        "get_weather was denied: a person denied this call: not now; do not call it again, answer without it"
    ]


def test_a_tool_result_backs_the_answer_and_no_tool_wanted_is_fine(registry):
    result, polisher = run(registry, flow(), [[("get_weather", {"location": "成都"})], "小雨"], ["明天小雨"])
    assert result.outcome is None and result.outcome_reasons == []
    assert NO_TOOL_RESULT_NOTE not in polisher.requests[0].messages[0].content
    # a greeting needs no tool, yet no tool backs the answer: said, unless the flow allows it
    result, _ = run(registry, flow(), ["你好!"], ["你好!"], question="你好")
    assert result.outcome == ANSWERED_WITHOUT_TOOLS
    assert result.outcome_reasons == ["the decision model answered without calling a tool"]
    result, _ = run(registry, flow(answers_without_tools=True), ["你好!"], ["你好!"], question="你好")
    assert result.outcome is None


def test_a_flow_that_demands_a_tool_and_gets_none(registry):
    result, _ = run(registry, flow(tool_choice="required"), ["明天晴"], ["明天晴"])
    assert result.outcome == ANSWERED_WITHOUT_TOOLS
    assert result.outcome_reasons == ["the flow requires a tool call, and the decision model made none"]


def test_a_failure_then_a_result_is_backed(registry):
    both = flow(tools=["weather/v1/get_weather", "test/v1/broken"])
    result, _ = run(
        registry,
        both,
        [[("broken", {"location": "成都"})], [("get_weather", {"location": "成都"})], "小雨"],
        ["小雨"],
    )
    assert result.outcome is None


def test_the_cli_warns_on_stderr_and_require_tools_fails(tmp_path):
    """`flowcall run` with the schema-driven stand-in model, whose made-up date the tool refuses:
    the run succeeds with an answer no tool result backs."""
    spec = {
        "format": "flowcall.flow/v1",
        "name": "unbacked",
        "tools": ["weather/v1/get_day_weather"],
        "decision": {"provider": "scripted", "model": SCHEMA_MODEL},
    }
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(spec))
    db = ["--db", f"sqlite:///{tmp_path / 'runs.db'}"]
    runner = CliRunner()
    ok = runner.invoke(cli, [*db, "run", str(path), "明天成都天气?"])
    assert ok.exit_code == 0, ok.output
    assert "warning: no tool result backs this answer: get_day_weather failed: TOOL_ERROR" in ok.stderr
    strict = runner.invoke(cli, [*db, "run", str(path), "明天成都天气?", "--require-tools"])
    assert strict.exit_code == 1 and "answered without tools (--require-tools)" in strict.stderr
    listed = runner.invoke(cli, [*db, "runs", "list"])
    assert listed.stdout.count("answered without tools") == 2
    shown = runner.invoke(cli, [*db, "runs", "show", listed.stdout.split()[0], "--json"])
    record = json.loads(shown.stdout)
    assert record["outcome"] == ANSWERED_WITHOUT_TOOLS and record["outcome_reasons"]
