"""Tool calls written as text, and the ids calls get: below both the providers and the calling ways.

`parse_tool_calls` finds calls in model text: <tool_call> tags, code blocks, bare JSON. Small
models write calls in many shapes; this accepts the common ones, repairs broken JSON with
json-repair, and reports what looked like a call but could not be read, so the engine can send
PARSE_FAILED back to the model instead of silently dropping it. A provider that reads calls out
of its own output (the local one) and a calling way that reads them out of an answer use it alike.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

import json_repair

_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json|tool_call|javascript|js)?\s*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
_NAME_KEYS = ("name", "function", "tool", "tool_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "params")


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:12]


@dataclass
class ParsedCalls:
    calls: list[tuple[str, dict[str, Any] | None, str]] = field(default_factory=list)  # name, args, raw
    errors: list[str] = field(default_factory=list)  # things that looked like calls but were not readable
    found_in: str | None = None  # "tag", "fence" or "json"


def _loads(text: str) -> Any:
    """Strict JSON first; json-repair only when that fails (it never raises, so check its result)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        repaired = json_repair.loads(text)
        return repaired if repaired not in ("", None) else None


def _as_call(obj: Any) -> tuple[str, dict[str, Any] | None, str] | None:
    """Read {"name": ..., "arguments": {...}} and its usual variants; None if not call-shaped."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI wire shape
        obj = obj["function"]
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if not name:
        return None
    raw = next((obj[k] for k in _ARG_KEYS if k in obj), {})
    if isinstance(raw, str):  # arguments given as a JSON string
        decoded = _loads(raw) if raw.strip() else {}
        args = decoded if isinstance(decoded, dict) else None
        return name, args, raw
    if isinstance(raw, dict):
        return name, raw, json.dumps(raw, ensure_ascii=False)
    return name, None, json.dumps(raw, ensure_ascii=False)


def _calls_from(obj: Any) -> list[tuple[str, dict[str, Any] | None, str]]:
    items = obj if isinstance(obj, list) else [obj]
    if isinstance(obj, dict) and isinstance(obj.get("tool_calls"), list):
        items = obj["tool_calls"]
    return [c for c in (_as_call(item) for item in items) if c is not None]


def _bare_json_candidates(text: str) -> list[str]:
    """Balanced {...} or [...] spans in free text, outermost first."""
    spans, depth, start = [], 0, None
    for i, ch in enumerate(text):
        if ch in "{[":
            if depth == 0:
                start = i
            depth += 1
        elif ch in "}]" and depth:
            depth -= 1
            if depth == 0 and start is not None:
                spans.append(text[start : i + 1])
    if depth and start is not None:  # the model stopped before closing: json-repair closes it
        spans.append(text[start:])
    return spans


def parse_tool_calls(text: str | None) -> ParsedCalls:
    result = ParsedCalls()
    if not text:
        return result
    tagged = _TAG.findall(text)
    if tagged:
        result.found_in = "tag"
        for body in tagged:
            obj = _loads(body)
            calls = _calls_from(obj) if obj is not None else []
            if calls:
                result.calls.extend(calls)
            else:
                result.errors.append(f"could not read the call inside <tool_call>: {body[:200]!r}")
        return result
    for source, chunks in (("fence", _FENCE.findall(text)), ("json", _bare_json_candidates(text))):
        for chunk in chunks:
            obj = _loads(chunk)
            calls = _calls_from(obj) if obj is not None else []
            if calls:
                result.found_in = source
                result.calls.extend(calls)
        if result.calls:
            return result
    return result
