"""An experiment as recorded: what ran (flow and dataset versions, model, calling way), each
item's run with its verdicts, and the summary (totals, tokens, latency percentiles). Pure: the
store keeps these records (store/experiments.py), experiments.py makes them, and scoring.py
gives the verdicts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field


class Verdict(BaseModel):
    """What one expectation of a dataset item found of a run (scoring.py)."""

    expectation: str
    passed: bool
    reason: str


class ExperimentStatus(StrEnum):
    RUNNING = "running"
    FINISHED = "finished"  # every item ran and was scored (an item may have failed: see its verdicts)
    FAILED = "failed"  # it stopped on an error; the items not run yet were cancelled
    CANCELLED = "cancelled"  # a person stopped it (Ctrl-C)


class ItemResult(BaseModel):
    """One run of one dataset item. status and passed stay None until its run is scored."""

    position: int  # the item's place in the dataset version, from 0
    attempt: int  # which of the --repeat runs, from 0
    item_key: str
    run_id: str | None
    status: str | None = None
    passed: bool | None = None
    verdicts: list[Verdict] | None = None
    latency_ms: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    outcome: str | None = None  # steps.ANSWERED_WITHOUT_TOOLS, or None
    traced: int | None = None  # answer values traced to a tool result or the question...
    answer_values: int | None = None  # ...of these (provenance.traced_share)


class Summary(BaseModel):
    runs: int  # scored
    passed: int
    failed: int
    not_run: int
    pass_rate: float | None
    by_expectation: dict[str, dict[str, int]] = Field(default_factory=dict)  # name -> {"passed", "total"}
    statuses: dict[str, int] = Field(default_factory=dict)  # run status -> runs
    tokens_in: int = 0
    tokens_out: int = 0
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    latency_mean_s: float | None = None
    answered_without_tools: int = 0  # runs whose answer no tool result backs
    traced: int = 0  # answer values traced to a tool result or the question, over all runs...
    answer_values: int = 0  # ...of these


class Experiment(BaseModel):
    id: int
    flow_ref: str
    flow_name: str
    flow_version: int
    flow_version_id: int | None
    dataset_name: str
    dataset_version: int
    dataset_version_id: int
    model: str
    polish_model: str | None
    calling_way: str
    repeat: int
    status: ExperimentStatus
    error: str | None = None
    started_at: datetime
    ended_at: datetime | None = None
    summary: Summary | None = None
    items: list[ItemResult] = Field(default_factory=list)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0 to 100) by linear interpolation between the closest ranks, as
    numpy's default: p50 of [1, 2, 3, 4] is 2.5."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(items: Sequence[ItemResult]) -> Summary:
    scored = [i for i in items if i.passed is not None]
    by_expectation: dict[str, dict[str, int]] = {}
    statuses: dict[str, int] = {}
    for item in scored:
        statuses[item.status or "?"] = statuses.get(item.status or "?", 0) + 1
        for verdict in item.verdicts or []:
            counts = by_expectation.setdefault(verdict.expectation, {"passed": 0, "total": 0})
            counts["passed"] += verdict.passed
            counts["total"] += 1
    seconds = [i.latency_ms / 1000 for i in scored if i.latency_ms is not None]
    passed = sum(bool(i.passed) for i in scored)
    return Summary(
        runs=len(scored),
        passed=passed,
        failed=len(scored) - passed,
        not_run=len(items) - len(scored),
        pass_rate=passed / len(scored) if scored else None,
        by_expectation=by_expectation,
        statuses=statuses,
        tokens_in=sum(i.tokens_in for i in scored),
        tokens_out=sum(i.tokens_out for i in scored),
        latency_p50_s=percentile(seconds, 50) if seconds else None,
        latency_p95_s=percentile(seconds, 95) if seconds else None,
        latency_mean_s=sum(seconds) / len(seconds) if seconds else None,
        answered_without_tools=sum(i.outcome is not None for i in scored),
        traced=sum(i.traced or 0 for i in scored),
        answer_values=sum(i.answer_values or 0 for i in scored),
    )


@dataclass(frozen=True)
class Change:
    """An item (one attempt of it) scored in both experiments, whose verdict differs."""

    key: str
    attempt: int
    before: ItemResult
    after: ItemResult

    @property
    def broke(self) -> bool:
        return bool(self.before.passed) and not self.after.passed


@dataclass(frozen=True)
class Comparison:
    changes: list[Change]  # pass -> fail first, then fail -> pass; each in the dataset's order
    same: int  # items scored in both with the same verdict
    only_before: list[str]  # keys scored only in the first experiment
    only_after: list[str]


def compare(before: Experiment, after: Experiment) -> Comparison:
    """Pair the items of two experiments by item key (the item's id, else its question) and
    attempt; list those whose pass/fail verdict changed."""

    def scored(experiment: Experiment) -> dict[tuple[str, int], ItemResult]:
        return {(i.item_key, i.attempt): i for i in experiment.items if i.passed is not None}

    left, right = scored(before), scored(after)
    changes = [
        Change(key, attempt, left[(key, attempt)], right[(key, attempt)])
        for key, attempt in left
        if (key, attempt) in right and left[(key, attempt)].passed != right[(key, attempt)].passed
    ]
    changes.sort(key=lambda c: (not c.broke, c.after.position, c.attempt))
    both = sum(1 for k in left if k in right)
    return Comparison(
        changes=changes,
        same=both - len(changes),
        only_before=sorted({k for k, _ in left} - {k for k, _ in right}),
        only_after=sorted({k for k, _ in right} - {k for k, _ in left}),
    )
