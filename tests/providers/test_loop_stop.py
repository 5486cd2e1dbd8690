"""A local model caught in a loop is stopped early and keeps what it meant (repetition.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcall.core.messages import Message, ModelRequest, ResponseFormat
from flowcall.providers.repetition import COPIES, SPAN, LoopStop, find_loop, item_end


def _text(ids: list[int]) -> str:
    return " ".join(f"t{i}" for i in ids)


def test_a_repeated_block_is_a_loop_and_one_copy_is_kept():
    answer, block = list(range(100, 130)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
    loop = find_loop(answer + block * COPIES)
    assert loop is not None and loop.block == len(block) and loop.copies == COPIES
    assert (answer + block * COPIES)[: loop.keep] == answer + block


def test_a_short_unit_must_fill_the_span_before_it_counts():
    assert find_loop([7] * (SPAN - 1)) is None  # a run of digits or dashes in a value
    loop = find_loop([5, 6] + [7] * SPAN)
    assert loop is not None and loop.block == 1 and loop.keep == 3


def test_a_block_repeated_fewer_times_is_no_loop():
    block = list(range(1, 41))
    assert find_loop(block * (COPIES - 1)) is None
    assert find_loop(list(range(500))) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50_000), max_size=400, unique=True))
def test_text_that_never_repeats_is_never_stopped(ids):
    stop = LoopStop(0, "", _text)
    assert not any(stop(ids[: n + 1], None) for n in range(len(ids)))


def test_repeats_the_user_pasted_are_copied_not_stopped():
    block = [11, 12, 13, 14, 15, 16, 17, 18]
    written = [1, 2] + block * 10
    prompt_ids = [90, 91]
    pasted = LoopStop(len(prompt_ids), "user: " + _text(block * 12), _text)
    assert not pasted(prompt_ids + written, None)
    invented = LoopStop(len(prompt_ids), "user: " + _text(block), _text)
    assert invented(prompt_ids + written, None)
    assert invented.kept == _text([1, 2] + block)


def test_a_loop_of_blanks_is_stopped_even_though_the_prompt_has_blanks():
    stop = LoopStop(0, "a  b\n\n\n", lambda ids: "\n" * len(ids))
    assert stop([3] * SPAN, None) and stop.kept == "\n"


def test_the_cut_falls_after_a_whole_repeated_item():
    item = '{"type": "text", "text": {"content": "Lacinato kale, chopped"}}'
    text = '{"children": [' + ", ".join([item] * 3)
    start = text.index(item)  # the loop begins with the first copy
    cut = item_end(text, start, start + len(item) + 2)
    assert json.loads(text[:cut] + "]}") == {"children": [json.loads(item)]}
    assert item_end('{"a": "x, y, z, w', 6, 17) is None  # commas inside a string separate nothing


@pytest.mark.model
def test_the_embedded_model_is_stopped_in_a_loop_and_the_json_survives(model_path):
    from flowcall.providers.local import LocalProvider

    schema = {
        "type": "object",
        "properties": {"words": {"type": "array", "items": {"type": "string"}}},
        "required": ["words"],
        "additionalProperties": False,
    }
    request = ModelRequest(
        messages=[
            Message(
                role="user",
                content="Write the word 'tick' exactly 300 times, as a JSON list under \"words\".",
            )
        ],
        response_format=ResponseFormat(name="words", json_schema=schema),
        max_tokens=700,
        temperature=0.0,
    )
    turn = LocalProvider.shared().complete(request)
    assert turn.finish_reason == "loop", turn.content
    loop = turn.wire_response["loop"]
    assert loop["copies"] * loop["block_tokens"] >= SPAN and turn.usage.output_tokens < 300
    assert turn.wire_response["choices"][0]["text"].startswith(
        turn.content
    )  # the raw answer is kept as it was
    import json_repair

    assert json_repair.loads(turn.content) == {"words": ["tick"]}


def test_a_stopped_loop_shows_in_the_step_line():
    from flowcall.core.steps import Step, StepKind
    from flowcall.rendering import describe_step

    stopped = Step(
        run_id="r",
        seq=5,
        kind=StepKind.MODEL_CALL,
        name="local",
        calling_way="schema",
        tokens_in=1415,
        tokens_out=165,
        response={"loop": {"block_tokens": 6, "copies": 11}},
    )
    assert describe_step(stopped).endswith(
        "(stopped in a loop: a 6-token block written 11 times; kept the first copy)"
    )
    # a remote server's own "loop" key is only ever shown, folded to one short line
    odd = stopped.model_copy(update={"response": {"loop": {"block_tokens": "x\n" * 500, "copies": 1}}})
    assert len(describe_step(odd)) < 300 and "\n" not in describe_step(odd)
