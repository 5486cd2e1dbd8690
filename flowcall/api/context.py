"""What every route shares: the service, the server's settings and the keys' limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from flowcall.api.access import Caller, Limits, identify


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    auth: bool = True
    max_body: int = 1_000_000  # bytes
    rate: float = 120.0  # requests a minute per key
    burst: int = 30
    concurrent: int = 4  # runs going at once per key
    wait_s: float = 300.0  # the longest a request waits for its run before answering 202 with its id
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()


@dataclass
class ApiContext:
    service: Any  # flowcall.service.front.FlowCall
    settings: Settings
    limits: Limits = field(default_factory=Limits)


def api_of(request: Request) -> ApiContext:
    return request.app.state.api


def caller(request: Request) -> Caller:
    """Who calls (401 without a valid key), charged one request of the key's rate (429)."""
    api = api_of(request)
    who = identify(request, api.service, auth=api.settings.auth)
    api.limits.admit(who)
    return who
