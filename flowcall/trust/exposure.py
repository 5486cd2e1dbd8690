"""Who may reach a server FlowCall starts (`flowcall mcp serve`, `flowcall serve`): loopback
or not, and the Host names and Origins a request may carry. A page on evil.example that
resolves to this machine (DNS rebinding) sends Host: evil.example, or its own Origin."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_names(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The Host names a request may carry. On loopback: the loopback names. On one address or
    name: that one. On all interfaces (0.0.0.0, ::): loopback, this machine's name and
    addresses as far as it knows them; others (a DNS name, a NAT address) come from --allow-host."""
    if is_loopback(host):
        names = list(LOOPBACK_NAMES)
    elif host in WILDCARD_HOSTS:
        names = list(LOOPBACK_NAMES)
        try:
            hostname = socket.gethostname()
            names += [hostname, socket.getfqdn(), *socket.gethostbyname_ex(hostname)[2]]
        except OSError:
            pass
    else:
        names = [host]
    return list(dict.fromkeys([*names, *extra]))


def host_name(header: str) -> str:
    """The name in a Host header or an Origin's authority: without the port, IPv6 unbracketed."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


DEFAULT_PORTS = {"http": 80, "https": 443}
Origin = tuple[str, str, int]  # scheme, host, port: what a browser compares


def authority(text: str) -> tuple[str, int | None] | None:
    """(host, port) of a Host header or an origin's authority, the host lower-case and IPv6
    unbracketed; None if it is not one (a port that is not a number, userinfo, a path)."""
    try:
        parts = urlsplit(f"//{text.strip()}")
        port = parts.port
    except ValueError:  # a port that is not a number (127.0.0.1:80.evil.example)
        return None
    if not parts.hostname or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return parts.hostname.lower(), port


def origin_of(text: str) -> Origin | None:
    """An Origin header as (scheme, host, port), the default port filled in; None for `null`
    or anything that is not exactly scheme://host[:port]."""
    scheme, sep, rest = text.strip().rstrip("/").partition("://")
    scheme = scheme.lower()
    found = authority(rest) if sep and scheme in DEFAULT_PORTS else None
    if found is None:
        return None
    return scheme, found[0], found[1] or DEFAULT_PORTS[scheme]


def same_origin(
    origin: str, scheme: str, host: str, names: Iterable[str], extra: Iterable[Origin] = ()
) -> bool:
    """Whether a page of `origin` is this server's own: one of its `names` on the scheme and
    port the request came to (its Host header), or one of `extra`. A page on another port of
    this host (another local program) is another site."""
    page, own = origin_of(origin), authority(host)
    if page is None or own is None:
        return False
    own_port = own[1] or DEFAULT_PORTS.get(scheme, 0)
    return page in set(extra) or (page[0] == scheme and page[2] == own_port and page[1] in set(names))
