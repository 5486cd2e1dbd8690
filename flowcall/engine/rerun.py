"""Re-run from a step: rebuild the loop's state from a recorded run, up to a chosen step.

The new run reuses what came before the step (the model's earlier decisions and the tools'
results are not asked for again) and runs live from there, with the person's edit: other
arguments for a tool call, another system prompt for a decision or for the polish model.

Where the cut falls depends on the step:
- a decision (model_call): its whole round is decided again (relevance scores included);
- a tool call: the round's decision and the calls before it are kept; the chosen call (with
  the edited arguments) and the calls after it run again. The round's calls are read from
  its tool steps, as they ran, so this holds in every calling way;
- the polish step: every round is kept and only the polish model runs again.
"""

from __future__ import annotations

import json
from typing import Any

from flowcall.calling.relevance import reading_from_notes
from flowcall.calling.vetting import withheld_reason
from flowcall.core.errors import ConfigError, ErrorCode
from flowcall.core.messages import Message, ToolCall
from flowcall.core.spec import Flow
from flowcall.core.steps import REUSED_NOTE as REUSED
from flowcall.core.steps import Run, Step, StepKind
from flowcall.engine.loop_state import LoopState, no_result_reason, outcome_record, unreadable_reason
from flowcall.tools.execute import CallOutcome

RERUNNABLE = (StepKind.MODEL_CALL, StepKind.TOOL_CALL, StepKind.POLISH)


def is_scoring(step: Step) -> bool:
    """A scoring call (relevance, "another call?"): it weighs options, it decides nothing."""
    return bool((step.request or {}).get("score_options"))


def decision_step(steps: list[Step]) -> Step | None:
    """The step that holds a round's decision: the round's last model call that wrote
    something. The schema way's call-by-call writing ends with a scoring step, and each of its
    "call N" steps holds the list so far (calling/schema.py), so the last written one is it."""
    written = [s for s in steps if s.kind == StepKind.MODEL_CALL and not is_scoring(s)]
    return written[-1] if written else None


def cut_point(run: Run, seq: int) -> tuple[Step, int]:
    """The chosen step, and the seq of the first step the new run does again."""
    chosen = next((s for s in run.steps if s.seq == seq), None)
    if chosen is None:
        raise ConfigError(f"run {run.id[:8]} has no step {seq}; its steps are 1 to {len(run.steps)}")
    if chosen.kind not in RERUNNABLE:
        raise ConfigError(
            f"step {seq} is a {chosen.kind} step; re-run from a model_call, tool_call or polish step"
        )
    if chosen.kind == StepKind.TOOL_CALL:
        return chosen, chosen.seq  # the round's earlier calls keep their results
    first = min(s.seq for s in run.steps if s.kind == chosen.kind and s.round == chosen.round)
    before = next((s for s in run.steps if s.seq == first - 1), None)
    if (
        before is not None
        and before.kind == StepKind.ERROR
        and before.error_code == str(ErrorCode.MAX_ROUNDS)
    ):
        first = before.seq  # the engine records it again on its way to the last, tool-less decision
    return chosen, first


def _call_of(step: Step, arguments: dict[str, Any] | None = None) -> ToolCall:
    """A tool step as the call that ran (after repairs and grounding), or with `arguments`."""
    call_id, name = step.tool_call_id or f"call_{step.seq}", step.name or ""
    if arguments is not None:  # a person's edit runs exactly as given
        return ToolCall(
            id=call_id,
            name=name,
            arguments=arguments,
            raw_arguments=json.dumps(arguments, ensure_ascii=False),
        )
    response = step.response or {}
    raw = response.get("raw_arguments")
    if raw is None:
        raw = json.dumps(step.arguments, ensure_ascii=False) if step.arguments is not None else ""
    return ToolCall(
        id=call_id,
        name=name,
        arguments=step.arguments,
        raw_arguments=raw,
        dropped_arguments=response.get("dropped_ungrounded") or {},
    )


def _repairs_of(step: Step) -> dict[str, Any]:
    """What the engine dropped from the call before it ran, as its tool step said."""
    response = step.response or {}
    return {
        key: response[key] for key in ("dropped_schema_keys", "dropped_unknown_keys") if response.get(key)
    }


def _outcome(call: ToolCall, step: Step) -> CallOutcome:
    """A recorded call's outcome, as the engine had it: the model reads it through the same
    `content_for_model` (cut to size), and the round is counted by the same rules."""
    return CallOutcome(
        call,
        None,
        result=step.result,
        error_code=step.error_code,  # type: ignore[arg-type]
        error_message=step.error_message,
        latency_ms=step.latency_ms,
    )


def _chosen_round(
    run: Run, text: str | None, chosen: Step, arguments: dict[str, Any] | None, state: LoopState
) -> None:
    """The round of the chosen tool call, read from its tool steps (the calls as they ran, in
    every calling way): the calls before the chosen one keep their recorded results, the chosen
    one (with `arguments` if given) and those after it run again."""
    steps = [s for s in run.steps if s.round == chosen.round and s.kind == StepKind.TOOL_CALL]
    edited = {chosen.seq: arguments} if arguments is not None else {}
    calls = [_call_of(s, edited.get(s.seq)) for s in steps]
    state.messages.append(Message(role="assistant", content=text, tool_calls=calls))
    kept = [_outcome(call, step) for call, step in zip(calls, steps) if step.seq < chosen.seq]
    state.take_results(kept)
    state.kept = [outcome_record(o) for o in kept]  # the engine counts the round whole, with these
    again = [(call, step) for call, step in zip(calls, steps) if step.seq >= chosen.seq]
    state.pending = [call for call, _ in again]
    state.pending_repairs = {
        call.id: _repairs_of(step) for call, step in again if step.seq not in edited and _repairs_of(step)
    }


def checkpoint_before(
    run: Run, flow: Flow, seq: int, arguments: dict[str, Any] | None = None
) -> tuple[LoopState, list[Step]]:
    """The loop state at the cut before step `seq`, and the steps the new run reuses.
    `arguments` replaces the chosen tool call's arguments."""
    chosen, first = cut_point(run, seq)
    if arguments is not None and chosen.kind != StepKind.TOOL_CALL:
        raise ConfigError(f"step {seq} is a {chosen.kind} step; only a tool_call step takes edited arguments")
    reused = [s for s in run.steps if s.seq < first]
    state = LoopState.fresh(flow, run.question, run.context)

    for round_no in sorted({s.round for s in reused if s.round > 0}):
        steps = [s for s in reused if s.round == round_no]
        decision = decision_step(steps)
        tool_steps = [s for s in steps if s.kind == StepKind.TOOL_CALL]
        state.round_no = round_no
        if decision is None:
            continue
        text = decision.result if isinstance(decision.result, str) else None
        state.last_text = text
        if chosen.kind == StepKind.TOOL_CALL and round_no == chosen.round:
            _chosen_round(run, text, chosen, arguments, state)
        elif tool_steps:
            calls = [_call_of(s) for s in tool_steps]
            state.messages.append(Message(role="assistant", content=text, tool_calls=calls))
            state.apply_round([_outcome(call, step) for call, step in zip(calls, tool_steps)], {})
        elif decision.error_code == str(ErrorCode.PARSE_FAILED):
            state.note_unreadable(text, decision.error_message or "unreadable tool call")
            state.budget = max(0, state.budget - 1)
        else:
            state.finished = True  # the model answered without tools, or only repeated answered calls

    if flow.tool_choice != "none":  # as in the engine, a flow that offers no tool wants none
        state.wanted_tools, state.unbacked, state.settled = _backing(reused)
    first_round = [s for s in reused if s.kind == StepKind.MODEL_CALL and s.round == 1]
    if (gate := reading_from_notes([s.note for s in first_round])) is not None:
        state.gate = gate.model_dump()  # the question's reading, as the engine keeps it
    if chosen.kind == StepKind.POLISH:
        state.tool_rounds = max(state.tool_rounds, flow.max_rounds)  # straight to the polish model
    note = f"{REUSED}{run.id[:8]}"
    reused = [s.model_copy(update={"note": f"{s.note} · {note}" if s.note else note}) for s in reused]
    return state, reused


def _backing(reused: list[Step]) -> tuple[bool, list[str], int]:
    """Whether the reused decisions called tools, why calls gave no result, and how many of
    those reasons a later round's result settled: the engine's wanted_tools, unbacked and
    settled (LoopState), read from the steps. As in the engine, a round that got a result
    settles the reasons before its own calls' failures (LoopState.apply_round)."""
    wanted, reasons, settled = False, [], 0
    answered = {s.round for s in reused if s.kind == StepKind.TOOL_CALL and not s.error_code}
    for step in reused:
        if step.kind == StepKind.TOOL_CALL and step.round in answered:
            answered.discard(step.round)  # the round's first call: where apply_round settles
            settled = len(reasons)
        if step.kind == StepKind.MODEL_CALL and (
            step.tool_calls or step.error_code == str(ErrorCode.PARSE_FAILED)
        ):
            wanted = True
            if not step.tool_calls and step.error_code == str(ErrorCode.PARSE_FAILED):
                reasons.append(unreadable_reason(step.error_message or ""))
        elif (
            step.kind == StepKind.WARNING
            and step.name == "doc_values"
            and (step.note or "").startswith("not made")
        ):
            wanted = True
            reasons += [
                withheld_reason(i.get("tool"), i.get("argument"), i.get("value"))
                for i in step.result or []
                if isinstance(i, dict)
            ]
        elif step.kind == StepKind.TOOL_CALL and step.error_code:
            reasons.append(no_result_reason(step.name or "a tool", step.error_code, step.error_message))
    return wanted, reasons, settled
