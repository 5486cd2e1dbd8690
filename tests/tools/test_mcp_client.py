"""MCP servers as tool sources, for real: `mcp-server-time` (PyPI, nobody here wrote it) over
stdio, and FlowCall's own test server over stdio and streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flowcall.core.errors import FlowCallError
from flowcall.core.spec import DecisionConfig, Flow, MCPServerConfig, parse_flow
from flowcall.core.steps import MemorySink, RunStatus, StepKind
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.base import RunContext
from flowcall.tools.mcp_client import MCPConnection, MCPToolError, tools_of
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.sources import run_registry

SERVER = str(Path(__file__).with_name("mcp_test_server.py"))
TIME = MCPServerConfig(
    name="time", command=[sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
)
OWN = MCPServerConfig(name="own", command=[sys.executable, SERVER, "stdio"], call_timeout_s=3)
CTX = RunContext(run_id="test")


def _children() -> set[int]:
    pids = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            pids |= {int(p) for p in (task / "children").read_text().split()}
        except FileNotFoundError:
            # a thread that ended between the listing and the read (seen in a CI run) has no children
            continue
    return pids


def test_mcp_server_time_over_stdio():
    with MCPConnection(TIME) as connection:
        tools = {t.name: t for t in tools_of(connection)}
        assert set(tools) >= {"get_current_time", "convert_time"}
        now = tools["get_current_time"]
        assert now.version == "time/mcp/get_current_time" and now.source == "mcp"
        assert "timezone" in now.parameters["properties"] and now.annotations.read_only
        answer = now.invoke({"timezone": "Asia/Tokyo"}, CTX)
        assert answer["timezone"] == "Asia/Tokyo" and answer["datetime"].endswith(
            "+09:00"
        )  # structuredContent
        with pytest.raises(MCPToolError, match="Invalid timezone"):  # isError, with the server's words
            now.invoke({"timezone": "Mars/Olympus"}, CTX)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_own_server_all_pages_annotations_and_results(transport, request):
    server = (
        OWN if transport == "stdio" else MCPServerConfig(name="own", url=request.getfixturevalue("http_url"))
    )
    with MCPConnection(server) as connection:
        tools = {t.name: t for t in tools_of(connection)}
        assert list(tools) == ["add", "shout", "save_note", "fail", "hang", "crash"]  # three pages of two
        assert tools["add"].annotations.read_only and not tools["add"].annotations.destructive
        assert not tools["save_note"].annotations.destructive  # said so by the server
        assert tools["fail"].annotations.destructive  # MCP's default when a server says nothing
        assert tools["add"].invoke({"a": 2, "b": 3}, CTX) == {"sum": 5}  # structuredContent
        assert tools["shout"].invoke({"text": "hi"}, CTX) == "HI"  # a text block
        with pytest.raises(MCPToolError):
            tools["fail"].invoke({"reason": "no"}, CTX)


def test_a_server_that_cannot_start_says_which_and_why():
    broken = MCPServerConfig(name="ghost", command=["/nonexistent/mcp-server"], startup_timeout_s=10)
    with pytest.raises(
        MCPToolError, match="MCP server 'ghost' could not start \\(/nonexistent/mcp-server\\)"
    ):
        MCPConnection(broken).start()


def run_flow(script, tools, max_rounds=1):
    # trusted: these tests are about the calls; approval of untrusted servers is tested in test_approval
    flow = Flow(
        name="mcp",
        tools=tools,
        max_rounds=max_rounds,
        tool_timeout_s=3,
        mcp_servers=[OWN.model_copy(update={"trusted": True})],
        decision=DecisionConfig(provider="scripted"),
    )
    provider = ScriptedProvider(script)
    return Engine(ToolRegistry(), lambda cfg: provider, MemorySink()).run(flow, "go")


def tool_steps(run):
    return [(s.name, s.error_code) for s in run.steps if s.kind == StepKind.TOOL_CALL]


def test_a_flow_calls_mcp_tools_and_the_server_stops_with_the_run():
    before = _children()
    run = run_flow([[("add", {"a": 20, "b": 22})], "42"], ["own/mcp/add"])
    assert run.status == RunStatus.SUCCEEDED, run.error
    step = next(s for s in run.steps if s.kind == StepKind.TOOL_CALL)
    assert step.name == "add" and step.result == {"sum": 42} and step.error_code is None
    assert run.final_answer == "42"
    assert _children() == before  # the server process is gone


def test_a_hung_server_gives_a_timeout_step_not_a_hung_run():
    started = time.monotonic()
    run = run_flow([[("hang", {"seconds": 60})], "gave up"], ["own/mcp/hang"])
    assert time.monotonic() - started < 30
    assert run.status == RunStatus.SUCCEEDED and tool_steps(run) == [("hang", "TOOL_TIMEOUT")]


def test_a_crashed_server_gives_tool_errors_and_the_run_ends():
    run = run_flow(
        [[("crash", {})], [("add", {"a": 1, "b": 1})], "the server is down"],
        ["own/mcp/crash", "own/mcp/add"],
        max_rounds=2,
    )
    assert run.status == RunStatus.SUCCEEDED and tool_steps(run) == [
        ("crash", "TOOL_ERROR"),
        ("add", "TOOL_ERROR"),
    ]
    assert run.final_answer == "the server is down"


def test_with_servers_turns_a_start_failure_into_a_run_error():
    ghost = MCPServerConfig(name="ghost", command=["/nonexistent/mcp-server"], startup_timeout_s=10)
    with pytest.raises(FlowCallError, match="ghost"):
        # only servers whose tools the flow attaches are started (flowcall/trust/consent.py)
        with run_registry(ToolRegistry(), Flow(name="g", tools=["ghost/mcp/anything"], mcp_servers=[ghost])):
            pass


def test_flow_json_with_servers_validates_transport_and_keeps_keys_out():
    flow = parse_flow(
        {
            "name": "t",
            "tools": ["time/mcp/get_current_time"],
            "mcp_servers": [{"name": "time", "command": ["mcp-server-time"], "env": {"TZ": "$TZ"}}],
        }
    )
    assert flow.plugin_refs() == [] and flow.mcp_servers[0].trusted is False
    with pytest.raises(Exception, match="exactly one of command"):
        parse_flow(
            {"name": "t", "mcp_servers": [{"name": "x", "command": ["a"], "url": "http://127.0.0.1/mcp"}]}
        )


def test_cli_lists_a_servers_tools_and_refuses_no_target():
    root = Path(__file__).resolve().parents[2]
    listed = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "mcp", "tools", "--", sys.executable, SERVER, "stdio"],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if not line.startswith(" ")]
    assert names == ["add", "shout", "save_note", "fail", "hang", "crash"]
    assert "read_only" in listed.stdout.splitlines()[0]
    neither = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "mcp", "tools"],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=60,
    )
    assert neither.returncode == 2 and "give either --url or a command" in neither.stderr
