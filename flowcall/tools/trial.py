"""Trying a tool by hand, outside any run: the studio's "Try it", for plugins and the tools of a
source of any kind (an MCP server, an HTTP source, an installed package's kind).

A trial goes the engine's way (check the arguments against the schema, then run with the
tool's timeout in a fresh hidden context), so what works here works in a flow. Nothing is
recorded. A source is loaded through its kind for one listing or one call and closed again (an MCP
server started and stopped; an HTTP source's document read for each).
"""

from __future__ import annotations

import shlex
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from flowcall.core.errors import ConfigError
from flowcall.core.messages import ToolCall
from flowcall.core.spec import MCPServerConfig
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.execute import check_call, run_calls
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.sources import LoadContext, ToolSourceKind, call_timeout_s, kind_of, load_source
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


def _kind(kind: str | ToolSourceKind) -> ToolSourceKind:
    return kind_of(kind) if isinstance(kind, str) else kind


def _loaded(kind: ToolSourceKind, config: BaseModel, context: LoadContext) -> list[Tool]:
    """The source's tools; ConfigError names the source and why it failed."""
    try:
        return load_source(kind, config, context)
    except ConfigError as exc:
        message, name = str(exc), str(getattr(config, "name", ""))
        raise ConfigError(message if name in message else f"{kind.label} '{name}': {message}") from exc


def source_tools(
    kind: str | ToolSourceKind,
    config: BaseModel,
    grants: Grants | None = None,
    services: dict[str, Any] | None = None,
) -> list[Tool]:
    """A source's tools (all of them), for showing: the source is loaded through its kind (a
    server started) and closed again, so they cannot run. With `grants`, it loads only as a
    run would (a stdio server's command checked at its start)."""
    with ExitStack() as stack:
        return _loaded(_kind(kind), config, LoadContext(stack, grants, services or {}))


def try_source_tool(
    kind: str | ToolSourceKind,
    config: BaseModel,
    name: str,
    arguments: dict[str, Any],
    grants: Grants | None = None,
    services: dict[str, Any] | None = None,
) -> TrialResult:
    """Load the source through its kind, call one of its tools by name with the kind's call
    timeout, close the source (stop the server)."""
    kind = _kind(kind)
    with ExitStack() as stack:
        tools = _loaded(kind, config, LoadContext(stack, grants, services or {}))
        return try_tool(ToolRegistry(tools), name, arguments, timeout_s=call_timeout_s(kind, config))
