"""Trying a tool by hand, outside any run: the studio's "Try it", for plugins, MCP servers and
HTTP tool sources.

A trial goes the engine's way (check the arguments against the schema, then run with the
tool's timeout in a fresh hidden context), so what works here works in a flow. Nothing is
recorded. An MCP server is started for one listing or one call and stopped again; an HTTP
source's document is loaded for each.
"""

from __future__ import annotations

import shlex
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from flowcall.core.errors import ConfigError
from flowcall.core.messages import ToolCall
from flowcall.core.spec import HTTPToolSource, MCPServerConfig
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.execute import check_call, run_calls
from flowcall.tools.registry import ToolRegistry
from flowcall.trust.consent import Grants


@dataclass
class TrialResult:
    version: str
    arguments: dict[str, Any]
    result: Any = None
    error_code: str | None = None
    error_message: str | None = None
    latency_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error_code is None


def try_tool(
    registry: ToolRegistry, ref: str, arguments: dict[str, Any], timeout_s: float = 30
) -> TrialResult:
    """Run one tool once. An unknown reference raises ConfigError; the tool's own failure is a result."""
    tool = registry.get(ref)
    call = ToolCall(id=f"trial-{uuid.uuid4().hex[:8]}", name=tool.name, arguments=arguments)
    outcome = (
        check_call(call, {tool.name: tool})
        or run_calls([(call, tool)], RunContext(run_id=call.id), timeout_s)[0]
    )
    return TrialResult(
        version=tool.version,
        arguments=arguments,
        result=outcome.result,
        error_code=outcome.error_code and str(outcome.error_code),
        error_message=outcome.error_message,
        latency_ms=outcome.latency_ms,
    )


def server_config(name: str, command_line: str = "", url: str = "") -> MCPServerConfig:
    """An MCP server from a form: a one-line stdio command (shell quoting allowed) or a URL."""
    command_line, url = command_line.strip(), url.strip()
    if bool(command_line) == bool(url):
        raise ConfigError("give either a stdio command or a URL for the MCP server, not both and not neither")
    try:
        command = shlex.split(command_line) if command_line else None
    except ValueError as exc:
        raise ConfigError(f"the command cannot be read ({exc}); close its quotes") from None
    try:
        return MCPServerConfig(name=name.strip(), command=command, url=url or None)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'server'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"the MCP server is not valid: {problems}") from None


def _connected(server: MCPServerConfig, grants: Grants | None):
    """A started connection and its tools; ConfigError names the server and why it failed.
    With `grants`, a stdio server starts only as granted, checked again at its start."""
    from flowcall.tools.mcp_client import MCPConnection, MCPToolError, tools_of

    connection = MCPConnection(server, grants)
    try:
        return connection, tools_of(connection)
    except (MCPToolError, TimeoutError, ConfigError) as exc:
        connection.close()
        message = str(exc)
        raise ConfigError(
            message if server.name in message else f"MCP server '{server.name}': {message}"
        ) from exc


def server_tools(server: MCPServerConfig, grants: Grants | None = None) -> list[Tool]:
    """The server's tools (all pages), for showing: the server is stopped again, so they cannot run."""
    connection, tools = _connected(server, grants)
    connection.close()
    return tools


def try_server_tool(
    server: MCPServerConfig, name: str, arguments: dict[str, Any], grants: Grants | None = None
) -> TrialResult:
    """Start the server, call one of its tools by name, stop the server."""
    connection, tools = _connected(server, grants)
    try:
        return try_tool(ToolRegistry(tools), name, arguments, timeout_s=server.call_timeout_s)
    finally:
        connection.close()


def http_tools(source: HTTPToolSource, grants: Grants | None = None) -> list[Tool]:
    """The source's tools, from its OpenAPI document (loaded through the SSRF guard; with
    `grants`, only if the bytes read are the ones granted)."""
    from flowcall.tools.openapi_tools import tools_from_openapi

    return tools_from_openapi(source, grants)


def try_http_tool(
    source: HTTPToolSource, name: str, arguments: dict[str, Any], grants: Grants | None = None
) -> TrialResult:
    """Load the source's document, call one of its tools by name, with the source's timeout."""
    return try_tool(ToolRegistry(http_tools(source, grants)), name, arguments, timeout_s=source.timeout_s)
