"""Outbound HTTP for tools, guarded: no requests to internal addresses (SSRF), a timeout, and
a cap on the response size.

A model chooses the arguments of an HTTP tool, and a tool's server chooses where to redirect,
so neither may steer a request at the machine FlowCall runs on or its network. How it holds:

- The transport resolves a host once per request, checks every address, and connects to a
  checked address itself; the Host header and the TLS name (SNI, certificate check) keep the
  name. A DNS answer that changes between check and connect (rebinding) changes nothing.
- Proxy settings from the environment are ignored (trust_env=False): a proxy resolves names
  itself, past the check.
- An address is refused when it is not global, or lies in a range that reaches one that is not
  (NAT64, 6to4, Teredo, IPv4-compatible and IPv4-mapped IPv6), unless the flow names the host
  in `allow_hosts`.
- Redirects are followed here, one hop at a time, each hop checked by the transport; headers
  from the tool's arguments (and cookies, auth) are dropped when a redirect leaves the origin,
  and the query arguments on any redirect (the Location is the whole next URL).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import anyio.to_thread
import httpx
import httpx2  # what the mcp SDK speaks: its streamable HTTP client takes an httpx2.AsyncClient

MAX_REDIRECTS = 5

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ranges refused on top of `not is_global`: some pass is_global on some Python versions, and
# several IPv6 prefixes carry an IPv4 address that a gateway or the kernel then reaches.
_REFUSED = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/96",  # unspecified, loopback and IPv4-compatible ::a.b.c.d
        "::ffff:0:0/96",  # IPv4-mapped
        "64:ff9b::/96",
        "64:ff9b:1::/48",  # NAT64
        "100::/64",  # discard
        "2001::/23",  # IETF protocol assignments, Teredo 2001::/32 among them
        "2001:db8::/32",
        "3fff::/20",  # documentation
        "2002::/16",  # 6to4
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",  # unique-local, link-local, site-local, multicast
    )
)


class UnsafeRequest(Exception):
    """The request was refused before it was sent; the message says why and how to allow it."""


class ResponseTooLarge(Exception):
    pass


@dataclass
class Reply:
    status: int
    content_type: str
    body: bytes  # decoded from any content-encoding
    url: str  # after redirects


def is_internal(address: IPAddress) -> bool:
    return not address.is_global or any(address.version == net.version and address in net for net in _REFUSED)


def checked_addresses(scheme: str, host: str, port: int | None, allow_hosts: list[str]) -> list[str]:
    """The addresses to connect to for `host`, in DNS order: every one it resolves to checked.
    A host in `allow_hosts` may resolve anywhere, but is still pinned."""
    if scheme not in ("http", "https"):
        raise UnsafeRequest(f"only http and https URLs are allowed, not {scheme!r}")
    host = host.lower().strip("[]")
    if not host:
        raise UnsafeRequest("the URL has no host")
    try:
        infos = socket.getaddrinfo(host, port or (443 if scheme == "https" else 80), type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UnsafeRequest(f"cannot resolve {host}: {exc}") from exc
    addresses = list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))
    if not addresses:
        raise UnsafeRequest(f"cannot resolve {host}: no addresses")
    if host not in (h.lower().strip("[]") for h in allow_hosts):
        for address in addresses:
            if is_internal(address):
                raise UnsafeRequest(
                    f"{host} resolves to {address}, an internal address (loopback, private, link-local, "
                    f"reserved, or a tunnel or translation prefix that leads to one); FlowCall does "
                    f"not send tool requests there unless the flow lists '{host}' in allow_hosts"
                )
    return [str(a) for a in addresses]


def check_url(url: str, allow_hosts: list[str]) -> list[str]:
    """Refuse `url` unless it is http(s) and its host is public (or allowed); its addresses."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafeRequest(f"only http and https URLs are allowed, not {url!r}")
    if not parts.hostname:
        raise UnsafeRequest(f"the URL {url!r} has no host")
    return checked_addresses(parts.scheme, parts.hostname, parts.port, allow_hosts)


RequestT = TypeVar("RequestT", httpx.Request, httpx2.Request)


def pinned(request: RequestT, allow_hosts: list[str]) -> list[RequestT]:
    """The request once per checked address of its host, to try in turn; each keeps the name
    for the Host header and for TLS."""
    url = request.url
    host = url.raw_host.decode("ascii")  # IDNA-encoded: what DNS and TLS see
    attempts = []
    for address in checked_addresses(url.scheme, host, url.port, allow_hosts):
        extensions = dict(request.extensions)
        if url.scheme == "https" and address != host:
            extensions.setdefault("sni_hostname", host)  # httpcore: TLS server name and certificate check
        # the headers already hold Host: <name>, made from the URL the request was built with
        attempts.append(
            type(request)(
                request.method,
                url.copy_with(host=address),
                headers=request.headers,
                stream=request.stream,
                extensions=extensions,
            )
        )
    return attempts


class PinnedTransport(httpx.HTTPTransport):
    """httpx transport that connects only to addresses it checked."""

    def __init__(self, allow_hosts: list[str], **kwargs: Any):
        super().__init__(trust_env=False, **kwargs)
        self.allow_hosts = list(allow_hosts)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        *others, last = pinned(request, self.allow_hosts)
        for attempt in others:
            try:
                return super().handle_request(attempt)
            except httpx.ConnectError:  # the next address, as a connect by name would (nothing was sent)
                continue
        return super().handle_request(last)


class AsyncPinnedTransport(httpx2.AsyncHTTPTransport):
    """The async twin, for httpx2 (the mcp SDK's HTTP client)."""

    def __init__(self, allow_hosts: list[str], **kwargs: Any):
        super().__init__(trust_env=False, **kwargs)
        self.allow_hosts = list(allow_hosts)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        # getaddrinfo blocks: resolve in a worker thread, not on the event loop
        *others, last = await anyio.to_thread.run_sync(pinned, request, self.allow_hosts)
        for attempt in others:
            try:
                return await super().handle_async_request(attempt)
            except httpx2.ConnectError:
                continue
        return await super().handle_async_request(last)


def guarded_client(allow_hosts: list[str], timeout_s: float) -> httpx.Client:
    return httpx.Client(
        transport=PinnedTransport(allow_hosts), trust_env=False, follow_redirects=False, timeout=timeout_s
    )


def guarded_async_client(
    allow_hosts: list[str], timeout_s: float, read_timeout_s: float | None = None
) -> httpx2.AsyncClient:
    """An async client for the mcp SDK: pinned, no proxies from the environment, no redirects
    followed by the client (the SDK follows same-origin ones itself, through this transport).
    `read_timeout_s`: longer reads, for event streams a server holds open."""
    return httpx2.AsyncClient(
        transport=AsyncPinnedTransport(allow_hosts),
        trust_env=False,
        follow_redirects=False,
        timeout=httpx2.Timeout(timeout_s, read=read_timeout_s or timeout_s),
    )


def check_scheme(url: str) -> None:
    if urlsplit(url).scheme not in ("http", "https"):
        raise UnsafeRequest(f"only http and https URLs are allowed, not {url!r}")


def _origin(url: str) -> tuple[str, str, int]:
    parts = httpx.URL(url)
    return parts.scheme, parts.host, parts.port or (443 if parts.scheme == "https" else 80)


def guarded_request(
    method: str, url: str, *, allow_hosts: list[str], timeout_s: float, max_bytes: int, **kwargs: Any
) -> Reply:
    """One request, its redirects followed by hand with every hop checked; the body read up
    to `max_bytes`."""
    with guarded_client(allow_hosts, timeout_s) as client:
        for _ in range(MAX_REDIRECTS + 1):
            check_scheme(url)
            with client.stream(method, url, **kwargs) as response:
                if response.is_redirect and "location" in response.headers:
                    target = urljoin(str(response.url), response.headers["location"])
                    kwargs.pop("params", None)  # the Location is the whole next URL, query included
                    if _origin(target) != _origin(url):
                        # headers from tool arguments (keys, tokens) were meant for the host the flow named
                        kwargs = {k: v for k, v in kwargs.items() if k not in ("headers", "cookies", "auth")}
                    if response.status_code in (301, 302, 303) and method != "HEAD":
                        method, kwargs = (
                            "GET",
                            {k: v for k, v in kwargs.items() if k not in ("json", "content", "data")},
                        )
                    url = target
                    continue
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise ResponseTooLarge(
                            f"the response from {url} is larger than {max_bytes} bytes; "
                            "raise max_response_bytes if it should be read"
                        )
                return Reply(response.status_code, response.headers.get("content-type", ""), bytes(body), url)
    raise UnsafeRequest(f"more than {MAX_REDIRECTS} redirects, last to {url}")
