"""The grammar gate (checking the model's best tokens, not the whole vocabulary) must write
exactly what llama.cpp's full grammar test writes, token for token, on the real model."""

from __future__ import annotations

import json

import pytest

from flowcall.calling.schema import decision_schema
from flowcall.messages import ToolSpec

pytestmark = pytest.mark.model

WEATHER = ToolSpec(name="get_weather", description="Weather for a city on a date.",
                   parameters={"type": "object", "properties": {"location": {"type": "string"}, "date": {"type": "string"},
                                                                "unit": {"type": "string", "enum": ["c", "f"]}},
                               "required": ["location"]})
TIME = ToolSpec(name="get_time", description="The time in a time zone.",
                parameters={"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]})
# short strings: the grammar must close them where the model would go on (the gate's rare path)
CARD = {"type": "object", "properties": {
    "city": {"type": "string", "maxLength": 6},
    "rain": {"type": "boolean"},
    "high": {"type": "number"},
    "advice": {"type": "string", "maxLength": 12},
    "level": {"type": "string", "enum": ["low", "mid", "high"]}},
    "required": ["city", "rain", "high", "advice", "level"]}

CASES = [
    ("Chengdu, 2026-11-26: light rain, high 14, low 9. Write the weather card as JSON.", CARD),
    ("明天成都和北京的天气怎么样?", decision_schema([WEATHER, TIME], "auto", True)),
    ("What time is it in Tokyo?", decision_schema([WEATHER, TIME], "required", False)),
]


@pytest.fixture(scope="module")
def llm(model_path):
    from flowcall.providers.local import LocalProvider

    return LocalProvider.shared().llm


def _write(llm, question: str, schema: dict, gated: bool) -> tuple[list[int], dict[str, int]]:
    from llama_cpp import LlamaGrammar

    from flowcall.providers.grammar_gate import GreedyGrammar

    prompt = f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"
    tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    gate = GreedyGrammar(llm, grammar) if gated else None
    llm.reset()
    try:
        out = llm.create_completion(prompt=tokens, max_tokens=70, temperature=0.0, repeat_penalty=1.0,
                                    grammar=None if gate else grammar, logits_processor=[gate] if gate else None)
    finally:
        if gate:
            gate.close()
    written = llm.tokenize(out["choices"][0]["text"].encode(), add_bos=False, special=True)
    return written, (gate.checks if gate else {})


@pytest.mark.parametrize("question,schema", CASES, ids=["card", "decision-auto", "decision-required"])
def test_the_gate_writes_what_the_full_grammar_test_writes(llm, question, schema):
    full, _ = _write(llm, question, schema, gated=False)
    gated, checks = _write(llm, question, schema, gated=True)
    assert gated == full
    assert checks["best"] > 0  # the cheap test decided most tokens


def test_the_card_takes_every_path_of_the_gate(llm):
    """The card's short strings and enum make the model's best token wrong at times: the gate
    then tests the next best, or the whole vocabulary."""
    _, checks = _write(llm, *CASES[0], gated=True)
    assert checks["best"] > 0 and checks["few"] + checks["all"] > 0


def test_a_grammar_llama_cpp_cannot_parse_is_refused(llm):
    from llama_cpp import LlamaGrammar

    from flowcall.providers.grammar_gate import GreedyGrammar

    with pytest.raises(ValueError, match="could not parse the grammar"):
        GreedyGrammar(llm, LlamaGrammar.from_string("root ::= (("))


def test_bounds_too_long_for_a_grammar_are_left_to_the_schema_check():
    """Real tool docs say `"maxLength": 5000` (Stripe); a hostile server may say 10**9. llama.cpp
    spells a bound as that many nested rules, so such bounds go before the grammar is built."""
    from flowcall.providers.local import GRAMMAR_MAX_REPEAT, grammar_schema

    hostile = {"type": "object", "properties": {
        "note": {"type": "string", "maxLength": 10**9, "minLength": 1, "description": "maxLength 10"},
        "tags": {"type": "array", "maxItems": 5000, "minItems": 10**6, "items": {"type": "string", "maxLength": 40}},
        "kind": {"type": "string", "enum": ["maxLength", "x"], "default": {"maxLength": 9}},
        "odd": {"type": "string", "maxLength": "many"}}}
    safe = grammar_schema(hostile)
    assert safe["properties"]["note"] == {"type": "string", "minLength": 1, "description": "maxLength 10"}
    assert safe["properties"]["tags"] == {"type": "array", "items": {"type": "string", "maxLength": 40}}
    assert safe["properties"]["kind"] == hostile["properties"]["kind"]  # values are values, not schemas
    assert safe["properties"]["odd"] == {"type": "string"}
    assert GRAMMAR_MAX_REPEAT == 256 and hostile["properties"]["note"]["maxLength"] == 10**9  # the original is kept


@pytest.mark.model
def test_a_real_world_schema_with_a_long_bound_gets_a_grammar(model_path):
    """Stripe's customer id `"maxLength": 5000` made llama.cpp refuse the grammar, and every
    schema-way decision on such a tool failed (7 of 168 real-world items)."""
    from flowcall.messages import Message, ModelRequest, ResponseFormat
    from flowcall.providers.local import LocalProvider

    schema = {"type": "object", "properties": {"customer": {"type": "string", "maxLength": 5000}},
              "required": ["customer"]}
    turn = LocalProvider.shared().complete(ModelRequest(
        messages=[Message(role="user", content="The customer is cus_123. Reply with the JSON.")],
        response_format=ResponseFormat(name="c", json_schema=schema), max_tokens=40))
    assert "customer" in json.loads(turn.content)
