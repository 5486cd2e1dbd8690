"""Check a call against its tool's JSON Schema, and run calls concurrently with timeouts."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import jsonschema

from flowcall.errors import ErrorCode
from flowcall.messages import ToolCall
from flowcall.tools.base import RunContext, Tool


@dataclass
class CallOutcome:
    call: ToolCall
    tool: Tool | None
    result: Any = None
    error_code: ErrorCode | None = None
    error_message: str | None = None
    latency_ms: float = 0.0

    def content_for_model(self) -> str:
        """The tool message the model reads: the result, or the error it should correct."""
        if self.error_code:
            return json.dumps({"error": {"code": str(self.error_code), "message": self.error_message}}, ensure_ascii=False)
        if isinstance(self.result, str):
            return self.result
        return json.dumps(self.result, ensure_ascii=False, default=str)


# JSON Schema words a small model copies from the tool definition into its arguments.
_SCHEMA_WORDS = {"type", "required", "properties", "additionalProperties", "title", "$schema", "items"}


def drop_schema_echo(call: ToolCall, tool: Tool) -> tuple[ToolCall, list[str]]:
    """Remove undeclared keys that are JSON Schema keywords ({"name": "张三", "required": ["name"]}).

    Qwen 0.5B does this often; the keys can never be meant as arguments, so dropping them is a
    repair, not a guess. The engine records what was dropped.
    """
    if not isinstance(call.arguments, dict):
        return call, []
    declared = set(tool.parameters.get("properties", {}))
    dropped = [k for k in call.arguments if k in _SCHEMA_WORDS and k not in declared]
    if not dropped:
        return call, []
    kept = {k: v for k, v in call.arguments.items() if k not in dropped}
    return call.model_copy(update={"arguments": kept}), dropped


def check_call(call: ToolCall, tools: dict[str, Tool]) -> CallOutcome | None:
    """None if the call may run; otherwise the outcome that explains why it may not."""
    tool = tools.get(call.name)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return CallOutcome(call, None, error_code=ErrorCode.UNKNOWN_TOOL,
                           error_message=f"there is no tool '{call.name}'; the tools are: {known}")
    if call.arguments is None:
        return CallOutcome(call, tool, error_code=ErrorCode.PARSE_FAILED,
                           error_message=f"the arguments are not a JSON object: {call.raw_arguments[:300]!r}")
    errors = sorted(jsonschema.Draft202012Validator(tool.parameters).iter_errors(call.arguments), key=lambda e: e.path)
    if not errors:
        return None
    missing = [e for e in errors if e.validator == "required"]
    code = ErrorCode.MISSING_REQUIRED_FIELD if missing else ErrorCode.INVALID_ARGUMENT
    details = "; ".join(f"{'/'.join(map(str, e.path)) or 'arguments'}: {e.message}" for e in errors[:5])
    return CallOutcome(call, tool, error_code=code, error_message=f"{call.name}: {details}")


def _json_safe(value: Any) -> Any:
    try:
        json.dumps(value, ensure_ascii=False)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str, ensure_ascii=False))


def _timed(tool: Tool, arguments: dict[str, Any], context: RunContext) -> tuple[Any, float]:
    started = time.perf_counter()
    result = tool.invoke(arguments, context)
    return result, (time.perf_counter() - started) * 1000


def run_calls(
    calls: list[tuple[ToolCall, Tool]], context: RunContext, default_timeout_s: float
) -> list[CallOutcome]:
    """Run the calls at once, each bounded by its timeout. A hung tool's thread is abandoned
    (Python cannot kill a thread); the run goes on with a TOOL_TIMEOUT result."""
    if not calls:
        return []
    pool = ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="flowcall-tool")
    started = time.perf_counter()
    futures = [(call, tool, pool.submit(_timed, tool, call.arguments or {}, context)) for call, tool in calls]
    outcomes = []
    for call, tool, future in futures:
        timeout = tool.timeout_s or default_timeout_s
        remaining = max(0.0, started + timeout - time.perf_counter())
        try:
            result, elapsed_ms = future.result(timeout=remaining)
            outcome = CallOutcome(call, tool, result=_json_safe(result), latency_ms=elapsed_ms)
        except TimeoutError:
            outcome = CallOutcome(call, tool, error_code=ErrorCode.TOOL_TIMEOUT,
                                  error_message=f"{tool.name} did not answer within {timeout:g} s")
        except Exception as exc:  # a tool's own failure is data for the model, not a crash
            outcome = CallOutcome(call, tool, error_code=ErrorCode.TOOL_ERROR,
                                  error_message=f"{tool.name} failed: {type(exc).__name__}: {exc}")
        if not outcome.latency_ms:
            outcome.latency_ms = (time.perf_counter() - started) * 1000
        outcomes.append(outcome)
    pool.shutdown(wait=False, cancel_futures=True)
    return outcomes
