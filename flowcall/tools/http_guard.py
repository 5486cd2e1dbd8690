"""Outbound HTTP for tools, guarded: no requests to internal addresses (SSRF), a timeout, and
a cap on the response size.

A model chooses the arguments of an HTTP tool, and a tool's server chooses where to redirect,
so neither may steer a request at the machine FlowCall runs on or its network. Every host is
resolved and each of its addresses must be public, on the first request and again on every
redirect, unless the flow names the host in `allow_hosts`. Redirects are followed here, one
hop at a time, never by the HTTP library.

Weak spot, known: the address is checked, then httpx resolves the name again to connect; a
DNS server that answers differently the second time (rebinding) could slip past. Pinning the
checked address would need a custom transport.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

MAX_REDIRECTS = 5


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


def check_url(url: str, allow_hosts: list[str]) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UnsafeRequest(f"only http and https URLs are allowed, not {url!r}")
    host = (parts.hostname or "").lower()
    if not host:
        raise UnsafeRequest(f"the URL {url!r} has no host")
    if host in (h.lower() for h in allow_hosts):
        return
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UnsafeRequest(f"cannot resolve {host}: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if not address.is_global or address.is_multicast:
            raise UnsafeRequest(f"{host} resolves to {address}, an internal address (loopback, private, link-local or "
                                f"reserved); FlowCall does not send tool requests there unless the flow lists "
                                f"'{host}' in allow_hosts")


def guarded_request(method: str, url: str, *, allow_hosts: list[str], timeout_s: float, max_bytes: int,
                    **kwargs: Any) -> Reply:
    """One request, its redirects followed by hand with every hop checked; the body read up
    to `max_bytes`."""
    with httpx.Client(follow_redirects=False, timeout=timeout_s) as client:
        for _ in range(MAX_REDIRECTS + 1):
            check_url(url, allow_hosts)
            with client.stream(method, url, **kwargs) as response:
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(str(response.url), response.headers["location"])
                    if response.status_code in (301, 302, 303) and method != "HEAD":
                        method, kwargs = "GET", {k: v for k, v in kwargs.items() if k not in ("json", "content", "data")}
                    continue
                body = bytearray()
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise ResponseTooLarge(f"the response from {url} is larger than {max_bytes} bytes; "
                                               "raise max_response_bytes if it should be read")
                return Reply(response.status_code, response.headers.get("content-type", ""), bytes(body), url)
    raise UnsafeRequest(f"more than {MAX_REDIRECTS} redirects, last to {url}")
