"""What every route shares: the service, the server's settings and the keys' limits and quotas."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from flowcall.api.access import Caller, Limits, Quota, identify
from flowcall.api.guard import CALLER_KEY


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    auth: bool = True
    max_body: int = 1_000_000  # bytes
    rate: float = 120.0  # requests a minute per key
    burst: int = 30
    concurrent: int = 4  # runs going at once per key
    concurrent_all: int = 16  # runs going at once on the server (this process), all keys together
    quota_runs: int = 100_000  # runs a key may have stored
    quota_flows: int = 200  # flows a key may have imported
    wait_s: float = 300.0  # the longest a request waits for its run before answering 202 with its id
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()


@dataclass
class ApiContext:
    service: Any  # flowcall.service.front.FlowCall
    settings: Settings
    limits: Limits = field(default_factory=Limits)
    quota: Quota = field(default_factory=Quota)


def api_of(request: Request) -> ApiContext:
    return request.app.state.api


def check_caller(api: ApiContext, request: Request) -> Caller:
    """Who calls (401 without a valid key), charged one request of the key's rate (429)."""
    who = identify(request, api.service, auth=api.settings.auth)
    api.limits.admit(who)
    return who


async def authenticate(api: ApiContext, request: Request) -> Caller:
    """check_caller for the guard, which runs it before any route reads the body (the key
    lookup reads the database: off the event loop)."""
    return await run_in_threadpool(check_caller, api, request)


def caller(request: Request) -> Caller:
    """Who calls, as the guard checked it before the route ran."""
    who = request.scope.get(CALLER_KEY)
    return who if who is not None else check_caller(api_of(request), request)
