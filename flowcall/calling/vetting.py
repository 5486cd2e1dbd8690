"""What the host checks in a decision before any call runs.

- `repair`: schema keywords the model copied into its arguments, and keys the tool does not
  declare, are dropped (tools/execute.py says how), with a note per call of what went.
- `review`: argument values must come from the conversation, not from the tools' docs
  (doc_values.py). A decision with such values is made once more, with the values pointed
  out (one retry from the run's budget). Then a call whose *required* argument is still the
  docs' own example ("owner": "octocat" for "thanks, that's all") is not made: the
  conversation never gave what the tool cannot run without, so it is not what the user asked
  and could act on a resource nobody named. Where no call is left, the model answers instead,
  told that nothing was done (the unmade-call note).

`review` is pure: it returns a `Reviewed` with the warnings to record and, where the model
must decide again, the request to send and what to do with the answer (`Retry.then`). The
caller makes the model calls, so each is recorded where it happens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from flowcall.calling.doc_values import (
    DocValue,
    doc_values,
    required_doc_values,
    retry_message,
    with_unmade_note,
)
from flowcall.core.errors import ErrorCode
from flowcall.core.messages import ModelRequest, ModelTurn, ToolCall
from flowcall.tools.base import Tool
from flowcall.tools.execute import drop_schema_echo, drop_undeclared


@dataclass
class VetWarning:
    """A warning step: what was flagged and what happens next."""

    note: str
    flagged: list[DocValue]

    def step_fields(self) -> dict[str, Any]:
        return dict(
            name="doc_values",
            error_code=str(ErrorCode.INVALID_ARGUMENT),
            note=self.note,
            error_message="; ".join(item.line() for item in self.flagged),
            result=[
                {"tool": i.tool, "argument": i.argument, "value": i.value, "why": i.why} for i in self.flagged
            ],
        )


@dataclass
class Retry:
    """Ask the model again with `request`; `then` reviews what it answers."""

    request: ModelRequest
    then: Callable[[ModelTurn], Reviewed]


@dataclass
class Reviewed:
    turn: ModelTurn  # the decision as it stands (final when retry is None)
    warnings: list[VetWarning] = field(default_factory=list)
    retry: Retry | None = None
    spent: int = 0  # retries this review takes from the run's budget


def review(turn: ModelTurn, request: ModelRequest, budget: int) -> Reviewed:
    """A decision's first review. With budget left, calls carrying the docs' values are asked
    for once more; the second decision stands, except that where it has no sound call left,
    the first one's sound calls do (the retry must not lose "成都" because the model wrote
    "北京" twice)."""
    found = (
        doc_values(turn.tool_calls, request.tools, request.messages) if turn.tool_calls and budget > 0 else []
    )
    if not found:
        return _without_unsaid(turn, request)
    named = {call.name for call in turn.tool_calls}
    again = request.model_copy(
        update={
            "messages": [*request.messages, retry_message(found)],
            # the decision to call these tools stands; only their arguments are written again
            "tools": [t for t in request.tools if t.name in named],
            "tool_choice": request.tool_choice if request.tool_choice not in ("auto", "none") else "required",
        }
    )
    warning = VetWarning(
        "argument values from the tools' docs, not the conversation; asking once more (one retry)", found
    )
    return Reviewed(
        turn, [warning], Retry(again, lambda second: _without_unsaid(second, request, earlier=turn)), spent=1
    )


def _without_unsaid(turn: ModelTurn, request: ModelRequest, earlier: ModelTurn | None = None) -> Reviewed:
    """The decision without the calls whose required argument is the tool's own example.
    Where none is left, the model answers instead (tool_choice none), unless `earlier` (the
    decision before a retry) has sound calls. A flow whose tool_choice demands a call keeps it."""
    if not turn.tool_calls or request.tool_choice != "auto":
        return Reviewed(turn)
    unsaid = _unsaid(turn, request)
    if not any(unsaid.values()):
        return Reviewed(turn)
    flagged = [item for items in unsaid.values() for item in items]
    kept = [call for call in turn.tool_calls if not unsaid[id(call)]]
    if not kept and earlier is not None and earlier.tool_calls:
        before = _unsaid(earlier, request)
        if kept := [call for call in earlier.tool_calls if not before[id(call)]]:
            turn = earlier
    what_next = (
        "; the model answers instead"
        if not kept
        else "; the first decision's other calls stand"
        if turn is earlier
        else ""
    )
    warning = VetWarning(
        "not made: a required argument is the tool's own example, which the conversation never "
        "gave" + what_next,
        flagged,
    )
    withheld = [withheld_reason(item.tool, item.argument, item.value) for item in flagged]
    if kept:
        return Reviewed(turn.model_copy(update={"tool_calls": kept, "withheld": withheld}), [warning])
    answer_instead = request.model_copy(
        update={"tool_choice": "none", "messages": with_unmade_note(request.messages)}
    )
    return Reviewed(
        turn,
        [warning],
        Retry(answer_instead, lambda answer: Reviewed(answer.model_copy(update={"withheld": withheld}))),
    )


def _unsaid(turn: ModelTurn, request: ModelRequest) -> dict[int, list[DocValue]]:
    """Per call (by id): its required arguments that are still the docs' own example."""
    return {
        id(call): required_doc_values(doc_values([call], request.tools, request.messages), request.tools)
        for call in turn.tool_calls
    }


def withheld_reason(tool: str, argument: str, value: Any) -> str:
    return (
        f"{tool} was not run: its {argument} {value!r} is the tool's own example, "
        "and nothing in the conversation says it"
    )


def repair(calls: list[ToolCall], tools: dict[str, Tool]) -> tuple[list[ToolCall], dict[str, dict]]:
    """Calls with copied schema keywords and undeclared keys dropped, and per call id what was
    dropped."""
    repaired, notes = [], {}
    for call in calls:
        if call.name in tools:
            call, dropped = drop_schema_echo(call, tools[call.name])
            if dropped:
                notes[call.id] = {"dropped_schema_keys": dropped}
            call, unknown = drop_undeclared(call, tools[call.name])
            if unknown:
                notes.setdefault(call.id, {})["dropped_unknown_keys"] = unknown
        repaired.append(call)
    return repaired, notes
