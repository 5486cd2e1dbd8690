"""Retry transient provider errors (429, 5xx, timeouts) with backoff, recording each retry."""

from __future__ import annotations

import os
import time
from typing import Any, Callable, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from flowcall.core.errors import ProviderError

T = TypeVar("T")


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.transient


def with_retries(call: Callable[[], T], retries: list[dict[str, Any]], *, attempts: int | None = None) -> T:
    """Run `call`; on a transient ProviderError wait and try again, appending one record per
    failed attempt to `retries` (the step keeps them). The last error is raised with the
    list attached as `exc.retries`."""
    attempts = attempts or int(os.environ.get("FLOWCALL_PROVIDER_ATTEMPTS", "4"))
    initial = float(os.environ.get("FLOWCALL_RETRY_INITIAL_S", "1.0"))

    def record(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        retries.append(
            {
                "attempt": state.attempt_number,
                "error_code": getattr(exc, "code", None) and str(exc.code),
                "status": getattr(exc, "status", None),
                "message": str(exc),
                "waited_s": round(state.upcoming_sleep, 3),
                "at": time.time(),
            }
        )

    retrying = Retrying(
        retry=retry_if_exception(_is_transient),
        stop=stop_after_attempt(attempts),
        wait=wait_exponential_jitter(multiplier=initial, max=30, jitter=initial / 2),
        before_sleep=record,
        reraise=True,
    )
    try:
        return retrying(call)
    except ProviderError as exc:
        exc.retries = retries  # the step that records the failure keeps the attempts before it
        raise
