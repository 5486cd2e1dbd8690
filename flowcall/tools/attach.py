"""Attaching an MCP server to a saved flow: the server goes into `mcp_servers`, its tools into
`tools` as `<server>/mcp/<tool>`, and the flow is saved as a new version."""

from __future__ import annotations

from flowcall.core.spec import Flow, MCPServerConfig
from flowcall.store import Store
from flowcall.tools.base import Tool
from flowcall.tools.sources import with_source


def with_server(flow: Flow, server: MCPServerConfig, tools: list[Tool]) -> tuple[Flow, list[str]]:
    """The flow with the server (replacing one of the same name) and its tools, and the tools left
    out because the flow already has a tool of that name (the model could not tell them apart)."""
    taken = {ref.rsplit("/", 1)[-1]: ref for ref in flow.tools if not ref.startswith(f"{server.name}/mcp/")}
    skipped = [f"{t.name} (the flow already has {taken[t.name]})" for t in tools if t.name in taken]
    added = [t.version for t in tools if t.name not in taken and t.version not in flow.tools]
    return with_source(flow, "mcp", server, added), skipped


def add_server_to_flow(
    store: Store, flow_name: str, server: MCPServerConfig, tools: list[Tool]
) -> tuple[int, list[str]]:
    """Save the latest version of `flow_name` with the server attached: (new version, skipped tools)."""
    flow, _, _ = store.get_flow(flow_name)
    updated, skipped = with_server(flow, server, tools)
    _, version = store.save_flow(updated)
    return version, skipped
