"""Standard error codes and the exceptions that carry them."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    PARSE_FAILED = "PARSE_FAILED"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    MISSING_REQUIRED_FIELD = "MISSING_REQUIRED_FIELD"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    TOOL_ERROR = "TOOL_ERROR"
    TOOL_TIMEOUT = "TOOL_TIMEOUT"
    PROVIDER_ERROR = "PROVIDER_ERROR"
    RATE_LIMITED = "RATE_LIMITED"
    APPROVAL_DENIED = "APPROVAL_DENIED"
    MAX_ROUNDS = "MAX_ROUNDS"
    INTERNAL = "INTERNAL"  # a bug in FlowCall itself, not in the flow, the model or a tool


class FlowCallError(Exception):
    """An error with a standard code and a message that tells the user what to do."""

    def __init__(self, code: ErrorCode, message: str, *, details: dict | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details or {}


class ProviderError(FlowCallError):
    """A model provider failed. `transient` errors (429, 5xx, timeouts) are retried."""

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode = ErrorCode.PROVIDER_ERROR,
        transient: bool = False,
        status: int | None = None,
        request_id: str | None = None,
    ):
        super().__init__(code, message, details={"status": status, "request_id": request_id})
        self.transient = transient
        self.status = status
        self.request_id = request_id
        self.retries: list[dict] = []  # filled by providers.retry.with_retries


class ConfigError(Exception):
    """Bad configuration or input; the message names the problem and the fix."""


class NotFoundError(ConfigError):
    """The thing named (a run, a flow, a version) does not exist; the message says what exists.
    A ConfigError, so the CLI reports it the same way: one line, exit 2."""
