"""A flow may name a tool by its full version (data/v1/read_csv) or by its bare name (read_csv)
in tool_choice, router_rules and needs_approval: each form must take effect, not only validate."""

from __future__ import annotations

import json

import pytest

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow, RouterRule, parse_flow
from flowcall.core.steps import MemorySink, RunStatus, StepKind
from flowcall.engine.loop import Engine
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

RAN: list[str] = []


def get_weather(location: str) -> dict:
    """Weather for a city."""
    RAN.append("get_weather")
    return {"location": location, "weather": "小雨"}


def get_time() -> str:
    """The current time."""
    RAN.append("get_time")
    return "10:00"


REGISTRY = ToolRegistry([build_tool(get_weather, "w/v1/get_weather"), build_tool(get_time, "t/v1/get_time")])
TOOLS = ["w/v1/get_weather", "t/v1/get_time"]
GRAMMAR_CAPS = Capabilities(native_tools=False, json_schema_output=True, grammar=True)


@pytest.fixture(autouse=True)
def _clean():
    RAN.clear()


def flow_json(**fields) -> str:
    """As a flow arrives from a file or the studio: JSON, through parse_flow."""
    data = {"name": "names", "tools": TOOLS, "max_rounds": 1, "decision": {"provider": "scripted"}, **fields}
    return json.dumps(data)


def run(flow: Flow, script: list, caps: Capabilities | None = None):
    provider = ScriptedProvider(script, capabilities=caps) if caps else ScriptedProvider(script)
    sink = MemorySink()
    return Engine(REGISTRY, lambda cfg: provider, sink).run(flow, "成都天气?"), provider


# ------------------------------------------------------------------ the spec: one form, stable


def test_a_full_version_in_tool_choice_and_rules_is_stored_as_the_bare_name():
    flow = parse_flow(
        flow_json(
            tool_choice="w/v1/get_weather",
            router_rules=[
                {"pattern": "天气", "tool": "w/v1/get_weather"},
                {"pattern": "几点", "tool": "get_time"},
            ],
        )
    )
    assert flow.tool_choice == "get_weather"
    assert [r.tool for r in flow.router_rules] == ["get_weather", "get_time"]
    # the same through the constructor, as code builds flows
    built = Flow(
        name="names",
        tools=TOOLS,
        tool_choice="t/v1/get_time",
        router_rules=[RouterRule(pattern="x", tool="t/v1/get_time")],
    )
    assert built.tool_choice == "get_time" and built.router_rules[0].tool == "get_time"


def test_a_normalised_flow_dumps_and_loads_to_the_same_json():
    flow = parse_flow(
        flow_json(
            tool_choice="w/v1/get_weather",
            router_rules=[{"pattern": "天气", "tool": "w/v1/get_weather"}],
            needs_approval=["t/v1/get_time"],
        )
    )
    again = parse_flow(flow.to_json())
    assert again == flow and again.to_json() == flow.to_json() and again.content_hash() == flow.content_hash()
    assert Flow.model_validate(flow.model_dump(mode="json")).content_hash() == flow.content_hash()
    # needs_approval keeps what was written: approval and the studio read a name or a version
    assert again.needs_approval == ["t/v1/get_time"]


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"tool_choice": "x/v1/get_weather"}, "tool_choice names 'x/v1/get_weather'"),
        ({"tool_choice": "elsewhere"}, "tool_choice names 'elsewhere'"),
        (
            {"router_rules": [{"pattern": "a", "tool": "x/v1/get_time"}]},
            "names 'x/v1/get_time', which is not attached",
        ),
    ],
)
def test_a_version_that_is_not_attached_is_still_refused(fields, message):
    with pytest.raises(ConfigError, match=message):
        parse_flow(flow_json(**fields))


def test_a_bare_tool_ref_with_a_full_version_choice_is_refused_not_guessed():
    """tools: ["get_weather"] could resolve to another namespace's get_weather: no rewrite."""
    with pytest.raises(ConfigError, match="tool_choice"):
        parse_flow(flow_json(tools=["get_weather"], tool_choice="w/v1/get_weather"))


# ------------------------------------------------------------------ the engine: each takes effect


def test_a_full_version_tool_choice_makes_that_tool_run():
    flow = parse_flow(flow_json(tool_choice="w/v1/get_weather", max_rounds=2))
    result, provider = run(flow, [[("get_weather", {"location": "成都"})], "会下小雨。"])
    assert result.status == RunStatus.SUCCEEDED and result.final_answer == "会下小雨。"
    assert RAN == ["get_weather"]
    assert provider.requests[0].tool_choice == "get_weather"  # what the model and the ways know


def test_a_full_version_needs_approval_makes_its_call_wait():
    flow = parse_flow(flow_json(needs_approval=["t/v1/get_time"]))
    result, _ = run(flow, [[("get_time", {}), ("get_weather", {"location": "成都"})]])
    assert result.status == RunStatus.WAITING_APPROVAL
    waiting = [s for s in result.steps if s.kind == StepKind.APPROVAL]
    assert [s.name for s in waiting] == ["get_time"] and RAN == []


def test_a_full_version_router_rule_routes():
    flow = parse_flow(
        flow_json(
            decision={"provider": "scripted", "calling_way": "router"},
            router_rules=[{"pattern": "天气|weather", "tool": "w/v1/get_weather"}],
        )
    )
    call = json.dumps(
        {"tool_calls": [{"name": "get_weather", "arguments": {"location": "成都"}}]}, ensure_ascii=False
    )
    result, provider = run(flow, [call, '{"answer": "小雨"}'], GRAMMAR_CAPS)
    assert "rule: get_weather" in result.steps[0].note
    schema = provider.requests[0].response_format.json_schema
    assert schema["properties"]["tool_calls"]["items"]["properties"]["name"] == {"const": "get_weather"}
    assert RAN == ["get_weather"] and result.final_answer == "小雨"
