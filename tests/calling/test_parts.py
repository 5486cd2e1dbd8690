"""A request with several needs: its parts, one call matching them to tools where no tool fits
the whole, and the gate's question confirming a tool that changes something
(calling/parts.py, schema.relevant_tools)."""

from __future__ import annotations

import pytest

from flowcall.calling.parts import MAX_PARTS, request_parts
from flowcall.calling.relevance import reading_from_notes
from flowcall.core.steps import MemorySink, StepKind
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry
from tests.calling.test_ways import LOOKUP, ONE_BY_ONE, REGISTRY, SCORING_CAPS, flow, more, scores, writes


@pytest.mark.parametrize(
    "text, parts",
    [
        (
            "What's the weather in Beijing today, and what time is it there?",
            ["What's the weather in Beijing today", "what time is it there"],
        ),
        ("成都天气怎么样?顺便告诉我现在几点", ["成都天气怎么样", "告诉我现在几点"]),
        ("查下杭州天气,再看看今天星期几", ["查下杭州天气", "看看今天星期几"]),
        (
            "weather in Shanghai + current time in New York",
            ["weather in Shanghai", "current time in New York"],
        ),
        (
            "Look up Kenji's email and then add a task: call him",
            ["Look up Kenji's email", "add a task: call him"],
        ),
    ],
)
def test_a_request_splits_at_its_punctuation_and_joining_words(text, parts):
    assert request_parts(text) == parts


@pytest.mark.parametrize(
    "text",
    [
        "Tell me a joke",
        "2+2 等于几",
        "Solve x^2 + 2x + 1 = 0 for x",
        "What is 3 + 4",
        "把这句话翻译成英文:明天北京会下雨",
        "Is 3.5 km far e.g. for a walk",
        "再见",
    ],
)
def test_one_ask_stays_whole(text):
    assert request_parts(text + "?") == [text]


def test_parts_are_capped():
    parts = request_parts("a1, b2, c3, d4, e5, f6")
    assert len(parts) == MAX_PARTS and parts[-1] == "d4 e5 f6"


QUESTION = "成都天气怎么样?顺便告诉我现在几点"
NO, YES = scores(-1.0, -0.5), scores(-0.1, -2.0)  # margins -0.5 and +1.9 against the bar 0.5


def run(script, question=QUESTION):
    provider = ScriptedProvider(script, capabilities=SCORING_CAPS, tuning=ONE_BY_ONE)
    return Engine(REGISTRY, lambda cfg: provider, MemorySink()).run(flow("schema"), question), provider


def test_where_no_tool_fits_the_whole_request_one_call_matches_its_parts_to_tools():
    script = [
        NO,
        NO,  # the whole request: neither tool passes the bar
        '{"1": "get_weather", "2": "get_time"}',  # one question for both parts
        writes("get_weather", {"location": "成都"}),  # each matched tool is owed a call: no check between
        writes("get_time", {}),
        more(-11.0, -0.01),
        '{"answer": "成都小雨,现在10点"}',
    ]
    result, provider = run(script)
    notes = [s.note or "" for s in result.steps if s.kind == StepKind.MODEL_CALL]
    assert [n.split(":")[0] for n in notes[:3]] == [
        "checked whether get_weather fits",
        "checked whether get_time fits",
        "matched the request's parts to tools",
    ]
    assert notes[2].startswith(
        "matched the request's parts to tools: part 1 (成都天气怎么样) get_weather; "
        "part 2 (告诉我现在几点) get_time"
    )
    match = provider.requests[2]
    assert "1. 成都天气怎么样\n2. 告诉我现在几点" in match.messages[-1].content
    assert match.response_format.json_schema["properties"]["2"] == {
        "enum": ["get_weather", "get_time", "none"]
    }
    assert [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL] == ["get_weather", "get_time"]
    # a replay reads the gate's findings from the steps' notes: each tool fits a part
    read = reading_from_notes(notes)
    assert read.parts == ["成都天气怎么样", "告诉我现在几点"] and sorted(read.fits) == [
        "get_time",
        "get_weather",
    ]
    assert result.final_answer == "成都小雨,现在10点" and result.outcome is None
    # the model calls of the round: the whole request's questions, one match, the calls and the
    # one check after the owed calls; then the answer
    assert len(notes) == 2 + 1 + 3 + 1
    assert notes[3:6] == [
        "call 1, for the part matched to get_weather",
        "call 2, for the part matched to get_time",
        "another call after call 2?",
    ]
    second = provider.requests[4]
    assert second.response_format.json_schema["properties"]["name"] == {"const": "get_time"}


def test_matched_part_by_part_every_call_is_held_to_the_matched_tools():
    script = [
        NO,
        NO,
        '{"1": "get_weather", "2": "none"}',  # only get_weather matches a part
        writes("get_weather", {"location": "成都"}),
        more(-3.0, -0.1),
        writes("get_weather", {"location": "重庆"}),
        more(-11.0, -0.01),
        '{"answer": "小雨"}',
    ]
    result, provider = run(script)
    second = next(
        r
        for r in provider.requests
        if r.assistant_prefix and r.assistant_prefix.endswith(", ") and r.response_format is not None
    )
    assert second.response_format.json_schema["properties"]["name"] == {"const": "get_weather"}


def test_a_match_that_cannot_be_read_matches_nothing():
    result, _ = run([NO, NO, "not json", '{"answer": "我只能查天气和时间。"}'])
    assert not [s for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert result.outcome == "answered_without_tools"


def test_a_request_of_one_part_is_asked_about_once():
    result, provider = run([NO, NO, '{"answer": "我只能查天气和时间。"}'], question="讲个笑话吧")
    scoring = [r for r in provider.requests if r.score_options == ["yes", "no"]]
    assert len(scoring) == 2 and not [s for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert result.outcome_reasons == ["no tool fits '讲个笑话吧'"]


def test_no_part_fitting_says_so_in_the_reason():
    result, _ = run([NO, NO, '{"1": "none", "2": "none"}', '{"answer": "我只能查天气和时间。"}'])
    assert result.outcome == "answered_without_tools"
    assert any("or any of its 2 parts" in r for r in result.outcome_reasons)


def get_forecast(city: str) -> dict:
    """Weather for a city."""
    return {"city": city, "weather": "小雨"}


def add_task(title: str) -> str:
    """Add a task to the to-do list."""
    return f"added {title}"


WITH_ACTION = ToolRegistry(
    [build_tool(get_forecast, "w/v1/get_forecast", annotations=LOOKUP), build_tool(add_task, "t/v1/add_task")]
)  # add_task changes something


def run_with_action(script, question):
    provider = ScriptedProvider(script, capabilities=SCORING_CAPS, tuning=ONE_BY_ONE)
    engine = Engine(WITH_ACTION, lambda cfg: provider, MemorySink())
    both = flow("schema").model_copy(update={"tools": ["w/v1/get_forecast", "t/v1/add_task"]})
    return engine.run(both, question), provider


def test_a_tool_that_changes_something_matched_to_a_part_must_pass_the_gate_on_that_part():
    question = "成都天气怎么样?顺便写首诗"
    script = [
        NO,
        NO,
        '{"1": "get_forecast", "2": "add_task"}',
        NO,  # add_task on part 2: no (one reading: the lower of two would need both)
        writes("get_forecast", {"city": "成都"}),
        more(-11.0, -0.01),
        '{"answer": "成都小雨"}',
    ]
    result, provider = run_with_action(script, question)
    notes = [s.note or "" for s in result.steps if s.kind == StepKind.MODEL_CALL]
    assert "part 2 (写首诗) add_task, to be checked" in notes[2]
    assert notes[3].startswith("checked whether add_task fits part 2 (写首诗): no")
    assert "User request: 写首诗" in provider.requests[3].messages[-1].content
    assert [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL] == ["get_forecast"]
    read = reading_from_notes(notes)
    assert read.fits == ["get_forecast"] and read.matched == {"成都天气怎么样": "get_forecast"}


def test_a_tool_that_changes_something_is_owed_a_call_once_its_part_says_yes():
    script = [
        NO,
        NO,
        '{"1": "add_task", "2": "get_forecast"}',
        YES,  # add_task on part 1: yes
        writes("add_task", {"title": "带伞"}),
        writes("get_forecast", {"city": "上海"}),
        more(-11.0, -0.01),
        '{"answer": "已添加;上海小雨"}',
    ]
    result, _ = run_with_action(script, "加个待办:带伞。另外上海天气怎么样")
    assert [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL] == ["add_task", "get_forecast"]
    read = reading_from_notes([s.note or "" for s in result.steps if s.kind == StepKind.MODEL_CALL])
    assert read.matched == {"加个待办:带伞": "add_task", "上海天气怎么样": "get_forecast"}


def test_a_tool_that_says_nothing_of_itself_matched_to_a_part_must_pass_the_gate_on_that_part():
    """A dataset's bare function (no read-only flag either way) is not taken to be harmless: the
    match names some tool for nearly every part, so its part's own question has a say."""
    from flowcall.calling.schema import relevant_tools
    from flowcall.core.messages import Message, ModelRequest, ToolSpec

    bare = ToolSpec(
        name="math_sum",
        description="Add numbers.",
        parameters={"type": "object", "properties": {"numbers": {"type": "array"}}},
    )
    assert bare.read_only is None
    provider = ScriptedProvider([NO, '{"1": "math_sum", "2": "math_sum"}', NO, NO], capabilities=SCORING_CAPS)

    def call(way, asked, interpret, label):
        turn = provider.complete(asked)
        return interpret(turn) if interpret else turn

    request = ModelRequest(
        messages=[Message(role="user", content="Solve x^2 + 2x + 1 = 0, and then plot it")], tools=[bare]
    )
    fitting, gate = relevant_tools(request, ONE_BY_ONE, call, "schema")
    assert fitting == [] and gate.matched == {}
    asked = [r.messages[-1].content for r in provider.requests if r.score_options == ["yes", "no"]]
    assert len(asked) == 3 and "User request: Solve x^2 + 2x + 1 = 0\n" in asked[1]
    assert "User request: plot it\n" in asked[2]
