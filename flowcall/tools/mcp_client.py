"""MCP servers as a tool source, through the official `mcp` SDK.

A flow names its servers (a stdio command or a streamable HTTP URL). A server starts when a
run first needs it, serves every call of that run, and stops when the run ends. The SDK is
async and the engine is not, so each connection owns a thread with its own event loop; the
SDK's client is entered and left inside one task there, as its cancel scopes require.

A URL server is reached through http_guard's pinned client: no proxies from the environment,
connections go only to the addresses checked, and only the URL's own host may be internal (a
person granted that URL); the SDK itself follows redirects only within that origin.

Tool results map as the spec says: structuredContent when the server sends it, else the
content blocks as text; isError becomes a TOOL_ERROR the model can read. A server that
crashes or hangs ends the call with TOOL_ERROR or TOOL_TIMEOUT, never a hung run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import re
import threading
from typing import Any, AsyncContextManager, Awaitable, Callable
from urllib.parse import urlsplit

from flowcall.core import nesting
from flowcall.core.errors import ConfigError
from flowcall.core.schemas import check_refs
from flowcall.core.spec import MCPServerConfig
from flowcall.tools.base import Tool, ToolAnnotations
from flowcall.tools.http_guard import guarded_async_client
from flowcall.trust import consent, program

_STOP = object()
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


class MCPToolError(Exception):
    """The server ran the tool and said it failed (isError), or could not be reached."""


class MCPConnection:
    """One running MCP server, driven from synchronous code. With `grants`, a stdio server
    starts only if what it would run, resolved and hashed right before the start, is granted
    (consent.checked_start); without, the caller vouches for the command (a person typed it)."""

    def __init__(self, server: MCPServerConfig, grants: consent.Grants | None = None):
        self.server = server
        self.grants = grants
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._serve, name=f"mcp-{self.server.name}", daemon=True)
            self._thread.start()
        if not self._ready.wait(self.server.startup_timeout_s):
            raise MCPToolError(
                f"MCP server '{self.server.name}' did not answer within {self.server.startup_timeout_s:g} s "
                f"of starting; check `{self.server.describe()}` by hand"
            )
        if isinstance(self._failure, consent.StartRefused):  # it names the server and why
            raise consent.StartRefused(str(self._failure)) from self._failure
        if self._failure is not None:
            raise MCPToolError(
                f"MCP server '{self.server.name}' could not start ({self.server.describe()}): "
                f"{_reason(self._failure)}"
            ) from self._failure

    def close(self) -> None:
        """Stop the server: leave the SDK client (which ends a stdio subprocess) and the loop."""
        if self._loop is not None and self._queue is not None and self._thread and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, _STOP)
            self._thread.join(timeout=10)

    def __enter__(self) -> MCPConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests
    def list_tools(self) -> list[Any]:
        """Every tool the server offers, all pages."""

        async def fetch(client: Any) -> list[Any]:
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

        return self._submit(fetch, self.server.startup_timeout_s)

    def call_tool(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        async def call(client: Any) -> Any:
            return await client.call_tool(name, arguments, read_timeout_seconds=timeout_s)

        return tool_result(self._submit(call, timeout_s + 5))

    def _submit(self, job: Callable[[Any], Awaitable[Any]], timeout_s: float) -> Any:
        self.start()
        if self._failure is not None or not (self._thread and self._thread.is_alive()):
            raise MCPToolError(
                f"MCP server '{self.server.name}' is no longer running"
                + (f": {_reason(self._failure)}" if self._failure else "")
            )
        future: concurrent.futures.Future = concurrent.futures.Future()
        assert self._loop is not None and self._queue is not None
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (job, future))
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(
                f"MCP server '{self.server.name}' did not answer within {timeout_s:g} s"
            ) from None

    # ------------------------------------------------------------------ the loop thread
    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001 - whatever ended the loop, callers must hear of it
            self._failure = self._failure or exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        from mcp import Client

        self._loop, self._queue = asyncio.get_running_loop(), asyncio.Queue()
        pending: set[asyncio.Task] = set()
        try:
            async with (
                _http_client(self.server) as http,
                Client(
                    _target(self.server, http, self.grants),
                    read_timeout_seconds=self.server.startup_timeout_s,
                ) as client,
            ):
                self._ready.set()
                while (item := await self._queue.get()) is not _STOP:
                    job, future = item
                    task = asyncio.create_task(_settle(job(client), future))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
                for task in list(pending):
                    task.cancel()
        except BaseException as exc:
            self._failure = exc
            raise
        finally:
            self._fail_queued(self._failure or MCPToolError(f"MCP server '{self.server.name}' stopped"))

    def _fail_queued(self, exc: BaseException) -> None:
        while self._queue is not None and not self._queue.empty():
            item = self._queue.get_nowait()
            if item is not _STOP and not item[1].done():
                item[1].set_exception(
                    MCPToolError(f"MCP server '{self.server.name}' stopped: {_reason(exc)}")
                )


def _http_client(server: MCPServerConfig) -> AsyncContextManager[Any]:
    """The guarded HTTP client a URL server is reached with (closed by the caller), or nothing."""
    if not server.url:
        return contextlib.nullcontext()
    # the SDK's default timeouts (30 s; reads 300 s: a server may hold an event stream open)
    return guarded_async_client([urlsplit(server.url).hostname or ""], 30.0, read_timeout_s=300.0)


def _target(server: MCPServerConfig, http: Any, grants: consent.Grants | None) -> Any:
    """What the SDK's Client connects to: a stdio command, or streamable HTTP over `http`."""
    if not server.url:
        # resolved once, here, right before the start: this resolution is the one compared with
        # the grant and the one started, from a folder where nothing shadows it (program.py)
        resolved = (
            consent.checked_start(server, grants)
            if grants is not None
            else program.resolve(server.command or [], env=server.env)
        )
        return server.target().model_copy(
            update={
                "command": resolved.argv[0],
                "args": resolved.argv[1:],
                "cwd": str(program.start_folder()),
            }
        )
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(server.url, http_client=http)


async def _settle(awaitable: Awaitable[Any], future: concurrent.futures.Future) -> None:
    try:
        result = await awaitable
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
        if not future.done():
            future.set_exception(exc if isinstance(exc, Exception) else MCPToolError(_reason(exc)))
        return
    if not future.done():
        future.set_result(result)


def _reason(exc: BaseException | None) -> str:
    """The innermost useful message of an exception (task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {len(block.data)} base64 characters]"
    if kind == "resource_link":
        return f"[resource: {block.uri}]"
    if kind == "resource":
        resource = block.resource
        return getattr(resource, "text", None) or f"[resource: {resource.uri}, binary]"
    return json.dumps(block.model_dump(mode="json"), ensure_ascii=False)


def tool_result(result: Any) -> Any:
    """A CallToolResult as a FlowCall tool result: structured content first, else the text."""
    text = "\n".join(_block_text(b) for b in result.content)
    if result.is_error:
        raise MCPToolError(text or "the tool reported an error without a message")
    if result.structured_content is not None:
        return result.structured_content
    return text


def _invoker(connection: MCPConnection, tool_name: str) -> Callable[..., Any]:
    """A call of one MCP tool. The name is bound here, outside the arguments: whatever names
    the model gives its arguments, they all go to this tool and none can pick another."""

    def invoke(**arguments: Any) -> Any:
        return connection.call_tool(tool_name, arguments, connection.server.call_timeout_s)

    return invoke


def _distinct_name(listed: str, taken: set[str]) -> str:
    """The server's tool name as a model can call it (ASCII letters, digits, _ and -, at most 64),
    distinct from the names already taken. "工具" and "数据" both clean to "__", "a.b" and "a_b"
    to "a_b": such a name gets a short hash of the server's own name, so each stays callable."""
    import hashlib

    name = _SAFE_NAME.sub("_", listed)[:64]
    if not name.strip("_") or name in taken:
        digest = hashlib.sha256(listed.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = name.strip("_")[:55] or "tool"
        name = f"{stem}_{digest}"
    taken.add(name)
    return name


def tools_of(connection: MCPConnection) -> list[Tool]:
    """The server's tools as FlowCall tools: `<server>/mcp/<tool>`, annotations kept."""
    server = connection.server
    tools: list[Tool] = []
    taken: set[str] = set()
    for listed in connection.list_tools():
        hints = listed.annotations
        read_only = bool(hints and hints.read_only_hint)
        # MCP's defaults: not read-only, destructive unless said otherwise, open world
        destructive = (
            hints.destructive_hint if hints and hints.destructive_hint is not None else True
        ) and not read_only
        open_world = hints.open_world_hint if hints and hints.open_world_hint is not None else True
        name = _distinct_name(listed.name, taken)
        # its calls are checked against this schema: refuse one that would have something fetched
        where = f"MCP server '{server.name}', tool '{listed.name}', inputSchema"
        nesting.check_depth(listed.input_schema, where)
        check_refs(listed.input_schema, where)

        tools.append(
            Tool(
                name=name,
                version=f"{server.name}/mcp/{name}",
                description=listed.description or "",
                parameters=listed.input_schema or {"type": "object", "properties": {}},
                func=_invoker(connection, listed.name),
                annotations=ToolAnnotations(
                    read_only=read_only, destructive=destructive, open_world=open_world
                ),
                timeout_s=server.call_timeout_s,
                source="mcp",
                trusted=server.trusted,
            )
        )
    if not tools:
        raise ConfigError(f"MCP server '{server.name}' offers no tools")
    return tools
