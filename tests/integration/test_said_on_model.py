"""Issue 34's tour, on the real embedded model: a new flow with the default settings, the
weather and time tools and a polish schema, asked about Beijing. The decision writes the city
as the weather tool's docs do (北京); no check may refuse what the user said, and every value
of the card says where it came from."""

from __future__ import annotations

import pytest

from flowcall.core.spec import Flow, PolishConfig
from flowcall.core.steps import StepKind
from flowcall.service.front import FlowCall

pytestmark = pytest.mark.model

CARD = {
    "type": "object",
    "required": ["city", "weather", "temperature_c"],
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "weather": {"type": "string", "maxLength": 20},
        "temperature_c": {"type": "number"},
    },
}


def test_beijing_is_not_refused_and_the_card_is_traced(model_path, tmp_path):
    flow = Flow(
        name="beijing",
        tools=["weather/v1/get_weather", "time/v1/get_current_time"],
        polish=PolishConfig(output_schema=CARD, max_tokens=120),
    )
    service = FlowCall.open(f"sqlite:///{tmp_path / 'runs.db'}")
    run = service.run(flow, "What's the weather in Beijing today, and what time is it there?")
    refused = [s for s in run.steps if s.kind == StepKind.WARNING and s.name == "doc_values"]
    assert not refused, [(s.note, s.error_message) for s in refused]
    weather = [s for s in run.steps if s.kind == StepKind.TOOL_CALL and s.name == "get_weather"]
    assert weather and weather[0].error_code is None
    assert weather[0].arguments["location"] in ("北京", "Beijing", "Beijing, China", "北京市")
    assert run.outcome is None, run.outcome_reasons
    # every value of the card says where it came from (a tool's result, the question, or the
    # model's own words, which the 1.5B uses for a reworded weather word), and the record keeps it
    found = {entry["path"]: entry for entry in run.provenance}
    assert {"/weather", "/temperature_c"} <= set(found)
    assert all(entry["source"] in ("tool", "question", "model") for entry in run.provenance)
    assert all(
        entry.get("tool") == "get_weather"
        for entry in run.provenance
        if entry["source"] == "tool" and entry.get("step_seq") == weather[0].seq
    )
    assert service.store.get_run(run.id).provenance == run.provenance
