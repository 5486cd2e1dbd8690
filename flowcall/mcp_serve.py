"""A flow served as an MCP server: one tool whose input is the question and whose output is
the flow's final answer (structured, with the polish schema as outputSchema, when it has one).

Claude Desktop, Cursor, the MCP Inspector or another FlowCall flow can then call the flow like
any tool. Every call is a recorded run, to open in the inspector.

    flowcall mcp serve flows/commute_weather.json                       # stdio
    flowcall mcp serve flows/commute_weather.json --transport http --port 8765
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio

from flowcall.service import FlowCall
from flowcall.spec import Flow
from flowcall.steps import RunStatus


def tool_name(flow: Flow) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", flow.name)[:64]


def build_server(service: FlowCall, flow: Flow) -> Any:
    """The lowlevel SDK server: it lets the tool carry the polish schema as its outputSchema."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    name = tool_name(flow)
    schema = flow.polish.output_schema if flow.polish else None
    tool = types.Tool(
        name=name,
        description=flow.description or f"Ask the FlowCall flow '{flow.name}' a question.",
        input_schema={"type": "object", "properties": {"question": {"type": "string", "description": "The question."}},
                      "required": ["question"]},
        output_schema=schema if schema and schema.get("type") == "object" else None,
        annotations=types.ToolAnnotations(read_only_hint=False, open_world_hint=True),
    )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        question = (params.arguments or {}).get("question")
        if params.name != name:
            return _error(f"unknown tool '{params.name}'; this server has '{name}'")
        if not isinstance(question, str) or not question.strip():
            return _error("give the question as a non-empty string argument 'question'")
        run = await anyio.to_thread.run_sync(service.run, flow, question)  # the engine is synchronous
        if run.status != RunStatus.SUCCEEDED:
            return _error(f"the flow failed (run {run.id}): {run.error}")
        answer = run.final_answer
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        structured = answer if tool.output_schema is not None and isinstance(answer, dict) else None
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured,
                                    meta={"flowcall/run_id": run.id})

    return Server(f"flowcall-{name}", on_list_tools=list_tools, on_call_tool=call_tool)


def _error(message: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def serve(service: FlowCall, flow: Flow, transport: str, host: str = "127.0.0.1", port: int = 8765) -> None:
    server = build_server(service, flow)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def main() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    else:
        import uvicorn

        uvicorn.run(server.streamable_http_app(host=host), host=host, port=port, log_level="warning")
