"""Replay a recorded run: the models answer from the record, the tools run for real.

This reproduces a run deterministically without a model (or a key, or a network), so a tool
can be debugged against exactly the calls a model once made, and a changed tool can be
checked against old runs.
"""

from __future__ import annotations

from flowcall.engine import ProviderFactory
from flowcall.errors import ErrorCode, ProviderError
from flowcall.messages import ModelTurn, ToolCall, Usage
from flowcall.providers.scripted import ScriptedProvider
from flowcall.spec import ModelConfig, PolishConfig
from flowcall.steps import Run, Step, StepKind

_PROVIDER_FAILURES = {str(ErrorCode.PROVIDER_ERROR), str(ErrorCode.RATE_LIMITED)}


def turn_from_step(step: Step) -> ModelTurn | ProviderError:
    if step.error_code in _PROVIDER_FAILURES:
        return ProviderError(step.error_message or "recorded provider failure", code=ErrorCode(step.error_code))
    return ModelTurn(
        content=step.result if isinstance(step.result, str) else None,
        tool_calls=[ToolCall.model_validate(c) for c in step.tool_calls or []],
        usage=Usage(input_tokens=step.tokens_in, output_tokens=step.tokens_out),
    )


def replay_factory(run: Run) -> ProviderFactory:
    """Providers that give back, in order, what the run's decision and polish models said."""
    label = f"replay-{run.id[:8]}"
    # relevance scores are not decisions: the scripted provider does not score, so no way asks for them
    decision = ScriptedProvider([turn_from_step(s) for s in run.steps
                                 if s.kind == StepKind.MODEL_CALL and not (s.request or {}).get("score_options")], model=label)
    polish = ScriptedProvider([turn_from_step(s) for s in run.steps if s.kind == StepKind.POLISH], model=label)

    def provider_for(config: ModelConfig) -> ScriptedProvider:
        return polish if isinstance(config, PolishConfig) else decision

    return provider_for


def differences(original: Run, replayed: Run) -> list[str]:
    """What a replay changed in the tool calls' results, the errors and the answer."""
    diffs = []
    old = [s for s in original.steps if s.kind == StepKind.TOOL_CALL]
    new = [s for s in replayed.steps if s.kind == StepKind.TOOL_CALL]
    if len(old) != len(new):
        diffs.append(f"tool calls: {len(old)} recorded, {len(new)} replayed")
    for a, b in zip(old, new):
        if (a.name, a.arguments) != (b.name, b.arguments):
            diffs.append(f"call {a.seq}: {a.name}({a.arguments}) became {b.name}({b.arguments})")
        elif a.error_code != b.error_code or a.result != b.result:
            diffs.append(f"call {a.seq} {a.name}: result or error differs ({a.error_code} -> {b.error_code})")
    if original.status != replayed.status:
        diffs.append(f"status: {original.status.value} -> {replayed.status.value}")
    if original.final_answer != replayed.final_answer:
        diffs.append("final answer differs")
    return diffs
