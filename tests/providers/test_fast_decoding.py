"""Fast decoding on the real embedded model: forced spans and drafts save forward passes, the
answer holds its schema, drafts change nothing the model writes, and a schema llguidance
cannot hold is written the plain way, said in the step's record."""

from __future__ import annotations

import json

import jsonschema
import pytest

from flowcall.calling.schema import decision_schema
from flowcall.core.messages import Message, ModelRequest, ResponseFormat, ToolSpec

pytestmark = pytest.mark.model

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city on a date.",
    parameters={
        "type": "object",
        "properties": {"location": {"type": "string"}, "date": {"type": "string"}},
        "required": ["location"],
    },
)
CARD = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "date": {"type": "string"},
        "rain": {"type": "boolean"},
        "temp_high": {"type": "number"},
        "temp_low": {"type": "number"},
        "advice": {"type": "string"},
    },
    "required": ["city", "date", "rain", "temp_high", "temp_low", "advice"],
}
RESULT = (
    '{"city": "成都市", "date": "2026-11-30", "dayweather": "小雨", "daytemp": "14", '
    '"nighttemp": "9", "daywind": "北"}'
)
QUESTIONS = [
    (f"Tool result: {RESULT}\nWrite tomorrow's commute weather card for 成都市 as JSON.", CARD),
    ("明天成都和北京的天气怎么样?", decision_schema([WEATHER], "auto", True)),
    ("What is 17 times 23? Answer in one sentence.", None),
]


NEAR_TIE = 1.0  # logits: reading tokens in a batch moved them by up to 0.62 here (docs/research/speed.md)


@pytest.fixture(scope="module")
def provider(model_path):
    from flowcall.providers.local import LocalProvider

    return LocalProvider.shared()


def _request(question: str, schema) -> ModelRequest:
    return ModelRequest(
        messages=[Message(role="user", content=question)],
        response_format=ResponseFormat(name="answer", json_schema=schema) if schema else None,
        temperature=0.0,
        max_tokens=200,
    )


def _decode(provider, question: str, schema, *, draft: bool):
    """The answer's tokens, written by fast decoding with or without drafts, and the margin of
    each token the model picked (its logit over the next allowed one)."""
    from flowcall.providers.fast_decoding import FastDecoder
    from flowcall.providers.json_constraint import JsonConstraint

    with provider._lock:
        tokens = provider.prefix.tokens(provider.render(_request(question, schema)))
        provider.prefix.prepare(tokens)
        constraint = JsonConstraint(provider.llm, schema) if schema else None
        decoder = FastDecoder(provider.llm, constraint=constraint, draft=draft)
        decoder.margins = {}
        decoded = decoder.decode(tokens, 200, lambda _ids, _logits: False)
    return decoded, decoder.margins


@pytest.mark.parametrize("question,schema", QUESTIONS, ids=["card", "decision", "free-text"])
def test_drafts_change_what_is_written_only_at_a_near_tie(provider, question, schema):
    plain, margins = _decode(provider, question, schema, draft=False)
    drafted, _ = _decode(provider, question, schema, draft=True)
    assert drafted.counts.drafted >= drafted.counts.accepted and plain.counts.drafted == 0
    differ = next((i for i, (a, b) in enumerate(zip(plain.tokens, drafted.tokens)) if a != b), None)
    if differ is None:
        assert plain.tokens == drafted.tokens
    else:  # batching moved the logits: only a pick the model nearly did not make can turn
        assert margins[differ] < NEAR_TIE, (differ, margins[differ])


def _ask(provider, question: str, schema, monkeypatch, way: str = "fast"):
    monkeypatch.setenv("FLOWCALL_DECODING", way)
    return provider.complete(_request(question, schema))


def test_the_card_is_written_in_fewer_passes_than_tokens_and_holds_its_schema(provider, monkeypatch):
    turn = _ask(provider, *QUESTIONS[0], monkeypatch)
    card = json.loads(turn.content)
    jsonschema.validate(card, CARD)
    assert card["city"].startswith("成都")
    record = turn.wire_response["decoding"]
    assert record["way"] == "fast" and record["schema"] is True
    # every key, quote, colon and comma of the card is forced: appended, not picked
    assert record["forced"] >= 20 and record["picked"] + record["forced"] == turn.usage.output_tokens
    assert record["passes"] <= record["picked"] + 1


def test_plain_and_fast_write_the_card_s_keys_in_the_same_order(provider, monkeypatch):
    """Both hold a model to the schema the same way: its required properties first, in their
    order, and no key the schema does not name."""
    fast = json.loads(_ask(provider, *QUESTIONS[0], monkeypatch).content)
    plain_turn = _ask(provider, *QUESTIONS[0], monkeypatch, way="plain")
    plain = json.loads(plain_turn.content)
    assert list(fast) == list(plain) == CARD["required"]
    assert "decoding" not in plain_turn.wire_response and plain_turn.wire_request["decoding"] == "plain"


def test_an_unnamed_key_is_refused_and_required_keys_come_first(provider):
    from flowcall.providers.json_constraint import closed

    schema = {
        "type": "object",
        "properties": {"note": {"type": "string"}, "id": {"type": "integer"}},
        "required": ["id"],
    }
    held = closed(schema)
    assert list(held["properties"]) == ["id", "note"] and held["additionalProperties"] is False
    assert closed({**schema, "additionalProperties": True})["additionalProperties"] is True
    assert schema == {
        "type": "object",
        "properties": {"note": {"type": "string"}, "id": {"type": "integer"}},
        "required": ["id"],
    }


def test_a_schema_llguidance_cannot_hold_is_written_the_plain_way_and_the_record_says_why(
    provider, monkeypatch
):
    """A server's schema that no string can meet (minLength above maxLength): llguidance
    refuses it, llama.cpp's grammar takes it; the answer is then checked against the schema."""
    odd = {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 2}},
        "required": ["a"],
    }
    turn = _ask(provider, "Write a JSON object with a.", odd, monkeypatch)
    record = turn.wire_response["decoding"]
    assert record["way"] == "plain" and "llama.cpp's grammar" in record["why"]
    assert "Unsatisfiable schema" in record["why"]
    assert turn.wire_request["decoding"] == "plain"


@pytest.mark.parametrize("way", ["fast", "plain"])
def test_a_pattern_with_a_group_the_grammar_cannot_read_is_left_to_the_schema_check(
    provider, monkeypatch, way
):
    """`(?:…)` and lookarounds made llama.cpp's converter stop with an AssertionError."""
    schema = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": "^(?:[A-Z]{2})-(?=[0-9])[0-9]+$"}},
        "required": ["code"],
    }
    turn = _ask(provider, "Write a JSON object with a code like AB-12.", schema, monkeypatch, way=way)
    assert isinstance(json.loads(turn.content)["code"], str)
