"""The local model's prompt-prefix cache changes speed, never output (issue 12): at temperature 0,
the example flows give the same steps with the cache off, with it on and cold, and with it on
and warm (the same question again, every prompt then starts from a cached state)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowcall.core.spec import load_flow
from flowcall.core.steps import StepKind
from flowcall.providers.local import LocalProvider
from flowcall.service.front import FlowCall
from flowcall.store import Store
from flowcall.studio.shared import EXAMPLE_QUESTIONS
from tests.support.example_checks import users_clock

pytestmark = pytest.mark.model
FLOWS = Path(__file__).resolve().parents[2] / "flows"


def _what_happened(run) -> list[tuple]:
    """Each step as what it decided: calls with arguments, results, answers (not timings or ids)."""
    seen = []
    for step in run.steps:
        if step.kind == StepKind.TOOL_CALL:
            result = step.result
            if isinstance(result, dict):
                result = {k: v for k, v in result.items() if k not in ("id", "created_at")}
            seen.append(("tool", step.name, step.arguments, result, step.error_code))
        elif step.kind in (StepKind.MODEL_CALL, StepKind.POLISH):
            text = ((step.response or {}).get("choices") or [{}])[0].get("text")
            seen.append((str(step.kind), text, (step.response or {}).get("scores"), step.error_code))
    return seen


@pytest.fixture(scope="module")
def providers(model_path):
    plain = LocalProvider(Path(model_path))
    plain.prefix.capacity = 0  # every prompt read from scratch (in the same aligned chunks)
    cached = LocalProvider(Path(model_path))
    assert cached.prefix.capacity > 0, "the local provider should keep prompt prefixes by default"
    return plain, cached


# two flows between them hold every kind of step the cache sees: a grammar-held call, a second
# round whose prompt starts with the first's, a polish answer (benchmarks/latency.py and
# benchmarks/example_flows.py run every flow with the cache on)
@pytest.mark.parametrize("file", ["clean_data.json", "employee_lookup.json"])
def test_the_cache_changes_no_step(tmp_path, providers, file):
    plain, cached = providers
    flow = load_flow(FLOWS / file)
    question = EXAMPLE_QUESTIONS[flow.name]
    runs = []
    with users_clock():
        for provider in (plain, cached, cached):
            service = FlowCall(
                store=Store.open(f"sqlite:///{tmp_path / f'{len(runs)}.db'}"),
                provider_factory=lambda cfg, p=provider: p,
            )
            runs.append(service.run(flow, question))
            service.store.close()
    uncached, cold, warm = (_what_happened(r) for r in runs)
    assert uncached == cold == warm
    assert runs[2].steps and all(r.status == runs[0].status for r in runs)
    assert cached.prefix.hits > 0  # the warm run did start from kept states
