"""A model's calls in one run, each recorded as one step (also when it fails); the calling way
a run's decisions go through (way_for), and what a wrong call costs (spend_retry)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from flowcall.calling import make_way, vetting
from flowcall.calling.base import CallingWay
from flowcall.calling.router import Rule
from flowcall.core import progress
from flowcall.core.call_ids import unique_ids
from flowcall.core.errors import ErrorCode, FlowCallError, ProviderError
from flowcall.core.messages import ModelRequest, ModelTurn
from flowcall.core.spec import Flow
from flowcall.core.steps import StepKind, utcnow
from flowcall.engine.recorder import Recorder
from flowcall.providers.base import Provider


class RunFailed(FlowCallError):
    """Raised inside the loop to end a run; the run is recorded as failed, not lost."""


@dataclass
class ModelCaller:
    provider: Provider
    rec: Recorder
    way: CallingWay | None = None  # the decision model's calling way; None for the polish model

    def call(
        self,
        kind: StepKind,
        round_no: int,
        way_name: str | None,
        sent: ModelRequest,
        interpret: Callable[[ModelTurn], ModelTurn] | None = None,
        note: str | None = None,
        taken: frozenset[str] = frozenset(),
    ) -> ModelTurn:
        """One provider call, recorded as one step (also when it fails, then re-raised). Its
        calls are recorded with an id each of their own, none of the `taken` ones (the run's
        earlier calls): a person's decision binds one call by its id (core/call_ids.py)."""
        provider = self.provider
        started_at, t0 = utcnow(), time.perf_counter()
        common = dict(
            round=round_no,
            name=f"{provider.name}/{provider.model}",
            calling_way=way_name,
            note=note,
            started_at=started_at,
        )
        try:
            with progress.step(kind.value, progress_label(provider, note)):
                turn = provider.complete(sent)
        except ProviderError as exc:
            self.rec.record(kind, **common, **_failure_fields(exc, sent, t0))
            raise
        if interpret:
            turn = interpret(turn)
        if turn.tool_calls:
            turn = turn.model_copy(update={"tool_calls": unique_ids(turn.tool_calls, taken)})
        if turn.verdict:  # what a check found replaces what it asked, before why the way was chosen
            rest = [part for part in (note or "").split("; ") if part and not turn.verdict.startswith(part)]
            common["note"] = "; ".join([turn.verdict, *rest])
        self.rec.record(kind, **common, **_turn_fields(turn, sent, t0))
        return turn

    def decide(self, request: ModelRequest, round_no: int) -> ModelTurn:
        """One decision in the calling way, its model calls recorded; a provider's failure ends the run."""
        assert self.way is not None, "only the decision model decides"
        taken = frozenset(c.id for m in request.messages for c in m.tool_calls)  # the earlier rounds'

        def call(
            way_name: str,
            sent: ModelRequest,
            interpret: Callable[[ModelTurn], ModelTurn] | None = None,
            note: str | None = None,
        ) -> ModelTurn:
            return self.call(StepKind.MODEL_CALL, round_no, way_name, sent, interpret, note, taken)

        try:
            return self.way.decide(request, self.provider.capabilities, call)
        except ProviderError as exc:
            raise RunFailed(exc.code, exc.message) from exc

    def decide_vetted(self, request: ModelRequest, round_no: int, budget: int) -> tuple[ModelTurn, int]:
        """A decision as the host lets it stand (calling/vetting.py): each warning is a step,
        each retry a recorded decision. Returns the turn and the retry budget left."""
        reviewed = vetting.review(self.decide(request, round_no), request, budget)
        while True:
            for warning in reviewed.warnings:
                self.rec.record(StepKind.WARNING, round=round_no, **warning.step_fields())
            budget -= reviewed.spent
            if reviewed.retry is None:
                return reviewed.turn, budget
            reviewed = reviewed.retry.then(self.decide(reviewed.retry.request, round_no))


def _turn_fields(turn: ModelTurn, sent: ModelRequest, t0: float) -> dict[str, Any]:
    """A model call's step fields from its turn: what went and came back (as on the wire where
    the provider keeps it), what it cost, and whether its calls could be read."""
    return dict(
        request=turn.wire_request or sent.model_dump(mode="json", exclude_none=True),
        response=turn.wire_response,
        rendered_prompt=turn.rendered_prompt,
        tool_calls=[c.model_dump(mode="json") for c in turn.tool_calls],
        result=turn.content,
        tokens_in=turn.usage.input_tokens,
        tokens_out=turn.usage.output_tokens,
        latency_ms=turn.latency_ms or (time.perf_counter() - t0) * 1000,
        retries=turn.retries,
        request_id=turn.request_id,
        error_code=str(ErrorCode.PARSE_FAILED) if turn.parse_errors and not turn.tool_calls else None,
        error_message="; ".join(turn.parse_errors) or None,
    )


def _failure_fields(exc: ProviderError, sent: ModelRequest, t0: float) -> dict[str, Any]:
    """A failed model call's step fields: what was sent, the provider's error and its retries."""
    return dict(
        request=exc.details.get("wire_request") or sent.model_dump(mode="json", exclude_none=True),
        error_code=str(exc.code),
        error_message=exc.message,
        request_id=exc.request_id,
        latency_ms=(time.perf_counter() - t0) * 1000,
        retries=exc.details.get("retries") or exc.retries,
    )


def progress_label(provider: Provider, note: str | None) -> str:
    """What a watcher sees while a model call runs: a stage's own label ("relevance of
    get_weather"), else the model; why `auto` chose its way stays in the step's note."""
    stage = (note or "").split("; ")[0]
    return (
        stage
        if stage and not stage.startswith(("auto: ", "after fallback: "))
        else f"{provider.name}/{provider.model}"
    )


def spend_retry(budget: int, code: ErrorCode | None, message: str, rec: Recorder) -> int:
    """A wrong call costs one retry; past the budget the run fails with that call's error."""
    if budget <= 0:
        rec.record(StepKind.ERROR, error_code=str(code), error_message=f"retry budget exhausted: {message}")
        raise RunFailed(code or ErrorCode.INVALID_ARGUMENT, f"the model kept making wrong calls: {message}")
    return budget - 1


def way_for(flow: Flow, decider: Provider) -> CallingWay:
    """A fresh way per run: `auto` remembers its fallbacks for the rest of the run only.
    A provider that brings its own way uses it: a replay answers whole decisions from its
    record (replay.py), whatever way made them."""
    own = getattr(decider, "decision_way", None)
    if callable(own):
        return own()
    rules = [Rule(r.pattern, r.tool) for r in flow.router_rules]
    return make_way(flow.decision.calling_way, decider.capabilities, rules, getattr(decider, "tuning", None))
