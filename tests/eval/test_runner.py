"""The evaluation loop and its summary, with the scripted model (the real model: test_cli_eval)."""

from __future__ import annotations

import json

from flowcall.core.spec import DecisionConfig
from flowcall.core.steps import MemorySink
from flowcall.eval import load_cases
from flowcall.eval.runner import evaluate, summarize
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider


def test_scores_right_wrong_and_schema_invalid_calls():
    simple = load_cases("simple", limit=3)
    irrelevant = load_cases("irrelevance", limit=1)
    first = simple[0]  # calculate_triangle_area(base=10, height=5)
    right = json.dumps(
        {"tool_calls": [{"name": first.tools[0].name, "arguments": {"base": 10, "height": 5}}]}
    )
    wrong_value = json.dumps({"tool_calls": [{"name": simple[1].tools[0].name, "arguments": {"number": 6}}]})
    bad_type = json.dumps(
        {"tool_calls": [{"name": simple[2].tools[0].name, "arguments": {"x": "four", "y": 5}}]}
    )
    script = [right, wrong_value, bad_type, '{"answer": "I cannot help with that."}']
    provider = ScriptedProvider(script, capabilities=Capabilities(json_schema_output=True, grammar=True))
    outcomes = evaluate(
        simple + irrelevant,
        DecisionConfig(provider="scripted", calling_way="schema"),
        lambda cfg: provider,
        MemorySink(),
    )
    assert [o.valid for o in outcomes] == [True, False, False, True]
    assert outcomes[1].error_type.startswith("value_error")
    assert outcomes[2].calls_schema_valid == 0 and outcomes[0].calls_schema_valid == 1
    by_category = {s.category: s for s in summarize(outcomes)}
    assert by_category["simple"].accuracy == 1 / 3
    assert by_category["simple"].schema_valid_share == 2 / 3
    assert (
        by_category["irrelevance"].accuracy == 1.0 and by_category["irrelevance"].schema_valid_share is None
    )
    # the schema way got the case's tools under the BFCL names made safe for APIs
    assert "math_factorial" in provider.requests[1].messages[0].content
