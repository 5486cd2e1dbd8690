"""An MCP server of FlowCall's own for the client tests, over stdio or streamable HTTP.

    python tests/tools/mcp_test_server.py stdio
    python tests/tools/mcp_test_server.py http PORT

It lists its tools two per page, so the client must follow the cursor, and has tools that
fail (isError), hang, and crash the process.
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ListToolsResult, ToolAnnotations


class PagedServer(MCPServer):
    async def _handle_list_tools(self, ctx, params):  # two tools a page, the cursor is the offset
        tools = await self.list_tools()
        start = int(params.cursor) if params is not None and params.cursor else 0
        more = start + 2 < len(tools)
        return ListToolsResult(tools=tools[start : start + 2], next_cursor=str(start + 2) if more else None)


server = PagedServer("flowcall-test")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@server.tool(annotations=ToolAnnotations(destructive_hint=False))
def save_note(text: str) -> str:
    """Save a note (not destructive, but writes)."""
    return f"saved {len(text)} characters"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ValueError(reason)


@server.tool()
async def hang(seconds: float) -> str:
    """Answers only after `seconds`."""
    await asyncio.sleep(seconds)
    return "late"


@server.tool()
def crash() -> str:
    """Ends the server process at once."""
    os._exit(3)


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
