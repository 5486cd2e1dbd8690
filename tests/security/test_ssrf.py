"""SSRF through HTTP (OpenAPI) tools: DNS rebinding, proxies from the environment, addresses
that reach internal ones, and tool headers that follow a redirect to another host.

Real HTTP servers on 127.0.0.1 receive the requests. Names under .flowcall.test are answered by
a stub DNS (socket.getaddrinfo), and every TCP connect is recorded; a connect to an address
that is not loopback is refused by the test, so no traffic leaves this machine.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

from flowcall.core.spec import HTTPToolSource
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.http_guard import UnsafeRequest
from flowcall.tools.openapi_tools import tools_from_openapi

CTX = RunContext(run_id="ssrf")
PUBLIC = "93.184.216.34"  # a global address; the test network refuses connects to it
REAL_GETADDRINFO = socket.getaddrinfo
REAL_CONNECT = socket.create_connection

Reply = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]


def ok(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, b'{"ok": true}'


class Capture:
    """A real HTTP server on 127.0.0.1 that records every request it gets."""

    def __init__(self, reply: Reply = ok):
        self.requests: list[dict[str, Any]] = []
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                capture.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": self.rfile.read(length) if length else b"",
                    }
                )
                status, headers, body = reply(self)
                self.send_response(status)
                for key, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_CONNECT = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Network:
    """Stub DNS for chosen names (one answer per lookup, the last repeated) and a record of
    every TCP connect, by the address it went to."""

    def __init__(self) -> None:
        self.answers: dict[str, list[str]] = {}
        self.lookups: dict[str, int] = {}
        self.connects: list[str] = []

    def getaddrinfo(self, host: Any, port: Any, *args: Any, **kwargs: Any) -> list[tuple]:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in self.answers:
            return REAL_GETADDRINFO(host, port, *args, **kwargs)
        count = self.lookups[name] = self.lookups.get(name, 0) + 1
        address = self.answers[name][min(count, len(self.answers[name])) - 1]
        if ":" in address:
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, int(port or 0), 0, 0))]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]

    def create_connection(self, address: tuple, *args: Any, **kwargs: Any) -> socket.socket:
        host, port = address[:2]
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:  # a connect by name: where the name resolves now is where it goes
            ip = ipaddress.ip_address(self.getaddrinfo(host, port)[0][4][0])
        self.connects.append(str(ip))
        if not ip.is_loopback:
            raise ConnectionRefusedError(f"test network: no traffic to {ip} leaves this machine")
        return REAL_CONNECT((str(ip), port), *args, **kwargs)


@pytest.fixture
def network(monkeypatch):
    net = Network()
    monkeypatch.setattr(socket, "getaddrinfo", net.getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", net.create_connection)
    return net


@pytest.fixture
def capture():
    server = Capture()
    yield server
    server.close()


def http_tool(tmp_path, base_url: str, allow_hosts: list[str] | None = None) -> Tool:
    """One GET operation with a header, an Authorization header and a query parameter."""
    document = {
        "openapi": "3.0.3",
        "info": {"title": "api", "version": "1"},
        "paths": {
            "/data": {
                "get": {
                    "operationId": "getData",
                    "parameters": [
                        {"name": "X-Api-Key", "in": "header", "schema": {"type": "string"}},
                        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                        {"name": "token", "in": "query", "schema": {"type": "string"}},
                    ],
                }
            }
        },
    }
    path = tmp_path / "api.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    [tool] = tools_from_openapi(
        HTTPToolSource(name="api", openapi=str(path), base_url=base_url, allow_hosts=allow_hosts or [])
    )
    return tool


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the outcome is what the test observes
        return exc


def test_dns_rebinding_cannot_move_a_checked_request_to_localhost(attack, network, capture, tmp_path):
    attack.tried(
        "an HTTP tool's host answers DNS with a public address for the check and 127.0.0.1 for the "
        "connect (DNS rebinding)",
        expected="the connection goes to the checked public address only; 127.0.0.1 sees no request",
    )
    network.answers["rebind.flowcall.test"] = [PUBLIC, "127.0.0.1"]
    tool = http_tool(tmp_path, f"http://rebind.flowcall.test:{capture.port}")
    result = outcome(lambda: tool.invoke({"token": "t"}, CTX))
    attack.observed(
        f"connects to {network.connects}; requests seen on 127.0.0.1: {len(capture.requests)}; "
        f"result: {result!r}"
    )
    assert capture.requests == [] and network.connects == [PUBLIC]


def test_proxy_variables_in_the_environment_do_not_receive_tool_requests(attack, monkeypatch, tmp_path):
    attack.tried(
        "HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at a server on 127.0.0.1 that would see (and resolve) "
        "every tool request",
        expected="the proxy sees 0 requests; the API gets the request directly",
    )
    api, proxy = Capture(), Capture()
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        tool = http_tool(tmp_path, api.url, allow_hosts=["127.0.0.1"])
        result = outcome(lambda: tool.invoke({"token": "t"}, CTX))
        attack.observed(
            f"proxy saw {len(proxy.requests)} requests, API saw {len(api.requests)}; result: {result!r}"
        )
        assert proxy.requests == [] and len(api.requests) == 1 and result == {"ok": True}
    finally:
        api.close()
        proxy.close()


# Addresses that pass `ipaddress.is_global` (Python 3.11) but lead to an internal one: through
# a NAT64 or 6to4 gateway, the kernel's IPv4-compatible/-mapped handling, or ranges no longer
# (or not yet) routed publicly. The plain ranges (loopback, private...) are refused as before:
# tests/tools/test_openapi_tools.py lists every range.
TUNNELS = [
    ("NAT64 of 127.0.0.1", "64:ff9b::7f00:1"),
    ("NAT64 of cloud metadata", "64:ff9b::a9fe:a9fe"),
    ("local-use NAT64 of 10.0.0.1", "64:ff9b:1::a00:1"),
    ("6to4 of 127.0.0.1", "2002:7f00:1::1"),
    ("6to4 of cloud metadata", "2002:a9fe:a9fe::1"),
    ("IPv4-compatible ::127.0.0.1", "::7f00:1"),
    ("IPv4-compatible cloud metadata", "::a9fe:a9fe"),
    ("IPv4-mapped, any", "::ffff:808:808"),
    ("site-local fec0::/10", "fec0::1"),
    ("6to4 relay anycast 192.88.99.0/24", "192.88.99.1"),
    ("documentation 3fff::/20", "3fff::1"),
]


@pytest.mark.parametrize("label, address", TUNNELS, ids=[label for label, _ in TUNNELS])
def test_addresses_that_lead_to_internal_ones_are_refused_with_no_traffic(
    attack, network, tmp_path, label, address
):
    attack.tried(
        f"an HTTP tool's host resolves to {address} ({label})",
        expected="UnsafeRequest naming allow_hosts, no connection attempted",
    )
    network.answers["inside.flowcall.test"] = [address]
    tool = http_tool(tmp_path, "http://inside.flowcall.test:8080")
    result = outcome(lambda: tool.invoke({}, CTX))
    attack.observed(f"{type(result).__name__}: {result}; connects: {network.connects}")
    assert isinstance(result, UnsafeRequest) and "allow_hosts" in str(result) and network.connects == []


def test_tool_headers_do_not_follow_a_redirect_to_another_host(attack, tmp_path):
    attack.tried(
        "an allowed API answers 302 to another host; the call carries X-Api-Key and Authorization "
        "header arguments",
        expected="the other host gets the redirected request without either header",
    )
    other = Capture()
    api = Capture(lambda h: (302, {"Location": f"http://localhost:{other.port}/landing"}, b""))
    try:
        tool = http_tool(tmp_path, api.url, allow_hosts=["127.0.0.1", "localhost"])
        result = outcome(
            lambda: tool.invoke({"X-Api-Key": "sk-secret", "Authorization": "Bearer tok-secret"}, CTX)
        )
        sent = api.requests[0]["headers"] if api.requests else {}
        got = other.requests[0]["headers"] if other.requests else {}
        attack.observed(
            f"API got x-api-key={sent.get('x-api-key')!r}; other host got {len(other.requests)} "
            f"request(s), x-api-key={got.get('x-api-key')!r}, authorization={got.get('authorization')!r}; "
            f"result: {result!r}"
        )
        assert sent.get("x-api-key") == "sk-secret"  # the host the flow named does get it
        assert len(other.requests) == 1 and result == {"ok": True}
        assert "x-api-key" not in got and "authorization" not in got
    finally:
        api.close()
        other.close()


def test_query_arguments_do_not_follow_a_redirect(attack, tmp_path):
    attack.tried(
        "an allowed API answers 302 to another host; the call carries a secret query argument",
        expected="the other host gets the Location's URL only, not the secret",
    )
    other = Capture()
    api = Capture(lambda h: (302, {"Location": f"http://localhost:{other.port}/landing?page=2"}, b""))
    try:
        tool = http_tool(tmp_path, api.url, allow_hosts=["127.0.0.1", "localhost"])
        result = outcome(lambda: tool.invoke({"token": "q-secret"}, CTX))
        paths = [r["path"] for r in other.requests]
        attack.observed(
            f"API got {[r['path'] for r in api.requests]}; other host got {paths}; result: {result!r}"
        )
        assert "token=q-secret" in api.requests[0]["path"] and paths == ["/landing?page=2"]
    finally:
        api.close()
        other.close()
