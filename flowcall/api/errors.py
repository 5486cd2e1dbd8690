"""Every error the API answers is JSON with a standard code, never a traceback:

    {"error": {"code": "NOT_FOUND", "message": "...", "type": "NOT_FOUND"}}

`type` repeats the code, so OpenAI's clients, which read `error.type`, show it too."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse

from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.trust.consent import TrustRequired

logger = logging.getLogger(__name__)

UNAUTHORIZED, FORBIDDEN, NOT_FOUND = "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND"
RATE_LIMITED, TOO_LARGE, INVALID_ARGUMENT = "RATE_LIMITED", "TOO_LARGE", "INVALID_ARGUMENT"
NOT_GRANTED, CONFLICT, INTERNAL = "NOT_GRANTED", "CONFLICT", "INTERNAL"


class ApiError(Exception):
    def __init__(
        self, status: int, code: str, message: str, *, headers: dict[str, str] | None = None, **extra: Any
    ):
        super().__init__(message)
        self.status, self.code, self.message, self.headers, self.extra = status, code, message, headers, extra


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "type": code, "message": message, **extra}}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    return JSONResponse(error_body(code, message, **extra), status_code=status, headers=headers)


def install(app: FastAPI) -> None:
    """Map every way a request can fail to a JSON error."""

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers, **exc.extra)

    @app.exception_handler(TrustRequired)
    async def not_granted(request: Request, exc: TrustRequired) -> JSONResponse:
        return error_response(409, NOT_GRANTED, str(exc))

    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> JSONResponse:
        return error_response(404, NOT_FOUND, str(exc))

    @app.exception_handler(ConfigError)
    async def bad_request(request: Request, exc: ConfigError) -> JSONResponse:
        return error_response(400, INVALID_ARGUMENT, str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()[:5]
        )
        return error_response(422, INVALID_ARGUMENT, f"the request is not valid: {problems}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, http_code(exc.status_code), http_message(exc))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("API request failed")  # the server's log has the traceback; the client never does
        return error_response(500, INTERNAL, "the server failed on this request; its log says why")


def http_code(status: int) -> str:
    """The code for a status the framework answers by itself: a client's mistake is
    INVALID_ARGUMENT unless a code says more; only 409 is a conflict."""
    named = {401: UNAUTHORIZED, 403: FORBIDDEN, 404: NOT_FOUND, 409: CONFLICT, 413: TOO_LARGE}
    return named.get(
        status, RATE_LIMITED if status == 429 else INVALID_ARGUMENT if status < 500 else INTERNAL
    )


def http_message(exc: StarletteHTTPException) -> str:
    """The framework's message, or what was wrong with a body it could not parse (FastAPI
    raises 400 from the decoding error)."""
    if exc.status_code != 400 or exc.__cause__ is None:
        return str(exc.detail)
    if isinstance(exc.__cause__, UnicodeDecodeError):
        return "the request body is not UTF-8; send JSON encoded as UTF-8"
    return (
        "the request body could not be read as JSON (a number over 4300 digits, or nesting too deep); "
        "send plain JSON"
    )
