"""Who is calling, and how much they may: every request carries `Authorization: Bearer <key>`
(`flowcall keys create`), unless the server was started with --no-auth on loopback. A key may
be limited to some flows, and sees only the runs it started; a flow or run it may not see is
answered exactly as one that does not exist. Each key has a rate (a token bucket: `rate`
requests a minute, up to `burst` at once) and a number of runs it may have going at once, and
the server a number of runs going at once for all keys together; past any, 429 with
Retry-After. A run holds its place until it ends, whatever its request does. These limits are
kept in memory, per server process. Each key also has a storage quota (runs stored, flows
imported), counted in the database."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from flowcall.api.errors import NOT_FOUND, RATE_LIMITED, UNAUTHORIZED, ApiError

QUOTA_EXCEEDED = "QUOTA_EXCEEDED"


def no_flow(name: str) -> ApiError:
    """The one answer for a flow that does not exist and for one the caller may not use."""
    return ApiError(404, NOT_FOUND, f"no flow named {name!r}; GET /v1/flows lists the flows you may use")


def no_run(run_id: str) -> ApiError:
    """The one answer for a run that does not exist and for one the caller may not see."""
    return ApiError(404, NOT_FOUND, f"no run with id {run_id!r}; GET /v1/runs lists your runs")


@dataclass(frozen=True)
class Caller:
    name: str  # the key's name ("no-auth" when the server asks for none)
    flows: tuple[str, ...] | None  # None: every flow
    keyed: bool = True  # False: --no-auth on loopback, a person on this machine
    prefix: str = ""  # the key's first characters: a new key under a revoked one's name is another owner

    @property
    def api_key(self) -> str | None:
        """The key recorded with what this caller starts or imports, and the runs it sees
        (its name and first characters); None for the no-auth caller, who sees every run (as
        the CLI and the studio do)."""
        return f"{self.name} ({self.prefix})" if self.keyed else None

    def allows(self, flow_name: str) -> bool:
        return self.flows is None or flow_name in self.flows

    def require(self, flow_name: str) -> None:
        """404 as for a flow that does not exist, unless the caller may use this one."""
        if not self.allows(flow_name):
            raise no_flow(flow_name)


NO_AUTH = Caller("no-auth", None, keyed=False)


@dataclass
class _Bucket:
    tokens: float
    at: float
    running: int = 0


@dataclass(eq=False)
class Slot:
    """A run's place in its key's and the server's count of runs going, given back once: by
    the thread that runs it, when the run ends (running.launch), never by its request."""

    limits: Limits
    name: str
    held: bool = True

    def release(self) -> None:
        self.limits.give_back(self)


@dataclass
class Limits:
    rate: float = 120.0  # requests a minute per key
    burst: int = 30
    concurrent: int = 4  # runs going at once per key
    concurrent_all: int = 16  # runs going at once on this server, all keys together
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _going: int = 0

    def admit(self, caller: Caller) -> None:
        """One request's worth of the key's rate, or 429 saying when to come back."""
        with self._lock:
            now = time.monotonic()
            bucket = self._buckets.setdefault(caller.name, _Bucket(float(self.burst), now))
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate / 60.0)
            bucket.at = now
            if bucket.tokens < 1.0:
                wait = math.ceil((1.0 - bucket.tokens) * 60.0 / self.rate)
                raise ApiError(
                    429,
                    RATE_LIMITED,
                    f"too many requests with this key; try again in {wait} s",
                    headers={"Retry-After": str(wait)},
                )
            bucket.tokens -= 1.0

    def start_run(self, caller: Caller) -> Slot:
        """A place for one more run of this key, or 429 when the key or the server has as
        many going as it may. The run gives it back when it ends (Slot.release)."""
        with self._lock:
            bucket = self._buckets.setdefault(caller.name, _Bucket(float(self.burst), time.monotonic()))
            if bucket.running >= self.concurrent:
                raise _busy(f"this key already has {bucket.running} runs going, its limit")
            if self._going >= self.concurrent_all:
                raise _busy(
                    f"the server already has {self._going} runs going, its limit for all keys together"
                )
            bucket.running += 1
            self._going += 1
            return Slot(self, caller.name)

    def give_back(self, slot: Slot) -> None:
        with self._lock:
            if not slot.held:
                return
            slot.held = False
            self._going -= 1
            bucket = self._buckets.get(slot.name)
            if bucket is not None and bucket.running > 0:
                bucket.running -= 1


def _busy(why: str) -> ApiError:
    return ApiError(429, RATE_LIMITED, f"{why}; try again when one ends", headers={"Retry-After": "1"})


@dataclass(frozen=True)
class Quota:
    """How much a key may keep in the database: runs it started, flows it imported."""

    runs: int = 100_000
    flows: int = 200

    def check_runs(self, service: Any, caller: Caller) -> None:
        """429 when the key has as many runs stored as it may (the no-auth caller has no quota)."""
        if caller.api_key is not None:
            used = service.stored_by_key(caller.api_key)[0]
            if used >= self.runs:
                raise _full(f"this key has {used} runs stored", "--quota-runs", self.runs)

    def check_flows(self, service: Any, caller: Caller) -> None:
        """429 when the key has imported as many flows as it may."""
        if caller.api_key is not None:
            used = service.stored_by_key(caller.api_key)[1]
            if used >= self.flows:
                raise _full(f"this key has imported {used} flows", "--quota-flows", self.flows)


def _full(what: str, option: str, quota: int) -> ApiError:
    return ApiError(
        429,
        QUOTA_EXCEEDED,
        f"{what}, its quota ({option} {quota}); nothing was stored. Ask whoever runs the server "
        f"to raise it ({option}) or to remove what this key no longer needs",
    )


def bearer(request: Request) -> str | None:
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" and given.strip() else None


def identify(request: Request, service: Any, *, auth: bool) -> Caller:
    """The caller of `request`, or 401. A revoked key is refused like an unknown one."""
    if not auth:
        return NO_AUTH
    secret = bearer(request)
    key = service.check_key(secret) if secret else None
    if key is None:
        raise ApiError(
            401,
            UNAUTHORIZED,
            "give a valid API key as 'Authorization: Bearer <key>' "
            "(create one with: flowcall keys create NAME)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return Caller(key.name, tuple(key.flows) if key.flows is not None else None, prefix=key.prefix)
