"""The studio's server guard: the studio answers only its own host names, takes a websocket or a
cross-origin request only from its own pages, and no other site can frame it.

Why: whoever drives the studio can grant a command, start a run or make an API key. A web page
whose host name is made to resolve to 127.0.0.1 (DNS rebinding) is "same origin" to a naive
check; a page of another origin (another site, another app on another local port) could open the
websocket; a page that frames the studio could steer a click on Grant (clickjacking).

How: an ASGI middleware put in front of Streamlit through its public `st.App(middleware=...)`.
Streamlit has settings for XSRF, upload size and the websocket's Host (`server.allowedHosts`),
but none that checks every request's Host, compares an Origin exactly (scheme, host and port)
or sends frame headers; this middleware does those. It fails closed: without `st.App` the
studio does not start, and the studio's script draws nothing in a process it does not guard.
"""

from __future__ import annotations

import inspect
import os
from typing import Any

from flowcall.trust.exposure import authority, same_origin

HOSTS_ENV = "FLOWCALL_STUDIO_HOSTS"  # more host names to answer, comma-separated
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_WILDCARDS = {"", "0.0.0.0", "::"}

# What `flowcall studio` passes to Streamlit, so the installed wheel (no .streamlit/config.toml)
# runs as the clone does. Every one is a public Streamlit setting.
SERVER_SETTINGS = {
    "server.headless": "true",
    "server.maxUploadSize": "5",  # MB: a flow or run file is small
    "server.enableXsrfProtection": "true",
    "server.enableCORS": "true",
    "server.enableAgentApi": "false",  # no second way in that skips the browser's checks
    "client.toolbarMode": "minimal",  # no "Deploy" button
    "browser.gatherUsageStats": "false",
    "theme.primaryColor": "#2f6fed",
}

_guarding = False  # set when the guard is built in this process (see guarding())


def allowed_hosts() -> set[str]:
    """Loopback names, the address the studio binds (unless it binds every address) and those
    in FLOWCALL_STUDIO_HOSTS."""
    from streamlit import config

    hosts = set(LOOPBACK)
    bound = (config.get_option("server.address") or "").strip().strip("[]").lower()
    if bound not in _WILDCARDS and not bound.startswith("unix://"):
        hosts.add(bound)
    extra = os.environ.get(HOSTS_ENV, "").replace(",", " ").split()
    return hosts | {name.strip("[]").lower() for name in extra}


def refusal(scheme: str, host: str | None, origin: str | None, hosts: set[str]) -> str | None:
    """Why a request to `scheme` with these Host and Origin headers is refused, or None to let it
    through. No Origin (a client that is not a browser, or a same-origin GET) is let through."""
    own = authority(host or "")
    if own is None or own[0] not in hosts:
        return (
            "This studio answers only the host names it was started for. To open it under "
            f"another name, start it with `flowcall studio --allow-host NAME` (or set {HOSTS_ENV})."
        )
    page_scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    if origin is None or same_origin(origin, page_scheme, host or "", hosts):
        return None
    return "A page from another site may not use this studio: open the studio itself."


def _frame_headers(path: str, base: str) -> list[tuple[bytes, bytes]]:
    """No site frames the studio; its own component pages (the canvas) are framed by the studio."""
    if path.startswith(f"{base}/component/"):
        return [(b"x-frame-options", b"SAMEORIGIN"), (b"content-security-policy", b"frame-ancestors 'self'")]
    return [(b"x-frame-options", b"DENY"), (b"content-security-policy", b"frame-ancestors 'none'")]


class StudioGuard:
    """The ASGI middleware in front of Streamlit (see the module's text)."""

    def __init__(self, app: Any) -> None:
        from streamlit import config

        global _guarding
        self.app = app
        self.hosts = allowed_hosts()
        self.base = "/" + (config.get_option("server.baseUrlPath") or "").strip("/")
        self.base = self.base.rstrip("/")
        _guarding = True

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        problem = refusal(scope.get("scheme", "http"), headers.get("host"), headers.get("origin"), self.hosts)
        if problem and scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})  # before accept: HTTP 403
        framing = _frame_headers(scope.get("path", ""), self.base)
        if problem:
            return await _refuse(send, problem, framing)

        async def with_frame_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *framing]}
            await send(message)

        await self.app(scope, receive, with_frame_headers if scope["type"] == "http" else send)


async def _refuse(send: Any, text: str, framing: list[tuple[bytes, bytes]]) -> None:
    body = (text + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
        *framing,
    ]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def guard() -> list[Any]:
    """The middleware list for `st.App(..., middleware=guard())`; refuses to start (RuntimeError)
    on a Streamlit without `st.App(middleware=...)`, rather than serve the studio unguarded."""
    import streamlit as st

    app_class = getattr(st, "App", None)
    if app_class is None or "middleware" not in inspect.signature(app_class).parameters:
        raise RuntimeError(
            f"the studio's server guard needs Streamlit's st.App(middleware=...), which Streamlit "
            f"{st.__version__} lacks, so the studio does not start: pip install 'streamlit>=1.67,<2'"
        )
    from starlette.middleware import Middleware

    return [Middleware(StudioGuard)]


def guarding() -> bool:
    """Is this process's studio served behind the guard? (Streamlit's AppTest runs the pages
    with no server at all: nothing to guard there.)"""
    from streamlit import config

    return _guarding or bool(config.get_option("global.appTest"))
