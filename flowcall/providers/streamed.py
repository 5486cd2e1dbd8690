"""Streamed replies put back together. A hosted model's reply is streamed only while someone
watches the run (core/progress.py): its text is shown as it comes, and the pieces are joined
into the reply the same call answers unstreamed, so the step recorded is the same either way.

Pure functions over the chunks as the server sent them (JSON data), shared by the OpenAI
Chat Completions format and DashScope's native one: both send a message's changes as deltas,
text to append and tool calls whose arguments come in pieces, keyed by the call's index.
"""

from __future__ import annotations

from typing import Any

from flowcall.core import progress

CHUNK_HEAD = ("id", "created", "model", "system_fingerprint", "service_tier")


class Shown:
    """A streamed call's text, passed on to whoever watches as it comes; when the call starts
    over (a stream that broke off, tried again), the watcher is told to drop what it had."""

    def __init__(self) -> None:
        self.any = False

    def show(self, piece: str) -> None:
        self.any = self.any or bool(piece)
        progress.text(piece)

    def again(self) -> None:
        """Before each attempt: after one that showed text, the step starts again for the watcher."""
        if self.any:
            progress.restart()
            self.any = False


def merge_delta(message: dict[str, Any], calls: dict[int, dict[str, Any]], delta: dict[str, Any]) -> None:
    """Add one delta to the message being put together: text fields are appended (content,
    reasoning_content, refusal), tool calls are merged into `calls` by their index."""
    for key, value in delta.items():
        if key == "tool_calls":
            for part in value or []:
                _merge_call(calls, part)
        elif key == "role":
            message["role"] = value or message.get("role") or "assistant"
        elif isinstance(value, str):
            message[key] = (message.get(key) or "") + value
        elif value is not None:
            message[key] = value


def _call_index(calls: dict[int, dict[str, Any]], part: dict[str, Any]) -> int:
    """The call a tool-call delta belongs to: its index; without one (a few servers leave it
    out), the call being written unless the delta names another id."""
    if isinstance(part.get("index"), int):
        return part["index"]
    if calls and (not part.get("id") or part["id"] == calls[max(calls)]["id"]):
        return max(calls)
    return len(calls)


def _merge_call(calls: dict[int, dict[str, Any]], part: dict[str, Any]) -> None:
    """The id, type and name come once (servers that repeat them repeat the same); the
    arguments come in pieces, appended in order."""
    call = calls.setdefault(
        _call_index(calls, part), {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
    )
    call["id"] = call["id"] or part.get("id") or ""
    call["type"] = part.get("type") or call["type"]
    function = part.get("function") or {}
    call["function"]["name"] = call["function"]["name"] or function.get("name") or ""
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # a server that sends an object sends it whole
        call["function"]["arguments"] = arguments
    elif isinstance(arguments, str) and isinstance(call["function"]["arguments"], str):
        call["function"]["arguments"] += arguments


def _finished(reason: Any) -> str | None:
    """A finish reason; DashScope sends the string "null" until the last chunk."""
    return reason if isinstance(reason, str) and reason and reason != "null" else None


def completion_from_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Chat Completions chunks (`chat.completion.chunk`) as the `chat.completion` the same call
    answers unstreamed: the first choice (n>1 is never asked), its content joined, its tool
    calls with their arguments joined, the last finish reason, and the usage chunk's usage."""
    head: dict[str, Any] = {}
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    finish, usage = None, None
    for chunk in chunks:
        head.update({key: chunk[key] for key in CHUNK_HEAD if chunk.get(key) and key not in head})
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) == 0:
                merge_delta(message, calls, choice.get("delta") or {})
                finish = _finished(choice.get("finish_reason")) or finish
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    completion = {
        **head,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    return {**completion, "usage": usage} if usage else completion


def dashscope_from_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """DashScope's incremental chunks (`incremental_output=True`, `result_format="message"`),
    each as response_to_dict gives it, as the response the same call answers unstreamed: the
    last chunk's request id and usage (DashScope counts the usage so far in every chunk), one
    choice whose message joins the deltas, and the last finish reason."""
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    for chunk in chunks:
        for choice in ((chunk.get("output") or {}).get("choices") or [])[:1]:
            merge_delta(message, calls, choice.get("message") or {})
            finish = _finished(choice.get("finish_reason")) or finish
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    last = chunks[-1] if chunks else {}
    output = {**(last.get("output") or {}), "choices": [{"finish_reason": finish, "message": message}]}
    return {**last, "output": output}


def finish_reason(completion: dict[str, Any]) -> str | None:
    """The finish reason of a completion put together from chunks (either format): None when
    the stream ended before the model finished."""
    choices = completion.get("choices") or (completion.get("output") or {}).get("choices") or [{}]
    return choices[0].get("finish_reason")
