"""A flow served as an MCP server: one tool whose input is the question and whose output is
the flow's final answer (structured, with the polish schema as outputSchema, when it has one).

Claude Desktop, Cursor, the MCP Inspector or another FlowCall flow can then call the flow like
any tool. Every call is a recorded run, to open in the inspector.

    flowcall mcp serve flows/commute_weather.json                       # stdio
    flowcall mcp serve flows/commute_weather.json --transport http --port 8765
    FLOWCALL_MCP_TOKEN=... flowcall mcp serve FLOW --transport http --host 0.0.0.0 --allow-host my.host

Over HTTP the caller may be anyone who reaches the port, so: off loopback a bearer token is
required; Host and Origin are checked (DNS rebinding); at most `max_concurrent` calls run at once;
and errors name the run and its error code only, never the internal error text.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import threading
from typing import Any, Iterable

import anyio

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow
from flowcall.core.steps import Run, RunStatus
from flowcall.service.front import FlowCall
from flowcall.trust.exposure import allowed_names, is_loopback, origin_of, same_origin

logger = logging.getLogger(__name__)

_CODE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]{0,63}$")


def tool_name(flow: Flow) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", flow.name)[:64]


def check_exposure(host: str, token: str | None) -> None:
    """Anything but loopback is reachable by others: refuse to serve it without a token."""
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"--host {host or '(all)'} is reachable from other machines; give a bearer token with "
            "--token or the env var FLOWCALL_MCP_TOKEN (or serve on 127.0.0.1)"
        )


def error_code(run: Run) -> str:
    """The code part of run.error ("PROVIDER_ERROR: ..." -> "PROVIDER_ERROR"); the rest may hold
    paths or URLs."""
    code = (run.error or "").split(":", 1)[0].strip()
    return code if _CODE.match(code) else "RUN_FAILED"


def build_server(service: FlowCall, flow: Flow, *, remote: bool = True, max_concurrent: int = 2) -> Any:
    """The lowlevel SDK server: it lets the tool carry the polish schema as its outputSchema.

    `remote`: the caller is not on this machine's terminal (HTTP), so errors carry no internals.
    At most `max_concurrent` calls run at once; one more is told at once that the server is busy
    (no waiting: a model is slow, and a caller left hanging would just time out)."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    tool = _flow_tool(flow)
    # a thread semaphore, not an anyio one: it works whichever event loop the server runs on
    slots = threading.BoundedSemaphore(max_concurrent)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        question = (params.arguments or {}).get("question")
        if params.name != tool.name:
            return _error(f"unknown tool '{params.name}'; this server has '{tool.name}'")
        if not isinstance(question, str) or not question.strip():
            return _error("give the question as a non-empty string argument 'question'")
        if not slots.acquire(blocking=False):
            return _error(
                f"busy: this server already runs {max_concurrent} calls at once; try again in a moment"
            )
        try:
            # the engine is synchronous; the thread is not abandoned on cancel, so the slot is held
            # until it ends
            run = await anyio.to_thread.run_sync(service.run, flow, question)
        except Exception as exc:  # the run could not even start (a missing tool, a bad config)
            logger.exception("flow '%s' could not run", flow.name)
            detail = type(exc).__name__ if remote else str(exc)
            return _error(f"the flow could not run ({detail})" + ("; see the server's log" if remote else ""))
        finally:
            slots.release()
        return _run_result(run, tool, remote=remote)

    return Server(f"flowcall-{tool.name}", on_list_tools=list_tools, on_call_tool=call_tool)


def _flow_tool(flow: Flow) -> Any:
    """The one tool the server lists: the question in, the flow's answer out (with the polish
    schema as outputSchema when it describes an object)."""
    import mcp_types as types

    schema = flow.polish.output_schema if flow.polish else None
    return types.Tool(
        name=tool_name(flow),
        description=flow.description or f"Ask the FlowCall flow '{flow.name}' a question.",
        input_schema={
            "type": "object",
            "properties": {"question": {"type": "string", "description": "The question."}},
            "required": ["question"],
        },
        output_schema=schema if schema and schema.get("type") == "object" else None,
        annotations=types.ToolAnnotations(read_only_hint=False, open_world_hint=True),
    )


def _run_result(run: Run, tool: Any, *, remote: bool) -> Any:
    """What the caller gets for a finished (or paused) run: the answer, or an error naming the run."""
    import mcp_types as types

    if run.status == RunStatus.WAITING_APPROVAL:
        # not a failure: the run is stored and goes on once a person answers
        return _error(
            f"waiting for approval: run {run.id}; a person resumes it with "
            f"`flowcall runs resume {run.id} --approve`",
            run_id=run.id,
        )
    if run.status != RunStatus.SUCCEEDED:
        if remote:
            return _error(
                f"the flow failed (run {run.id}, {error_code(run)}); see it with "
                f"`flowcall runs show {run.id}` on the server",
                run_id=run.id,
            )
        return _error(f"the flow failed (run {run.id}): {run.error}", run_id=run.id)
    answer = run.final_answer
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    structured = answer if tool.output_schema is not None and isinstance(answer, dict) else None
    # the host's model must know an answer no tool result backs: a second text block says so
    content = [types.TextContent(type="text", text=text)]
    if run.outcome:
        said = (
            "no tool result backs this answer"
            if run.outcome == "answered_without_tools"
            else "not every part of this answer was done by a tool"
        )
        content.append(
            types.TextContent(type="text", text=f"note: {said}: " + "; ".join(run.outcome_reasons))
        )
    return types.CallToolResult(
        content=content,
        structured_content=structured,
        meta={"flowcall/run_id": run.id, **({"flowcall/engine/outcome": run.outcome} if run.outcome else {})},
    )


def _error(message: str, run_id: str | None = None) -> Any:
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        is_error=True,
        meta={"flowcall/run_id": run_id} if run_id else None,
    )


def transport_security(host: str, allow_hosts: Iterable[str] = (), allow_origins: Iterable[str] = ()) -> Any:
    """DNS-rebinding protection for any host, not only loopback as the SDK does by itself: a page
    on evil.example that resolves to this server sends Host: evil.example (or its Origin)."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts, origins = [], []
    for name in allowed_names(host, allow_hosts):
        bare = f"[{name}]" if ":" in name else name  # IPv6 in a Host header is bracketed
        hosts += [bare, f"{bare}:*"]
        origins += [f"{scheme}://{bare}{port}" for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[*origins, *allow_origins]
    )


class SameOrigin:
    """ASGI wrapper: a request from a page (it carries an Origin) is taken only from this server's
    own origin, port included, or an --allow-origin. The SDK's check above takes any port of
    this server's names, and a page on another local port is another site."""

    def __init__(self, app: Any, host: str, allow_hosts: Iterable[str], allow_origins: Iterable[str]) -> None:
        self.app, self.names = app, [name.lower() for name in allowed_names(host, allow_hosts)]
        self.extra = [o for o in (origin_of(text) for text in allow_origins) if o is not None]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            from starlette.datastructures import Headers
            from starlette.responses import Response

            headers = Headers(scope=scope)
            origin, scheme = (
                headers.get("origin"),
                "https" if scope.get("scheme") in ("https", "wss") else "http",
            )
            if origin is not None and not same_origin(
                origin, scheme, headers.get("host", ""), self.names, self.extra
            ):
                await Response("requests from a page on another site are refused", status_code=403)(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)


class BearerAuth:
    """ASGI wrapper: every HTTP request must carry `Authorization: Bearer <token>`, else 401 with
    no detail. Compared in constant time, so the token cannot be guessed byte by byte."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            from starlette.datastructures import Headers
            from starlette.responses import Response

            scheme, _, given = Headers(scope=scope).get("authorization", "").partition(" ")
            if not (scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token)):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                else:
                    await Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})(
                        scope, receive, send
                    )
                return
        await self.app(scope, receive, send)


def http_app(
    service: FlowCall,
    flow: Flow,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    allow_hosts: Iterable[str] = (),
    allow_origins: Iterable[str] = (),
    max_concurrent: int = 2,
) -> Any:
    """The streamable HTTP app, with the checks above; the ASGI app uvicorn serves."""
    check_exposure(host, token)
    server = build_server(service, flow, remote=True, max_concurrent=max_concurrent)
    app = server.streamable_http_app(
        host=host, transport_security=transport_security(host, allow_hosts, allow_origins)
    )
    app = SameOrigin(app, host, allow_hosts, allow_origins)
    return BearerAuth(app, token) if token else app


def serve(
    service: FlowCall,
    flow: Flow,
    transport: str,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    token: str | None = None,
    allow_hosts: Iterable[str] = (),
    allow_origins: Iterable[str] = (),
    max_concurrent: int = 2,
) -> None:
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        # the caller started this process itself: it is local and may see the full errors
        server = build_server(service, flow, remote=False, max_concurrent=max_concurrent)

        async def main() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    else:
        import uvicorn

        app = http_app(
            service,
            flow,
            host=host,
            token=token,
            allow_hosts=allow_hosts,
            allow_origins=allow_origins,
            max_concurrent=max_concurrent,
        )
        uvicorn.run(app, host=host, port=port, log_level="warning")
