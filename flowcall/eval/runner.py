"""Run BFCL cases through a model and a calling way, judge them, and sum up per category."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Callable

from flowcall.core import schemas
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import StepKind, StepSink
from flowcall.engine.loop import Engine
from flowcall.eval.bfcl_check import check
from flowcall.eval.bfcl_data import BfclCase
from flowcall.providers.base import ProviderFactory
from flowcall.tools.registry import ToolRegistry


@dataclass
class CaseOutcome:
    id: str
    category: str
    valid: bool
    error_type: str | None
    calls: list[dict]
    calls_produced: int
    calls_schema_valid: int
    latency_ms: float
    tokens_in: int
    tokens_out: int
    run_id: str
    error: str | None = None
    # where the model's time went (local model only): reading prompts vs generating tokens
    prompt_eval_ms: float | None = None
    generation_ms: float | None = None
    model_calls: int = 0


@dataclass
class CategorySummary:
    category: str
    cases: int
    accuracy: float
    schema_valid_share: float | None  # of the calls the model produced
    median_latency_ms: float
    median_tokens_in: float
    median_tokens_out: float
    errors: dict[str, int] = field(default_factory=dict)
    median_model_calls: float = 0
    prompt_eval_share: float | None = None  # of the model's time, summed over the cases
    generation_share: float | None = None


def _schema_valid(case: BfclCase, name: str, arguments: dict | None) -> bool:
    tool = next((t for t in case.tools if t.name == name), None)
    return (
        tool is not None and arguments is not None and schemas.validator(tool.parameters).is_valid(arguments)
    )


def evaluate_case(engine: Engine, flow: Flow, case: BfclCase) -> CaseOutcome:
    run, turn = engine.decide_only(flow, case.messages, case.tools, label=f"bfcl-{case.id}")
    calls = turn.tool_calls if turn else []
    judged = check(case, [(case.original_name(c.name), c.arguments) for c in calls]) if turn else None
    model_steps = [s for s in run.steps if s.kind == StepKind.MODEL_CALL]
    timings = [(s.response or {}).get("timings") for s in model_steps]
    timed = [t for t in timings if t]
    return CaseOutcome(
        id=case.id,
        category=case.category,
        valid=bool(judged and judged.valid),
        error_type=(judged.error_type if judged else "run_failed"),
        calls=[{"name": c.name, "arguments": c.arguments} for c in calls],
        calls_produced=len(calls),
        calls_schema_valid=sum(_schema_valid(case, c.name, c.arguments) for c in calls),
        latency_ms=sum(s.latency_ms for s in model_steps),
        tokens_in=sum(s.tokens_in for s in model_steps),
        tokens_out=sum(s.tokens_out for s in model_steps),
        run_id=run.id,
        error=run.error,
        prompt_eval_ms=sum(t["prompt_eval_ms"] for t in timed) if timed else None,
        generation_ms=sum(t["generation_ms"] for t in timed) if timed else None,
        model_calls=len(model_steps),
    )


def evaluate(
    cases: list[BfclCase],
    decision: DecisionConfig,
    provider_for: ProviderFactory,
    sink: StepSink,
    *,
    on_case: Callable[[CaseOutcome], None] | None = None,
) -> list[CaseOutcome]:
    engine = Engine(ToolRegistry(), provider_for, sink)
    outcomes = []
    for case in cases:
        # Parallel calls are allowed in every category, as BFCL allows them: the model, not the
        # category's name, must tell one call from several.
        flow = Flow(name=f"bfcl-{case.category}", decision=decision, parallel_tool_calls=True, max_rounds=1)
        outcome = evaluate_case(engine, flow, case)
        outcomes.append(outcome)
        if on_case:
            on_case(outcome)
    return outcomes


def summarize(outcomes: list[CaseOutcome]) -> list[CategorySummary]:
    summaries = []
    for category in dict.fromkeys(o.category for o in outcomes):
        mine = [o for o in outcomes if o.category == category]
        produced = sum(o.calls_produced for o in mine)
        errors: dict[str, int] = {}
        for o in mine:
            if not o.valid and o.error_type:
                errors[o.error_type] = errors.get(o.error_type, 0) + 1
        summaries.append(
            CategorySummary(
                category=category,
                cases=len(mine),
                accuracy=sum(o.valid for o in mine) / len(mine),
                schema_valid_share=(sum(o.calls_schema_valid for o in mine) / produced) if produced else None,
                median_latency_ms=statistics.median(o.latency_ms for o in mine),
                median_tokens_in=statistics.median(o.tokens_in for o in mine),
                median_tokens_out=statistics.median(o.tokens_out for o in mine),
                errors=dict(sorted(errors.items(), key=lambda kv: -kv[1])),
                median_model_calls=statistics.median(o.model_calls for o in mine),
                prompt_eval_share=_share(mine, "prompt_eval_ms"),
                generation_share=_share(mine, "generation_ms"),
            )
        )
    return summaries


def _share(outcomes: list[CaseOutcome], part: str) -> float | None:
    timed = [o for o in outcomes if getattr(o, part) is not None]
    total = sum(o.latency_ms for o in timed)
    return sum(getattr(o, part) for o in timed) / total if timed and total else None


def as_dicts(items: list) -> list[dict]:
    return [asdict(i) for i in items]
