"""Trying tools by hand, for real: the bundled plugins, FlowCall's test MCP server and
`mcp-server-time` over stdio; and attaching a server to a saved flow."""

from __future__ import annotations

import pytest

from flowcall.core import config
from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow, MCPServerConfig
from flowcall.service.front import FlowCall
from flowcall.tools.attach import add_server_to_flow, with_server
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.trial import server_config, source_tools, try_source_tool, try_tool
from tests.tools.test_mcp_client import OWN, SERVER, TIME


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return ToolRegistry.from_plugin_dirs(config.plugin_dirs())


@pytest.fixture(autouse=True)
def _offline_weather(monkeypatch):
    monkeypatch.delenv("AMAP_API_KEY", raising=False)


def test_a_plugin_runs_once_with_its_result_and_latency(registry):
    trial = try_tool(registry, "get_weather", {"location": "成都"})
    assert trial.ok and trial.version == "weather/v1/get_weather"
    assert trial.result["location"] == "成都" and trial.latency_ms > 0


def test_bad_arguments_are_refused_before_running(registry):
    trial = try_tool(registry, "time/v1/get_current_time", {"timezone": 8})
    assert trial.error_code == "INVALID_ARGUMENT" and "timezone" in trial.error_message
    missing = try_tool(registry, "get_weather", {})
    assert missing.error_code == "MISSING_REQUIRED_FIELD" and "location" in missing.error_message


def test_a_tool_failure_is_a_result_and_an_unknown_tool_raises(registry):
    trial = try_tool(registry, "get_weather", {"location": "Atlantis"})
    assert trial.error_code == "TOOL_ERROR" and "Atlantis" in trial.error_message
    with pytest.raises(ConfigError, match="no tool 'nope'"):
        try_tool(registry, "nope", {})


def test_server_config_from_a_form():
    server = server_config(" own ", f"'{SERVER}' stdio")
    assert server.command == [SERVER, "stdio"] and server.name == "own"
    assert server_config("notes", url="http://127.0.0.1:8765/mcp").url == "http://127.0.0.1:8765/mcp"
    with pytest.raises(ConfigError, match="either a stdio command or a URL"):
        server_config("x")
    with pytest.raises(ConfigError, match="close its quotes"):
        server_config("x", "python 'unclosed")
    with pytest.raises(ConfigError, match="name"):
        server_config("Bad Name", "python")


def test_own_server_lists_and_runs_its_tools():
    assert [t.version for t in source_tools("mcp", OWN)] == [
        f"own/mcp/{n}" for n in ("add", "shout", "save_note", "fail", "hang", "crash")
    ]
    trial = try_source_tool("mcp", OWN, "add", {"a": 2, "b": 3})
    assert trial.ok and trial.result == {"sum": 5}
    failed = try_source_tool("mcp", OWN, "fail", {"reason": "no luck"})
    assert failed.error_code == "TOOL_ERROR" and "Error executing tool fail" in failed.error_message
    refused = try_source_tool("mcp", OWN, "add", {"a": "two"})
    assert (
        refused.error_code in ("INVALID_ARGUMENT", "MISSING_REQUIRED_FIELD") and "b" in refused.error_message
    )


def test_mcp_server_time():
    tools = {t.name: t for t in source_tools("mcp", TIME)}
    assert {"get_current_time", "convert_time"} <= set(tools) and tools[
        "get_current_time"
    ].annotations.read_only
    trial = try_source_tool("mcp", TIME, "get_current_time", {"timezone": "Asia/Tokyo"})
    assert trial.ok and trial.result["datetime"].endswith("+09:00")


def test_a_server_that_cannot_start_is_a_config_error_naming_it():
    ghost = MCPServerConfig(name="ghost", command=["/nonexistent/mcp-server"], startup_timeout_s=10)
    with pytest.raises(ConfigError, match="MCP server 'ghost' could not start .*/nonexistent/mcp-server"):
        source_tools("mcp", ghost)
    with pytest.raises(ConfigError, match="ghost"):
        try_source_tool("mcp", ghost, "add", {})


def test_attaching_a_server_to_a_saved_flow_makes_a_new_version():
    store = FlowCall.open().store
    store.save_flow(Flow(name="clock", tools=["time/v1/get_current_time", "weather/v1/get_weather"]))
    tools = source_tools("mcp", TIME)
    version, skipped = add_server_to_flow(store, "clock", TIME, tools)
    flow, _, saved = store.get_flow("clock")
    assert version == saved == 2 and [s.name for s in flow.mcp_servers] == ["time"]
    assert "time/mcp/convert_time" in flow.tools and "time/mcp/get_current_time" not in flow.tools
    assert skipped == ["get_current_time (the flow already has time/v1/get_current_time)"]
    again, _ = with_server(
        flow, TIME.model_copy(update={"trusted": True}), tools
    )  # same name: replaced, not doubled
    assert [s.trusted for s in again.mcp_servers] == [True] and again.tools == flow.tools
