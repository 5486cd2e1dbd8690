"""Check a call against its tool's JSON Schema, and run calls concurrently with timeouts.

Whatever a tool does (hang, raise anything, call sys.exit, return 50 MB, NaN, a cycle), the
run gets one CallOutcome per call and goes on: a tool is the world's code, not the engine's.

Two caps keep a huge result from filling the database and the model's context:

- STORED_RESULT_CHARS (1,000,000): the most of a result that is kept, in the step and in the
  run's saved state. It is the default response cap of HTTP tools (HTTPToolSource.
  max_response_bytes), the largest result a built-in source hands over unasked; a step row of
  at most ~1 MB keeps `runs show`, the inspector and replays quick on SQLite and PostgreSQL.
  Past it the result is replaced by a `truncated_result` record: its first STORED_RESULT_CHARS
  characters (as JSON text, or the string), how big it was, and a note that it was cut.
- MODEL_RESULT_CHARS (32,000): the most of a result the model reads. About 8k tokens of
  English (up to ~20k of CJK): within any hosted model's window with room for the rest of the
  conversation, which is sent again every round. The embedded model (n_ctx 8192) may still
  refuse that much, with a clear PROVIDER_ERROR naming the context window. The text ends with
  a note saying how long the result was and that it was cut.

Both cuts are at fixed points of the result's full text, so the model reads the same words
from a stored (cut) result as it did live: a re-run from a step sends what the run sent.
"""

from __future__ import annotations

import json
import math
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import jsonschema

from flowcall.core import schemas
from flowcall.core.errors import ErrorCode
from flowcall.core.messages import ToolCall
from flowcall.core.steps import SUB_RUN
from flowcall.providers.base import redact_secrets
from flowcall.tools.base import RunContext, Tool

STORED_RESULT_CHARS = 1_000_000
MODEL_RESULT_CHARS = 32_000
ERROR_MESSAGE_CHARS = 4_000  # a tool's (or a server's) error text, as stored and as the model reads it
TRUNCATED = "truncated_result"  # the key of a stored result that was cut (see cap_result)
# a call that never ran: the model named no tool, or wrong arguments (paid from the retry budget)
NOT_RUN = {
    ErrorCode.UNKNOWN_TOOL,
    ErrorCode.PARSE_FAILED,
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.MISSING_REQUIRED_FIELD,
}


@dataclass
class CallOutcome:
    call: ToolCall
    tool: Tool | None
    result: Any = None
    error_code: ErrorCode | None = None
    error_message: str | None = None
    latency_ms: float = 0.0
    child_run_id: str | None = None  # the run a sub-flow call started (engine/subflows.py)

    def content_for_model(self) -> str:
        """The tool message the model reads: the result, or the error it should correct."""
        if self.error_code:
            return json.dumps(
                {"error": {"code": str(self.error_code), "message": self.error_message}}, ensure_ascii=False
            )
        return model_text(self.result)

    def step_fields(self, round_no: int, repairs: dict[str, dict]) -> dict[str, Any]:
        """Its tool step: the call as it ran, its result or error, and what was repaired."""
        call = self.call
        return dict(
            round=round_no,
            name=call.name,
            tool_call_id=call.id,
            arguments=call.arguments,
            result=self.result,
            error_code=self.error_code and str(self.error_code),
            error_message=self.error_message,
            latency_ms=self.latency_ms,
            response={
                "executed": self.error_code not in NOT_RUN | {ErrorCode.APPROVAL_DENIED},
                "raw_arguments": call.raw_arguments,
                **({"dropped_ungrounded": call.dropped_arguments} if call.dropped_arguments else {}),
                **repairs.get(call.id, {}),
                **({SUB_RUN: self.child_run_id} if self.child_run_id else {}),
            },
        )


def result_text(result: Any) -> str:
    """A result as the text it is to a model: a string as it is, anything else as JSON."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, default=str)


def is_truncated(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get(TRUNCATED), dict) and "head" in result


def cap_result(result: Any, limit: int = STORED_RESULT_CHARS) -> Any:
    """The result to keep: itself when its text is at most `limit` characters, else a record
    of its first `limit` characters, its size and a note that it was cut."""
    if is_truncated(result):
        return result
    text = result_text(result)
    if len(text) <= limit:
        return result
    kind = "text" if isinstance(result, str) else "JSON"
    return {
        TRUNCATED: {
            "original_chars": len(text),
            "kept_chars": limit,
            "note": f"the tool returned {len(text):,} characters of {kind}; FlowCall keeps the first "
            f"{limit:,} and cut the rest ({len(text) - limit:,} characters)",
        },
        "head": text[:limit],
    }


def model_text(result: Any, limit: int = MODEL_RESULT_CHARS) -> str:
    """What the model reads of a result: at most `limit` characters, with a note when cut. A
    stored, already cut result reads the same as the whole one did."""
    if is_truncated(result):
        text, total = (
            str(result["head"]),
            int(result[TRUNCATED].get("original_chars") or len(str(result["head"]))),
        )
    else:
        text = result_text(result)
        total = len(text)
    if total <= limit and len(text) <= limit:
        return text
    return (
        text[:limit] + f"\n[cut by FlowCall: the tool returned {total:,} characters; only the first "
        f"{limit:,} are shown]"
    )


def _cap_message(message: str) -> str:
    if len(message) <= ERROR_MESSAGE_CHARS:
        return message
    return message[:ERROR_MESSAGE_CHARS] + f" [cut by FlowCall: the message has {len(message):,} characters]"


# JSON Schema words a small model copies from the tool definition into its arguments.
_SCHEMA_WORDS = {"type", "required", "properties", "additionalProperties", "title", "$schema", "items"}


def drop_schema_echo(call: ToolCall, tool: Tool) -> tuple[ToolCall, list[str]]:
    """Remove undeclared keys that are JSON Schema keywords ({"name": "张三", "required": ["name"]}).

    Small models do this often; the keys can never be meant as arguments, so dropping them is a
    repair, not a guess. The engine records what was dropped.
    """
    if not isinstance(call.arguments, dict):
        return call, []
    properties = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    declared = set(properties) if isinstance(properties, dict) else set()
    dropped = [k for k in call.arguments if k in _SCHEMA_WORDS and k not in declared]
    if not dropped:
        return call, []
    kept = {k: v for k, v in call.arguments.items() if k not in dropped}
    return call.model_copy(update={"arguments": kept}), dropped


def drop_undeclared(call: ToolCall, tool: Tool) -> tuple[ToolCall, list[str]]:
    """Drop argument keys a tool that takes no others does not declare (additionalProperties
    false): a small model adds a `description` or an `expires_in` and then repeats the refused
    call until the retry budget is spent. The tool could not have used them; the schema way's
    grammar never writes them. The caller records what was dropped in the step."""
    parameters = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = parameters.get("properties")
    if (
        not isinstance(call.arguments, dict)
        or parameters.get("additionalProperties") is not False
        or not isinstance(properties, dict)
    ):
        return call, []
    dropped = [k for k in call.arguments if k not in properties]
    if not dropped:
        return call, []
    kept = {k: v for k, v in call.arguments.items() if k in properties}
    return call.model_copy(update={"arguments": kept}), dropped


def _path(error: jsonschema.ValidationError) -> str:
    return "/".join(map(str, error.absolute_path)) or "arguments"


def check_call(call: ToolCall, tools: dict[str, Tool]) -> CallOutcome | None:
    """None if the call may run; otherwise the outcome that explains why it may not."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        name = call.name if len(call.name) <= 200 else call.name[:200] + "…"
        return CallOutcome(
            call,
            None,
            error_code=ErrorCode.UNKNOWN_TOOL,
            error_message=f"there is no tool '{name}'; the tools are: {known}",
        )
    if call.arguments is None:
        return CallOutcome(
            call,
            tool,
            error_code=ErrorCode.PARSE_FAILED,
            error_message=f"the arguments are not a JSON object: {call.raw_arguments[:300]!r}",
        )
    try:
        # sorted by path text: paths mix names and indexes, which do not compare with each other
        validator = schemas.validator(tool.parameters, "its parameters")
        errors = sorted(validator.iter_errors(call.arguments), key=_path)
    except schemas.SchemaRefError as exc:  # a ref outside the schema: refused, never fetched
        return CallOutcome(
            call,
            tool,
            error_code=ErrorCode.TOOL_ERROR,
            error_message=_cap_message(f"{tool.version} cannot be called: {exc}"),
        )
    except Exception as exc:  # noqa: BLE001 - UnknownType, a $ref that resolves nowhere, a list where a dict goes ...
        # The tool's own schema is broken (an MCP or HTTP server wrote it): the call cannot be
        # checked, so it does not run. The model hears why; a person must fix the server.
        return CallOutcome(
            call,
            tool,
            error_code=ErrorCode.TOOL_ERROR,
            error_message=_cap_message(
                f"{tool.version} cannot be called: its parameter schema is not a "
                f"valid JSON Schema ({type(exc).__name__}: {exc})"
            ),
        )
    if not errors:
        return None
    missing = [e for e in errors if e.validator == "required"]
    code = ErrorCode.MISSING_REQUIRED_FIELD if missing else ErrorCode.INVALID_ARGUMENT
    details = "; ".join(f"{_path(e)}: {e.message}" for e in errors[:5])
    return CallOutcome(call, tool, error_code=code, error_message=_cap_message(f"{call.name}: {details}"))


_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _jsonable(value: Any, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """`value` as strict JSON data: keys as strings, NaN and infinities as strings (PostgreSQL's
    json refuses them), tuples and sets as lists, anything else (and cycles) as its str()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else ("NaN" if math.isnan(value) else _NON_FINITE[value])
    if depth > 100 or id(value) in seen:
        return f"<{type(value).__name__} nested too deep or containing itself>"
    inner = seen | {id(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1, inner) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v, depth + 1, inner) for v in value]
    try:
        return str(value)
    except Exception as exc:  # noqa: BLE001 - a __str__ that fails is still a result
        return f"<{type(value).__name__} that cannot be shown: {type(exc).__name__}>"


def _json_safe(value: Any) -> Any:
    """What can be stored and sent: JSON data (strict: no NaN), or the value made so."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False)
        return value
    except Exception:  # noqa: BLE001 - TypeError, ValueError (NaN, cycles), RecursionError ...
        return _jsonable(value)


def _timed(tool: Tool, arguments: dict[str, Any], context: RunContext) -> tuple[Any, float]:
    started = time.perf_counter()
    result = tool.invoke(arguments, context)
    return result, (time.perf_counter() - started) * 1000


class ToolExit(Exception):
    """A tool raised something that is not an Exception (SystemExit, KeyboardInterrupt ...)."""


def _start(tool: Tool, arguments: dict[str, Any], context: RunContext) -> Future:
    """Run one call on a daemon thread. Python cannot kill a thread, so a hung tool's thread is
    abandoned; being a daemon, it does not keep the process alive after the run ends (a
    ThreadPoolExecutor's threads are joined at exit: `flowcall run` would never return)."""
    future: Future = Future()

    def work() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(_timed(tool, arguments, context))
        except Exception as exc:  # noqa: BLE001 - handed to the engine's thread
            future.set_exception(exc)
        except BaseException as exc:  # noqa: BLE001 - sys.exit() in a tool must not end the run's process
            future.set_exception(ToolExit(f"{type(exc).__name__}({exc})"))

    threading.Thread(target=work, name=f"flowcall-tool-{tool.name}", daemon=True).start()
    return future


def run_calls(
    calls: list[tuple[ToolCall, Tool]], context: RunContext, default_timeout_s: float
) -> list[CallOutcome]:
    """Run the calls at once, each bounded by its timeout. A hung tool's thread is abandoned
    (Python cannot kill a thread); the run goes on with a TOOL_TIMEOUT result."""
    if not calls:
        return []
    started = time.perf_counter()
    futures = [(call, tool, _start(tool, call.arguments or {}, context)) for call, tool in calls]
    outcomes = []
    for call, tool, future in futures:
        timeout = tool.timeout_s or default_timeout_s
        remaining = max(0.0, started + timeout - time.perf_counter())
        try:
            result, elapsed_ms = future.result(timeout=remaining)
            outcome = CallOutcome(call, tool, result=cap_result(_json_safe(result)), latency_ms=elapsed_ms)
        except FutureTimeout:
            outcome = CallOutcome(
                call,
                tool,
                error_code=ErrorCode.TOOL_TIMEOUT,
                error_message=f"{tool.name} did not answer within {timeout:g} s",
            )
        except Exception as exc:  # a tool's own failure is data for the model, not a crash
            outcome = CallOutcome(
                call,
                tool,
                error_code=ErrorCode.TOOL_ERROR,
                # the error goes into the step and to the model: no secret the tool sends, no key
                error_message=_cap_message(
                    redact_secrets(f"{tool.name} failed: {type(exc).__name__}: {_text(exc)}", tool.secret_env)
                ),
            )
        if not outcome.latency_ms:
            outcome.latency_ms = (time.perf_counter() - started) * 1000
        outcomes.append(outcome)
    return outcomes


def run_round(
    calls: list[ToolCall],
    tools: dict[str, Tool],
    context: RunContext,
    default_timeout_s: float,
    settled: dict[str, CallOutcome],
) -> list[CallOutcome]:
    """A round of calls: each checked, the valid ones run at once; the outcomes in call order.
    `settled` calls (denied by a person) keep their outcome and are not run."""
    runnable, outcomes = [], list(settled.values())
    for call in calls:
        if call.id in settled:
            continue
        problem = check_call(call, tools)
        if problem is None:
            runnable.append((call, tools[call.name]))
        else:
            outcomes.append(problem)
    outcomes.extend(run_calls(runnable, context, default_timeout_s))
    outcomes.sort(key=lambda o: calls.index(o.call))
    return outcomes


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception as failure:  # noqa: BLE001 - an exception whose __str__ fails
        return f"(its message cannot be shown: {type(failure).__name__})"
