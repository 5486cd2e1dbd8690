"""The recorded decisions of decision-only experiments, for scripts that score them again
under another rule without running a model (grounding_rules.py, doc_value_calls.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from flowcall.core.datasets import DatasetItem
from flowcall.core.steps import Run
from flowcall.eval.experiments import item_of
from flowcall.service.front import FlowCall
from flowcall.store.experiments import get_experiment


@dataclass
class Recorded:
    model: str
    source: str  # "bfcl" or "real-world" (real-world item ids are "family/kind-n")
    item: DatasetItem
    run: Run
    decision: dict[str, Any]  # the decision the run ended with: {"tool_calls": [...], "answer": ...}


def recorded(service: FlowCall, experiment_ids: list[str]) -> Iterator[Recorded]:
    for experiment_id in experiment_ids:
        experiment = get_experiment(service.store, experiment_id)
        for row in experiment.items:
            if row.passed is None:
                continue
            _, item = item_of(service, row.run_id)
            run = service.store.get_run(row.run_id)
            yield Recorded(
                experiment.model,
                "real-world" if "/" in (item.id or "") else "bfcl",
                item,
                run,
                run.final_answer if isinstance(run.final_answer, dict) else {},
            )
