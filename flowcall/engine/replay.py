"""Replay a recorded run: the models answer from the record, the tools run for real.

This reproduces a run deterministically without a model (or a key, or a network), so a tool
can be debugged against exactly the calls a model once made, and a changed tool can be
checked against old runs.

Decisions are replayed whole, round by round: the round's recorded model steps (relevance
scores, fallbacks, calls written one at a time) are recorded again as they were, and the
round's decision is the one the record holds. The calling way is not run again: it read the
model's reply when the run was recorded, and the record keeps the calls it read (the schema
way's JSON text, for one, is not kept), and the way's choices hung on the provider's
capabilities, which the record does not hold. So every way, tool_choice and parallel setting
replays alike. The polish model answers with its recorded text, checked by the engine again.
"""

from __future__ import annotations

from flowcall.calling.base import ModelCall
from flowcall.calling.relevance import reading_from_notes
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import ModelRequest, ModelTurn, ToolCall, Usage
from flowcall.core.spec import ModelConfig, PolishConfig
from flowcall.core.steps import Run, Step, StepKind
from flowcall.engine.compare import align
from flowcall.engine.rerun import decision_step
from flowcall.providers.base import Capabilities, ProviderFactory

_PROVIDER_FAILURES = {str(ErrorCode.PROVIDER_ERROR), str(ErrorCode.RATE_LIMITED)}


def turn_from_step(step: Step) -> ModelTurn | ProviderError:
    """A model step's answer as the provider gave it to the engine (after the way read it)."""
    if step.error_code in _PROVIDER_FAILURES:
        error = ProviderError(
            step.error_message or "recorded provider failure", code=ErrorCode(step.error_code)
        )
        error.details["wire_request"] = step.request
        return error
    return ModelTurn(
        content=step.result if isinstance(step.result, str) else None,
        tool_calls=[ToolCall.model_validate(c) for c in step.tool_calls or []],
        usage=Usage(input_tokens=step.tokens_in, output_tokens=step.tokens_out),
        parse_errors=[step.error_message] if step.error_message else [],
        wire_request=step.request or {},
        wire_response=step.response or {},
        rendered_prompt=step.rendered_prompt,
    )


class RecordedModel:
    """A provider that gives back a run's recorded answers of one model, in order."""

    name = "replay"

    def __init__(self, steps: list[Step], model: str):
        self.steps = list(steps)
        self.model = model
        self.capabilities = Capabilities()

    def complete(self, request: ModelRequest) -> ModelTurn:
        if not self.steps:
            raise ProviderError(
                "the recorded run has no more answers from this model: the replay went another way"
            )
        turn = turn_from_step(self.steps.pop(0))
        if isinstance(turn, ProviderError):
            raise turn
        return turn


class RecordedDecisions(RecordedModel):
    """The decision model: its answers grouped by round, replayed by `ReplayWay`."""

    def __init__(self, steps: list[Step], model: str):
        super().__init__(steps, model)
        self.rounds = _rounds(steps)

    def decision_way(self) -> ReplayWay:  # the engine asks a provider for its own way (model_calls.way_for)
        return ReplayWay(self)


class ReplayWay:
    """Each decision is the next recorded round: its steps recorded again, its decision returned."""

    name = "replay"

    def __init__(self, record: RecordedDecisions):
        self.record = record

    def decide(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        if not self.record.rounds:
            raise ProviderError(
                "the recorded run made no more decisions: the replay went another way from here"
            )
        steps = self.record.rounds.pop(0)
        decision = decision_step(steps)
        turn = None
        for index, step in enumerate(steps):
            try:
                replayed = call(step.calling_way or self.name, request, None, step.note)
            except ProviderError:
                if index == len(steps) - 1:
                    raise  # the run ended on it
                continue  # auto fell back to the next way
            if step is decision:
                turn = replayed
        if turn is None:
            raise ProviderError("the recorded round holds no decision")
        gate = reading_from_notes([s.note for s in steps])
        return turn.model_copy(update={"gate": gate}) if gate else turn


def _rounds(steps: list[Step]) -> list[list[Step]]:
    """Consecutive model steps of the same round, one group per decision."""
    rounds: list[list[Step]] = []
    for step in steps:
        if rounds and rounds[-1][0].round == step.round:
            rounds[-1].append(step)
        else:
            rounds.append([step])
    return rounds


def replay_factory(run: Run) -> ProviderFactory:
    """Providers that give back, in order, what the run's decision and polish models said."""
    label = f"replay-{run.id[:8]}"
    decision = RecordedDecisions([s for s in run.steps if s.kind == StepKind.MODEL_CALL], label)
    polish = RecordedModel([s for s in run.steps if s.kind == StepKind.POLISH], label)

    def provider_for(config: ModelConfig) -> RecordedModel:
        return polish if isinstance(config, PolishConfig) else decision

    return provider_for


def _calls(step: Step) -> list[tuple]:
    return [(c.get("name"), c.get("arguments")) for c in step.tool_calls or []]


def _label(step: Step) -> str:
    return f"{step.seq} {step.kind}" + (f" {step.name}" if step.name else "")


def _changes(old: Step, new: Step) -> str | None:
    """What a replay changed in one step: the calls, results and errors; not which model
    answered (the record did), its tokens (the record's) or the time taken."""
    if old.kind == StepKind.TOOL_CALL:
        if old.arguments != new.arguments:
            return f"call {old.seq}: {old.name}({old.arguments}) became {new.name}({new.arguments})"
        if (old.error_code, old.result) != (new.error_code, new.result):
            return (
                f"call {old.seq} {old.name}: result or error differs ({old.error_code} -> {new.error_code})"
            )
        return None
    fields = {
        "tool calls": (_calls(old), _calls(new)),
        "result": (old.result, new.result),
        "error": (old.error_code, new.error_code),
        "calling way": (old.calling_way, new.calling_way),
    }
    changed = [what for what, (a, b) in fields.items() if a != b]
    return f"step {old.seq} {old.kind}: {', '.join(changed)} differ" if changed else None


def differences(original: Run, replayed: Run) -> list[str]:
    """What a replay changed. Steps are paired as `compare.align` pairs them (by kind, round
    and tool), so one extra or missing call is one difference, not a shift of every later pair."""
    diffs = []
    for pair in align(original, replayed):
        old, new = pair.left, pair.right
        if new is None:
            diffs.append(f"step {_label(old)}: not in the replay")
        elif old is None:
            diffs.append(f"replay step {_label(new)}: not in the recorded run")
        elif (change := _changes(old, new)) is not None:
            diffs.append(change)
    if original.status != replayed.status:
        diffs.append(f"status: {original.status.value} -> {replayed.status.value}")
    if original.final_answer != replayed.final_answer:
        diffs.append("final answer differs")
    return diffs
