"""Who is calling, and how much they may: every request carries `Authorization: Bearer <key>`
(`flowcall keys create`), unless the server was started with --no-auth on loopback. A key may
be limited to some flows. Each key has a rate (a token bucket: `rate` requests a minute, up to
`burst` at once) and a number of runs it may have going at once; past either, 429 with
Retry-After. The limits are kept in memory, per server process."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from flowcall.api.errors import FORBIDDEN, RATE_LIMITED, UNAUTHORIZED, ApiError


@dataclass(frozen=True)
class Caller:
    name: str  # the key's name ("no-auth" when the server asks for none)
    flows: tuple[str, ...] | None  # None: every flow

    def allows(self, flow_name: str) -> bool:
        return self.flows is None or flow_name in self.flows

    def require(self, flow_name: str) -> None:
        if not self.allows(flow_name):
            raise ApiError(403, FORBIDDEN, f"this key may not use flow {flow_name!r}")


NO_AUTH = Caller("no-auth", None)


@dataclass
class _Bucket:
    tokens: float
    at: float
    running: int = 0


@dataclass
class Limits:
    rate: float = 120.0  # requests a minute per key
    burst: int = 30
    concurrent: int = 4  # runs going at once per key
    _buckets: dict[str, _Bucket] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

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

    def start_run(self, caller: Caller) -> None:
        with self._lock:
            bucket = self._buckets.setdefault(caller.name, _Bucket(float(self.burst), time.monotonic()))
            if bucket.running >= self.concurrent:
                raise ApiError(
                    429,
                    RATE_LIMITED,
                    f"this key already has {bucket.running} runs going, its limit; try again when one ends",
                    headers={"Retry-After": "1"},
                )
            bucket.running += 1

    def end_run(self, caller: Caller) -> None:
        with self._lock:
            bucket = self._buckets.get(caller.name)
            if bucket is not None and bucket.running > 0:
                bucket.running -= 1


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
    return Caller(key.name, tuple(key.flows) if key.flows is not None else None)
