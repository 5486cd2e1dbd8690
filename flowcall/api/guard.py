"""Checks before any route runs, as ASGI middleware so they hold for every path (the OpenAPI
pages included): the Host and Origin a request carries (DNS rebinding, cross-site pages), its
key (before any route reads, parses or validates its body, so a caller without a key learns
nothing of what a route takes) and the size of its body."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.requests import Request

from flowcall.api.errors import FORBIDDEN, INTERNAL, TOO_LARGE, ApiError, error_body
from flowcall.core.errors import ConfigError
from flowcall.trust.exposure import Origin, allowed_names, authority, origin_of, same_origin

logger = logging.getLogger(__name__)
CALLER_KEY = "flowcall.caller"  # where the guard leaves the caller it checked, in the request's scope
PUBLIC_PATHS = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")  # the API's own pages


class Guard:
    def __init__(
        self,
        app: Any,
        *,
        host: str,
        max_body: int,
        authenticate: Callable[[Request], Awaitable[Any]],
        allow_hosts: Iterable[str] = (),
        allow_origins: Iterable[str] = (),
    ):
        self.app, self.max_body, self.authenticate = app, max_body, authenticate
        self.names = {name.lower() for name in allowed_names(host, allow_hosts)}
        self.origins = {given_origin(origin) for origin in allow_origins}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        problem = self._refused(scope["scheme"], headers)
        if problem:
            await _json(send, 403, FORBIDDEN, problem)
            return
        if scope["path"] not in PUBLIC_PATHS and not await self._authenticated(scope, send):
            return
        receive = await self._capped(scope, headers, receive, send)
        if receive is not None:
            await self.app(scope, receive, send)

    async def _authenticated(self, scope: Any, send: Any) -> bool:
        """Check the key (and charge its rate) before any route runs; False once refused."""
        try:
            scope[CALLER_KEY] = await self.authenticate(Request(scope))
            return True
        except ApiError as exc:
            await _json(send, exc.status, exc.code, exc.message, exc.headers)
        except Exception:
            logger.exception("checking an API key failed")
            await _json(send, 500, INTERNAL, "the server failed on this request; its log says why")
        return False

    async def _capped(self, scope: Any, headers: dict[str, str], receive: Any, send: Any) -> Any:
        """`receive` for a body within the cap, or None once 413 is sent."""
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _json(send, 413, TOO_LARGE, f"the request body is over {self.max_body} bytes")
            return None
        if length is None and scope["method"] in ("POST", "PUT", "PATCH"):
            body = await _read_capped(receive, self.max_body)  # chunked: read whole, within the cap
            if body is None:
                await _json(send, 413, TOO_LARGE, f"the request body is over {self.max_body} bytes")
                return None
            return _replay(body, receive)
        return receive

    def _refused(self, scheme: str, headers: dict[str, str]) -> str | None:
        host = authority(headers.get("host", ""))
        if host is None or host[0] not in self.names:
            return "this server does not answer to that Host name (start it with --allow-host to add one)"
        origin = headers.get("origin")
        if origin is None or same_origin(origin, scheme, headers["host"], self.names, self.origins):
            return None
        return (
            "requests from a page on another site are refused "
            "(start the server with --allow-origin to allow one)"
        )


def given_origin(text: str) -> Origin:
    """An --allow-origin as an origin, or a ConfigError saying how to write one."""
    origin = origin_of(text)
    if origin is None:
        raise ConfigError(
            f"--allow-origin {text!r} is not an origin; give one like https://app.example.com:8443"
        )
    return origin


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


async def _json(
    send: Any, status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> None:
    body = json.dumps(error_body(code, message)).encode()
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
