"""A flow served as an MCP server, called with the mcp SDK's own client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from flowcall.api.mcp_serve import build_server
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from tests.local_servers import free_port, serving

ROOT = Path(__file__).resolve().parents[1]
CARD = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "rain": {"type": "boolean"}},
    "required": ["city", "rain"],
}


def call(server, arguments):
    async def go():
        async with Client(server) as client:
            listed = await client.list_tools()
            return listed.tools, await client.call_tool(listed.tools[0].name, arguments)

    return anyio.run(go)


def test_the_flow_is_one_tool_with_the_polish_schema_as_output_schema():
    flow = Flow(
        name="rain card",
        tools=["weather/v1/get_weather"],
        max_rounds=1,
        decision=DecisionConfig(provider="scripted"),
        polish=PolishConfig(provider="scripted", output_schema=CARD),
    )
    provider = ScriptedProvider([[("get_weather", {"location": "成都"})], '{"city": "成都", "rain": true}'])
    service = FlowCall(store=FlowCall.open().store, provider_factory=lambda cfg: provider)
    tools, result = call(build_server(service, flow), {"question": "成都明天下雨吗?"})
    assert [t.name for t in tools] == ["rain_card"] and tools[0].output_schema == CARD
    assert tools[0].input_schema["required"] == ["question"]
    assert not result.is_error and result.structured_content == {"city": "成都", "rain": True}
    assert json.loads(result.content[0].text) == {"city": "成都", "rain": True}
    run = service.store.get_run(result.meta["flowcall/run_id"])  # every call is a recorded run
    assert run.question == "成都明天下雨吗?" and any(s.name == "get_weather" for s in run.steps)


def test_an_answer_no_tool_result_backs_says_so_to_the_host():
    """The docs' example city twice for a question about another: no call is made, and the
    host's model reads that nothing backs the answer."""
    flow = Flow(name="plain", tools=["weather/v1/get_weather"], decision=DecisionConfig(provider="scripted"))
    copied = ("get_weather", {"location": "北京"})
    provider = ScriptedProvider([[copied], [copied], "晴天"])
    service = FlowCall(store=FlowCall.open().store, provider_factory=lambda cfg: provider)
    _, result = call(build_server(service, flow), {"question": "芝加哥今天天气怎么样?"})
    assert not result.is_error and result.content[0].text == "晴天"
    assert result.content[1].text.startswith(
        "note: no tool result backs this answer: get_weather was not run"
    )
    assert result.meta["flowcall/engine/outcome"] == "answered_without_tools"


def test_bad_input_and_a_failed_run_are_tool_errors():
    flow = Flow(name="plain", decision=DecisionConfig(provider="scripted"))
    service = FlowCall(store=FlowCall.open().store, provider_factory=lambda cfg: ScriptedProvider([]))
    _, empty = call(build_server(service, flow), {"question": " "})
    assert empty.is_error and "non-empty string argument 'question'" in empty.content[0].text
    _, failed = call(build_server(service, flow), {"question": "hi"})
    assert failed.is_error and "the flow failed" in failed.content[0].text


@pytest.mark.model
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_flowcall_mcp_serve_on_the_embedded_model(model_path, tmp_path, transport):
    """The real command, over both transports, called by the SDK's client."""
    argv = ["-m", "flowcall.cli.main", "mcp", "serve", str(ROOT / "flows" / "current_time.json")]
    env = {"FLOWCALL_DATABASE_URL": f"sqlite:///{tmp_path / 'served.db'}"}

    async def ask(target):
        async with Client(target, read_timeout_seconds=300) as client:
            listed = await client.list_tools()
            return listed.tools, await client.call_tool(listed.tools[0].name, {"question": "现在几点了?"})

    if transport == "stdio":
        tools, result = anyio.run(
            ask, StdioServerParameters(command=sys.executable, args=argv, env=env, cwd=str(ROOT))
        )
    else:
        port = free_port()
        with serving(
            [sys.executable, *argv, "--transport", "http", "--port", str(port)],
            f"http://127.0.0.1:{port}/mcp",
            tmp_path / "serve.log",
            within_s=60,
            name="flowcall mcp serve",
            any_answer=True,
            env={**os.environ, **env},
        ):
            tools, result = anyio.run(ask, f"http://127.0.0.1:{port}/mcp")
    assert [t.name for t in tools] == ["current-time"]
    assert not result.is_error, result.content
    assert result.content[0].text.strip() and result.meta["flowcall/run_id"]
