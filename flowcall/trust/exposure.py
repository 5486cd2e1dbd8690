"""Who may reach a server FlowCall starts (`flowcall mcp serve`, `flowcall serve`): loopback
or not, and the Host names and Origins a request may carry. A page on evil.example that
resolves to this machine (DNS rebinding) sends Host: evil.example, or its own Origin."""

from __future__ import annotations

import ipaddress
import socket
from typing import Iterable

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
