"""Dataset files: the item format, every bad line reported with its line and field, JSONL and
CSV read back exactly as they were written (hypothesis), the CSV formula escape undone exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowcall.core.datasets import (
    FIELDS,
    DatasetError,
    DatasetItem,
    ExpectedCall,
    ItemTool,
    content_hash,
    escape_formula,
    parse_csv,
    parse_dataset,
    read_dataset,
    to_csv,
    to_jsonl,
    unescape_formula,
)
from flowcall.core.errors import ConfigError

GOOD = {
    "id": "w1",
    "question": "明天成都会下雨吗?",
    "expect_calls": [{"name": "weather/v1/get_weather", "arguments": {"location": "成都"}}],
    "answer_contains": "雨",
    "max_latency_s": 20,
}


def _problems(text: str, fmt: str = "jsonl") -> list[str]:
    with pytest.raises(DatasetError) as caught:
        parse_dataset(text.encode(), fmt, "t")
    return [str(p) for p in caught.value.problems]


def test_a_good_item_keeps_every_field_and_dumps_only_what_was_given():
    item = DatasetItem.model_validate(GOOD)
    assert item.expect_calls == [ExpectedCall(name="weather/v1/get_weather", arguments={"location": "成都"})]
    assert item.max_latency_s == 20.0 and item.ordered is False and item.key() == "w1"
    assert item.dump() == {**GOOD, "max_latency_s": 20.0}
    assert DatasetItem(question="q?").key() == "q?"


def test_every_bad_line_is_reported_with_its_line_and_field_and_nothing_is_returned():
    lines = [
        json.dumps(GOOD, ensure_ascii=False),
        '{"question": "   "}',
        '{"questoin": "typo"}',
        "[1, 2]",
        "{not json",
        "",
        '{"question": "q", "answer_regex": "(unclosed"}',
        '{"question": "q", "answer_schema": {"type": "nope"}}',
        '{"question": "q", "expect_calls": [{"name": "f"}], "expect_no_call": true}',
        '{"question": "q", "ordered": true}',
        '{"question": "q", "expect_calls": [{"arguments": {}}]}',
        '{"question": "q", "expect_calls": [{"name": "f", "arguments": {"x": {"any_of": []}}}]}',
        '{"question": "q", "expect_calls": [{"name": "f", "arguments": {"x": {"any_of": [1], "other": 2}}}]}',
        '{"question": "q", "max_latency_s": -1}',
        '{"question": "q", "answer_equals": NaN}',
        '{"question": "q", "tools": [{"name": "bad name!"}]}',
    ]
    found = _problems("\n".join(lines))
    expected = [
        ("line 2, field question", "blank"),
        ("line 3, field question", "Field required"),
        ("line 3, field questoin", "unknown field"),
        ("line 4", "JSON object, not list"),
        ("line 5", "not valid JSON"),
        ("line 7, field answer_regex", "not a valid regular expression"),
        ("line 8, field answer_schema", "not a valid JSON Schema"),
        ("line 9, field expect_no_call", "cannot expect calls"),
        ("line 10, field ordered", "applies to expect_calls"),
        ("line 11, field expect_calls.0.name", "Field required"),
        ("line 12, field expect_calls.0.arguments", "non-empty list"),
        ("line 13, field expect_calls.0.arguments", "may only have"),
        ("line 14, field max_latency_s", "greater than 0"),
        ("line 15", "NaN is not a JSON value"),
        ("line 16, field tools.0.name", "pattern"),
    ]
    assert len(found) == len(expected), found
    for problem, (where, words) in zip(found, expected):
        assert problem.startswith(where + ":") and words in problem, (problem, where, words)


def test_the_error_message_lists_the_problems_and_says_nothing_was_stored():
    with pytest.raises(ConfigError) as caught:
        parse_dataset(b'{"question": "ok"}\n{"nope": 1}\n', "jsonl", "data.jsonl")
    message = str(caught.value)
    assert message.startswith("data.jsonl cannot be imported (2 problems; nothing was stored):")
    assert (
        "line 2, field question: Field required" in message and "line 2, field nope: unknown field" in message
    )


def test_only_the_first_fifty_problems_are_listed_then_a_count():
    text = "\n".join('{"question": ""}' for _ in range(60))
    with pytest.raises(DatasetError) as caught:
        parse_dataset(text.encode(), "jsonl", "t")
    assert len(caught.value.problems) == 60 and "... and 10 more" in str(caught.value)
    assert str(caught.value).count("field question") == 50


def test_an_empty_file_and_an_unknown_suffix_are_refused(tmp_path: Path):
    assert _problems("\n\n") == ["the file has no items"]
    odd = tmp_path / "items.txt"
    odd.write_text('{"question": "q"}')
    with pytest.raises(ConfigError, match="neither .jsonl nor .csv"):
        read_dataset(odd)
    with pytest.raises(ConfigError, match="does not exist"):
        read_dataset(tmp_path / "missing.jsonl")


def test_csv_reads_text_cells_as_text_json_cells_as_json_and_flags_as_booleans():
    text = (
        "question,expect_calls,ordered,answer_equals,max_latency_s,answer_regex\n"
        '"Where, exactly?","[{""name"": ""f"", ""arguments"": {""a"": 1}}, {""name"": ""g""}]",'
        "true,Paris,2.5,^P\n"
        "two,,,42,,\n"
        '"multi\nline question",,,"""quoted""",,\n'
    )
    items, problems = parse_csv(text)
    assert problems == []
    assert items[0].question == "Where, exactly?" and items[0].ordered is True
    assert [c.name for c in items[0].expect_calls] == ["f", "g"] and items[0].expect_calls[0].arguments == {
        "a": 1
    }
    assert (
        items[0].answer_equals == "Paris" and items[0].max_latency_s == 2.5 and items[0].answer_regex == "^P"
    )
    assert items[1].answer_equals == 42 and items[1].expect_calls is None
    assert items[2].question == "multi\nline question" and items[2].answer_equals == "quoted"


def test_csv_problems_name_the_line_where_the_row_starts_and_the_column():
    text = (
        "question,expect_calls,answer_schema\n"
        '"a question\nover two lines",[{bad json,\n'
        "ok,,\n"
        "only one cell\n"
        ',,"{""type"": ""object""}"\n'
    )
    problems = [str(p) for p in parse_csv(text)[1]]
    assert (
        problems[0].startswith("line 2, field expect_calls: not valid JSON")
        and "holds JSON text" in problems[0]
    )
    assert problems[1] == "line 5: has 1 cells; the header has 3"
    assert problems[2].startswith("line 6, field question: Field required")
    assert len(problems) == 3


def test_csv_headers_must_name_known_fields_once_and_include_question():
    problems = [str(p) for p in parse_csv("question,answer,question\nq,a,q\n")[1]]
    assert "line 1, field answer: unknown column" in problems[0]
    assert "line 1, field question: this column appears twice" in problems
    assert [str(p) for p in parse_csv("id\nx\n")[1]] == [
        "line 1, field question: the header has no question column"
    ]


def test_a_utf8_bom_and_crlf_line_ends_are_fine():
    data = b'\xef\xbb\xbf{"question": "q1"}\r\n{"question": "q2"}\r\n'
    assert [i.question for i in parse_dataset(data, "jsonl")] == ["q1", "q2"]
    data = b"\xef\xbb\xbfquestion,answer_contains\r\nq1,x\r\n"
    assert [(i.question, i.answer_contains) for i in parse_dataset(data, "csv")] == [("q1", "x")]


# --- export, and reading an export back -------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30).filter(
    lambda s: s.strip()
)
_json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(_text.filter(lambda k: k != "any_of"), inner, max_size=3)
    ),
    max_leaves=8,
)
_calls = st.lists(
    st.builds(
        ExpectedCall,
        name=_text,
        arguments=st.dictionaries(
            _text,
            _json_value
            | st.builds(
                lambda v, o: {"any_of": v, "optional": o},
                st.lists(_json_value, min_size=1, max_size=3),
                st.booleans(),
            ),
            max_size=3,
        ),
    ),
    min_size=1,
    max_size=3,
)


@st.composite
def items(draw) -> DatasetItem:
    calls = draw(st.none() | _calls)
    return DatasetItem(
        id=draw(st.none() | _text),
        question=draw(_text),
        expect_calls=calls,
        ordered=draw(st.booleans()) if calls else False,
        expect_no_call=draw(st.booleans()) if not calls else False,
        answer_schema=draw(st.none() | st.just({"type": "object", "required": ["a"]})),
        answer_contains=draw(st.none() | _text),
        answer_regex=draw(st.none() | st.sampled_from(["^a", "[0-9]+", r"\d"])),
        answer_equals=draw(_json_value),
        max_latency_s=draw(st.none() | st.floats(0.001, 1e6)),
        tools=draw(st.none() | st.just([ItemTool(name="t_1", description="=cmd|' /C calc'!A0")])),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(items(), min_size=1, max_size=5))
def test_jsonl_and_csv_exports_read_back_as_the_same_items(dataset):
    for fmt, text in (("jsonl", to_jsonl(dataset)), ("csv", to_csv(dataset))):
        back = parse_dataset(text.encode(), fmt, fmt)
        assert [i.dump() for i in back] == [i.dump() for i in dataset], fmt
        assert content_hash(back) == content_hash(dataset)


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12))
def test_the_formula_escape_is_undone_exactly_and_no_escaped_cell_starts_like_a_formula(cell):
    escaped = escape_formula(cell)
    assert unescape_formula(escaped) == cell
    assert not escaped.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_a_csv_export_has_every_field_as_a_column_and_escapes_formula_cells():
    item = DatasetItem(
        question='=HYPERLINK("http://evil.example", "click")', answer_contains="@SUM(A1)", answer_equals=-3
    )
    rows = to_csv([item]).splitlines()
    assert rows[0] == ",".join(FIELDS)
    assert "'=HYPERLINK" in rows[1] and "'@SUM(A1)" in rows[1] and "'-3" in rows[1]
    assert parse_dataset(to_csv([item]).encode(), "csv")[0] == item


def test_content_hash_depends_on_content_and_order():
    a, b = DatasetItem(question="a"), DatasetItem(question="b")
    assert content_hash([a, b]) == content_hash([DatasetItem(question="a"), DatasetItem(question="b")])
    assert content_hash([a, b]) != content_hash([b, a])
    assert content_hash([a]) != content_hash([DatasetItem(question="a", max_latency_s=1)])
