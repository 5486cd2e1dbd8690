"""One call, one id: a person's decision is bound to a call by its id, so no two calls share one.

A model may give two calls one id (or none), and a run file may carry any ids at all. Where a
model's calls are recorded (engine/model_calls.py), an empty id or one an earlier call has is
replaced by a new one (`unique_ids`); every step, state and message after that uses the new id.
A run file is read by `imported`: one id used again in a later round gets a new id there, and a
file where one id stands for two calls in one round is refused, since no decision could tell
them apart. (One call may have several steps with its id: it waits in each pause, then its
decision, then its tool step.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from flowcall.core.errors import ConfigError
from flowcall.core.messages import ToolCall
from flowcall.core.steps import WAITING_PREFIX, Run, Step, StepKind
from flowcall.core.tool_calls import new_call_id


def unique_ids(calls: list[ToolCall], taken: Iterable[str] = ()) -> list[ToolCall]:
    """The calls with an id each of their own: an empty id, or one that an earlier call has
    (in `calls` or in `taken`, the run's earlier calls), is replaced; the first keeps its own."""
    seen, out = set(taken), []
    for call in calls:
        if not call.id or call.id in seen:
            call = call.model_copy(update={"id": _fresh(seen)})
        seen.add(call.id)
        out.append(call)
    return out


def _fresh(seen: set[str]) -> str:
    new = new_call_id()
    while new in seen:
        new = new_call_id()
    return new


def repeated(ids: Iterable[str]) -> list[str]:
    """The ids given more than once."""
    return [i for i, n in Counter(ids).items() if n > 1]


def imported(run: Run, source: str) -> Run:
    """A run from a file with each call's id its own: refused (ConfigError) where one id stands
    for two calls of one round; an id a later round uses again gets a new one in that round."""
    steps = sorted(run.steps, key=lambda s: s.seq)
    problems = _shared_ids(steps)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise ConfigError(
            f"{source} cannot be imported: " + "; ".join(problems[:3]) + more + ". A person's "
            "decision is bound to one call by its id, so two calls cannot share one; export the "
            "run again with a current FlowCall, or give each call its own id"
        )
    return run.model_copy(update={"steps": _later_rounds_renamed(run.steps)})


def _shared_ids(steps: list[Step]) -> list[str]:
    """Where one id stands for two calls of one round: twice in one decision's list, on two
    tool steps, on two tools, or on two waiting calls with different arguments (a call that
    waits again after a resume is asked with its arguments as they were)."""
    problems, names, ran, asked = [], {}, set(), {}
    for step in steps:
        twice = repeated(_listed(step))
        problems += [f"step {step.seq} lists two calls with the id {i[:40]!r}" for i in twice]
        call_id = step.tool_call_id or ""
        if not call_id or step.kind not in (StepKind.APPROVAL, StepKind.TOOL_CALL):
            continue
        key, shown = (step.round, call_id), f"{call_id[:40]!r}"
        if names.setdefault(key, step.name) != step.name:
            tools = f"{str(names[key])[:60]!r} and {str(step.name)[:60]!r}"
            problems.append(f"the id {shown} names two tools, {tools}, in round {step.round}")
        if step.kind == StepKind.TOOL_CALL:
            if key in ran:
                problems.append(f"two tool calls of round {step.round} have the id {shown}")
            ran.add(key)
        elif (step.note or "").startswith(WAITING_PREFIX):
            if asked.setdefault(key, step.arguments) != step.arguments:
                problems.append(f"two calls waiting in round {step.round} have the id {shown}")
    return problems


def _later_rounds_renamed(steps: list[Step]) -> list[Step]:
    """The steps with an id that an earlier round used renamed, one new id per round."""
    first: dict[str, int] = {}
    for step in sorted(steps, key=lambda s: s.seq):
        for call_id in _ids_of(step):
            first[call_id] = min(first.get(call_id, step.round), step.round)
    renamed: dict[tuple[int, str], str] = {}

    def new_id(round_no: int, call_id: str) -> str:
        if first.get(call_id, round_no) >= round_no:
            return call_id
        return renamed.setdefault((round_no, call_id), new_call_id())

    out = []
    for step in steps:
        calls = [{**c, "id": new_id(step.round, c["id"])} if _has_id(c) else c for c in step.tool_calls or []]
        update = {"tool_calls": calls if step.tool_calls is not None else None}
        if step.tool_call_id:
            update["tool_call_id"] = new_id(step.round, step.tool_call_id)
        out.append(step.model_copy(update=update))
    return out


def _listed(step: Step) -> list[str]:
    """The ids in a model step's list of calls."""
    return [c["id"] for c in step.tool_calls or [] if _has_id(c)]


def _has_id(call: object) -> bool:
    return isinstance(call, dict) and isinstance(call.get("id"), str) and bool(call["id"])


def _ids_of(step: Step) -> list[str]:
    return [*_listed(step), *([step.tool_call_id] if step.tool_call_id else [])]
