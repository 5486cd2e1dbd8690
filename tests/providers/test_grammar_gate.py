"""The grammar gate (checking the model's best tokens, not the whole vocabulary) must write
exactly what llama.cpp's full grammar test writes, token for token, on the real model."""

from __future__ import annotations

import json

import pytest

from flowcall.calling.schema import decision_schema
from flowcall.core.messages import ToolSpec

pytestmark = pytest.mark.model

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city on a date.",
    parameters={
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "date": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"]},
        },
        "required": ["location"],
    },
)
TIME = ToolSpec(
    name="get_time",
    description="The time in a time zone.",
    parameters={"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
)
# short strings: the grammar must close them where the model would go on (the gate's rare path)
CARD = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 6},
        "rain": {"type": "boolean"},
        "high": {"type": "number"},
        "advice": {"type": "string", "maxLength": 12},
        "level": {"type": "string", "enum": ["low", "mid", "high"]},
    },
    "required": ["city", "rain", "high", "advice", "level"],
}

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
        out = llm.create_completion(
            prompt=tokens,
            max_tokens=70,
            temperature=0.0,
            repeat_penalty=1.0,
            grammar=None if gate else grammar,
            logits_processor=[gate] if gate else None,
        )
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
    from flowcall.providers.grammar_schema import GRAMMAR_MAX_REPEAT, grammar_schema

    hostile = {
        "type": "object",
        "properties": {
            "note": {"type": "string", "maxLength": 10**9, "minLength": 1, "description": "maxLength 10"},
            "tags": {
                "type": "array",
                "maxItems": 5000,
                "minItems": 10**6,
                "items": {"type": "string", "maxLength": 40},
            },
            "kind": {"type": "string", "enum": ["maxLength", "x"], "default": {"maxLength": 9}},
            "odd": {"type": "string", "maxLength": "many"},
        },
    }
    safe = grammar_schema(hostile)
    assert safe["properties"]["note"] == {"type": "string", "minLength": 1, "description": "maxLength 10"}
    assert safe["properties"]["tags"] == {"type": "array", "items": {"type": "string", "maxLength": 40}}
    assert safe["properties"]["kind"] == hostile["properties"]["kind"]  # values are values, not schemas
    assert safe["properties"]["odd"] == {"type": "string"}
    assert (
        GRAMMAR_MAX_REPEAT == 256 and hostile["properties"]["note"]["maxLength"] == 10**9
    )  # the original is kept


@pytest.mark.model
def test_a_real_world_schema_with_a_long_bound_gets_a_grammar(model_path):
    """Stripe's customer id `"maxLength": 5000` made llama.cpp refuse the grammar, and every
    schema-way decision on such a tool failed (7 of 168 real-world items)."""
    from flowcall.core.messages import Message, ModelRequest, ResponseFormat
    from flowcall.providers.local import LocalProvider

    schema = {
        "type": "object",
        "properties": {"customer": {"type": "string", "maxLength": 5000}},
        "required": ["customer"],
    }
    turn = LocalProvider.shared().complete(
        ModelRequest(
            messages=[Message(role="user", content="The customer is cus_123. Reply with the JSON.")],
            response_format=ResponseFormat(name="c", json_schema=schema),
            max_tokens=40,
        )
    )
    assert "customer" in json.loads(turn.content)


def test_regex_escapes_become_classes_the_converter_reads_right():
    """llama-cpp-python copied `\\d` into a string literal: `^1\\d{10}$` became the literal
    `1\\d1\\d…` (llama.cpp could not parse it) and `^\\d{4}-\\d{2}$` a grammar forcing wrong text."""
    from flowcall.providers.grammar_schema import grammar_pattern

    assert grammar_pattern(r"^1\d{10}$") == "^1[0-9]{10}$"
    assert grammar_pattern(r"^\d{4}-\d{2}-\d{2}$") == "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
    assert grammar_pattern(r"^[\d-]+\.\w+$") == "^[0-9-]+[.][A-Za-z0-9_]+$"
    assert grammar_pattern("^[a-z0-9-]+$") == "^[a-z0-9-]+$"  # nothing to change
    for refused in (r"^\s+$", r"\bword", r"^\u4e00$", r"[\s]", "trailing\\", r"\^", r"a\]"):
        assert grammar_pattern(refused) is None, refused


def test_a_hostile_pattern_or_a_parameter_named_like_a_keyword_builds_a_small_grammar():
    """A pattern bound is spelt as that many rules too: `[0-9]{10**7}` built a 40 MB grammar
    (10**9: gigabytes). And a parameter may be called "pattern" or "maxLength"."""
    from llama_cpp import LlamaGrammar

    from flowcall.providers.grammar_schema import grammar_schema

    hostile = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[0-9]{10000000}$"},
            "range": {"type": "string", "pattern": "^a{1,9999999}$"},
            "digits": {"type": "string", "pattern": "^a{" + "9" * 5000 + "}$"},  # int() refuses it: no crash
            "pattern": {"type": "string", "pattern": r"^\d{3}$"},
            "maxLength": {"type": "integer"},
            "odd": {"type": "string", "pattern": {"not": "a string"}},
        },
        "required": ["code", "pattern", "maxLength"],
    }
    safe = grammar_schema(hostile)
    assert (
        safe["properties"]["code"]
        == safe["properties"]["range"]
        == safe["properties"]["digits"]
        == {"type": "string"}
    )
    assert safe["properties"]["pattern"] == {"type": "string", "pattern": "^[0-9]{3}$"}
    assert safe["properties"]["maxLength"] == {"type": "integer"} and safe["properties"]["odd"] == {
        "type": "string"
    }
    assert len(LlamaGrammar.from_json_schema(json.dumps(safe), verbose=False)._grammar) < 5_000


def test_a_grammar_llama_cpp_refuses_fails_the_step_by_name(monkeypatch):
    """The refusal is a ProviderError naming what to do (it was a TypeError: the arguments of
    ProviderError were given the wrong way round). Refusals cannot be caused on demand any more,
    so the gate is made to refuse."""
    import flowcall.providers.local as local
    from flowcall.core.errors import ErrorCode, ProviderError
    from flowcall.core.messages import Message, ModelRequest, ResponseFormat

    def refuse(*_args, **_kwargs):
        raise ValueError("llama.cpp could not parse the grammar built from the JSON schema")

    monkeypatch.setattr(local, "GreedyGrammar", refuse)
    monkeypatch.setenv("FLOWCALL_DECODING", "plain")  # the grammar of the plain way
    provider = local.LocalProvider.__new__(local.LocalProvider)  # no model is needed to build the request
    from types import SimpleNamespace

    from flowcall.providers.chat_prompt import ChatPrompt

    provider.llm = None
    provider.prompts = SimpleNamespace(render=lambda request: ChatPrompt((("prompt", False),)))
    with pytest.raises(ProviderError) as caught:
        provider.complete(
            ModelRequest(
                messages=[Message(role="user", content="hi")],
                response_format=ResponseFormat(name="c", json_schema={"type": "object"}),
            )
        )
    assert (
        caught.value.code == ErrorCode.PROVIDER_ERROR
        and "too complex for llama.cpp's grammar" in caught.value.message
    )


@pytest.mark.model
def test_a_phone_number_pattern_holds_the_models_answer(model_path):
    """大众点评's reservation API: `"pattern": "^1\\d{10}$"`. Every schema-way decision on that
    tool failed before (3 of 160 real-world items)."""
    import re

    from flowcall.core.messages import Message, ModelRequest, ResponseFormat
    from flowcall.providers.local import LocalProvider

    schema = {
        "type": "object",
        "properties": {
            "phone": {"type": "string", "pattern": r"^1\d{10}$"},
            "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        },
        "required": ["phone", "date"],
    }
    turn = LocalProvider.shared().complete(
        ModelRequest(
            messages=[
                Message(role="user", content="订座，手机 13800138000，日期 2026-12-24。Reply with the JSON.")
            ],
            response_format=ResponseFormat(name="c", json_schema=schema),
            max_tokens=60,
        )
    )
    answer = json.loads(turn.content)
    assert re.fullmatch(r"1\d{10}", answer["phone"]) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", answer["date"]), (
        answer
    )
