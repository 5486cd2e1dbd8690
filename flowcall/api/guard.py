"""Checks before any route runs, as ASGI middleware so they hold for every path (the OpenAPI
pages included): the Host and Origin a request carries (DNS rebinding, cross-site pages) and
the size of its body."""

from __future__ import annotations

import json
from typing import Any, Iterable

from flowcall.api.errors import FORBIDDEN, TOO_LARGE, error_body
from flowcall.trust.exposure import allowed_names, host_name


class Guard:
    def __init__(
        self,
        app: Any,
        *,
        host: str,
        max_body: int,
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
    ):
        self.app, self.max_body = app, max_body
        self.names = {name.lower() for name in allowed_names(host, allow_hosts)}
        self.origins = {origin.rstrip("/").lower() for origin in allow_origins}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        problem = self._refused(headers)
        if problem:
            await _json(send, 403, FORBIDDEN, problem)
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _json(send, 413, TOO_LARGE, f"the request body is over {self.max_body} bytes")
            return
        if length is None and scope["method"] in ("POST", "PUT", "PATCH"):
            body = await _read_capped(receive, self.max_body)  # chunked: read whole, within the cap
            if body is None:
                await _json(send, 413, TOO_LARGE, f"the request body is over {self.max_body} bytes")
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _refused(self, headers: dict[str, str]) -> str | None:
        host = host_name(headers.get("host", ""))
        if host not in self.names:
            return "this server does not answer to that Host name (start it with --allow-host to add one)"
        origin = headers.get("origin")
        if origin is None or origin.rstrip("/").lower() in self.origins:
            return None
        scheme, _, authority = origin.partition("://")
        if scheme.lower() in ("http", "https") and host_name(authority) in self.names:
            return None
        return (
            "requests from a page on another site are refused "
            "(start the server with --allow-origin to allow one)"
        )


async def _read_capped(receive: Any, limit: int) -> bytes | None:
    """The whole body, or None once it passes `limit` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Any) -> Any:
    """The body read already, then the client's own messages (a disconnect, when it comes)."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


async def _json(send: Any, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
