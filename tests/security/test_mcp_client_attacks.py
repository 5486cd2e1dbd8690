"""Attacks on the MCP client: an argument that picks another tool than the one approved and
recorded, and proxy settings that would carry a URL server's traffic elsewhere. Real MCP
servers: tests/tools/mcp_test_server.py over stdio and streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import sys
from pathlib import Path

from flowcall.core.spec import DecisionConfig, Flow, MCPServerConfig
from flowcall.core.steps import MemorySink, StepKind
from flowcall.engine.approval import Decision
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.base import RunContext
from flowcall.tools.mcp_client import MCPConnection, tools_of
from flowcall.tools.registry import ToolRegistry
from tests.security.test_ssrf import Capture

SERVER = str(Path(__file__).resolve().parents[1] / "tools" / "mcp_test_server.py")
OWN = MCPServerConfig(name="own", command=[sys.executable, SERVER, "stdio"], call_timeout_s=10)
CTX = RunContext(run_id="mcp-attacks")


def test_an_argument_named__name_cannot_switch_the_tool_that_runs(attack):
    attack.tried(
        "calling `shout` with an extra argument `_name: save_note`",
        expected="shout runs with the arguments as given ('HI'); save_note does not run",
    )
    with MCPConnection(OWN) as connection:
        shout = {t.name: t for t in tools_of(connection)}["shout"]
        try:
            result = shout.invoke({"text": "hi", "_name": "save_note"}, CTX)
        except Exception as exc:  # noqa: BLE001 - what happened is the observation
            result = exc
    attack.observed(f"result: {result!r}")
    assert result == "HI"


def test_the_approved_and_recorded_tool_is_the_one_that_ran(attack):
    attack.tried(
        "in a run, the model calls `shout` (what the person approves and the run records) with "
        "`_name: save_note` among its arguments",
        expected="the person is asked about shout, the step records shout, and its result is shout's",
    )
    asked: list[tuple[str, dict]] = []

    def approver(call, tool):
        asked.append((call.name, dict(call.arguments)))
        return Decision(action="approve", by="test")

    flow = Flow(
        name="mcp",
        tools=["own/mcp/shout"],
        max_rounds=1,
        tool_timeout_s=10,
        mcp_servers=[OWN],
        decision=DecisionConfig(provider="scripted"),
    )
    provider = ScriptedProvider([[("shout", {"text": "hi", "_name": "save_note"})], "done"])
    run = Engine(ToolRegistry(), lambda cfg: provider, MemorySink()).run(flow, "go", approver=approver)
    steps = [(s.name, s.result, s.error_code) for s in run.steps if s.kind == StepKind.TOOL_CALL]
    attack.observed(f"asked about {[name for name, _ in asked]}; tool steps {steps}")
    assert steps == [("shout", "HI", None)]


def test_proxy_variables_do_not_carry_an_mcp_url_servers_traffic(attack, http_url, monkeypatch):
    attack.tried(
        "HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at a server on 127.0.0.1 while FlowCall talks "
        "to an MCP server by URL",
        expected="the proxy sees 0 requests; the tools are listed and called",
    )
    proxy = Capture()
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        server = MCPServerConfig(name="own", url=http_url, startup_timeout_s=15, call_timeout_s=10)
        try:
            with MCPConnection(server) as connection:
                tools = {t.name: t for t in tools_of(connection)}
                result = tools["add"].invoke({"a": 2, "b": 3}, CTX)
        except Exception as exc:  # noqa: BLE001
            result = exc
        attack.observed(f"proxy saw {len(proxy.requests)} requests; add(2, 3) -> {result!r}")
        assert proxy.requests == [] and result == {"sum": 5}
    finally:
        proxy.close()
