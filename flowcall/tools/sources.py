"""A run's tools beyond the plugins: its flow's MCP servers and OpenAPI documents.

They are loaded when the run starts and dropped when it ends; MCP servers are stopped then.
A source that cannot be loaded fails the run with one line naming it and the reason. Only the
servers and documents whose tools the flow attaches are started or loaded: a server listed in a
shared flow but not used by it never runs.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Iterator

from flowcall.core.errors import ConfigError, ErrorCode, FlowCallError
from flowcall.core.spec import Flow
from flowcall.tools.base import Tool
from flowcall.tools.http_guard import UnsafeRequest
from flowcall.tools.registry import ToolRegistry
from flowcall.trust.consent import Grants, attached_http_sources, attached_servers


@contextmanager
def run_registry(registry: ToolRegistry, flow: Flow, grants: Grants | None = None) -> Iterator[ToolRegistry]:
    """With `grants`, an OpenAPI document loads only if the bytes read are ones a person granted,
    and a stdio server starts only if what it would run, resolved at its start, is granted."""
    from flowcall.tools.mcp_client import MCPConnection, MCPToolError, tools_of
    from flowcall.tools.openapi_tools import tools_from_openapi

    with ExitStack() as stack:
        extra: list[Tool] = []
        try:
            for server in attached_servers(flow):
                extra.extend(tools_of(stack.enter_context(MCPConnection(server, grants))))
            for source in attached_http_sources(flow):
                extra.extend(tools_from_openapi(source, grants))
        except (MCPToolError, TimeoutError, UnsafeRequest, ConfigError) as exc:
            raise FlowCallError(ErrorCode.TOOL_ERROR, str(exc)) from exc
        yield registry.extended(extra)
