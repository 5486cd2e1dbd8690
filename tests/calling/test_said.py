"""One notion of "the conversation says this value", in any language or script: a check built
on it never refuses what the user said."""

from __future__ import annotations

import pytest

from flowcall.calling.doc_values import doc_values
from flowcall.calling.grounding import ground_calls
from flowcall.calling.said import Said, with_numerals
from flowcall.core.messages import Message, ToolCall, ToolSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city, e.g. 北京 or San Francisco.",
    parameters={
        "type": "object",
        "required": ["location"],
        "properties": {
            "location": {"type": "string", "description": "City name, e.g. 北京"},
            "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
    },
)


def ask(question: str, system: str | None = None) -> list[Message]:
    return [
        *([Message(role="system", content=system)] if system else []),
        Message(role="user", content=question),
    ]


@pytest.mark.parametrize(
    "said, value",
    [
        ("What's the weather in Beijing today, and what time is it there?", "北京"),
        ("Is it raining in Shanghai?", "上海"),
        ("Weather for Chengdu please", "成都市"),
        ("How hot is Chongqing in July?", "重庆"),
        ("Xi'an tomorrow?", "西安"),
        ("北京今天天气怎么样", "Beijing"),
        ("上海未来几天天气", "Shanghai, China"),
        ("成都明天会下雨吗", "Chengdu"),
    ],
)
def test_a_name_in_the_other_script_is_said(said: str, value: str) -> None:
    assert Said(said).says(value)
    # ...also when the conversation mixes scripts, so the script alone cannot tell
    assert Said(f"你是天气助手。\n{said}").says(value)


@pytest.mark.parametrize(
    "said, value",
    [
        ("forecast for the next three days", 3),
        ("未来三天的天气", 3),
        ("我们两个人", 2),
        ("twenty-five degrees or more", 25),
        ("一百二十个", 120),
        ("set an alarm for half past six in the evening", "18:30"),
        ("晚上六点半", "18:30"),
    ],
)
def test_numbers_written_as_words_are_said(said: str, value) -> None:
    assert Said(said).says(value)


def test_what_nobody_said_is_still_not_said() -> None:
    said = Said("What's the weather in Beijing today?")
    assert not said.says("San Francisco") and not said.says(7)
    # in a script the conversation uses, the look-ups decide: 上海 is not Beijing's pinyin
    assert not Said("你好, what's the weather in Beijing today?").says("上海")
    assert not Said("成都明天会下雨吗").says("北京") and not Said("weather in Chengdu").says("Chongqing")


def test_a_name_in_a_script_the_conversation_never_uses_is_taken_as_a_translation() -> None:
    """東京 for "Tokyo" cannot be told from a copy by any look-up; refusing it would refuse the user."""
    assert Said("What's the weather in Tokyo?").says("東京") and Said("东京天气").says("Tokyo")


def test_an_enum_member_gets_no_benefit_of_the_other_script() -> None:
    assert not Said("北京天气").says("Fahrenheit", {"enum": ["Celsius", "Fahrenheit"]})


def test_doc_values_accepts_the_docs_example_when_the_user_said_it_in_another_script() -> None:
    """Issue 34: "北京" is the tool's own example, and the user said "Beijing": the user's value."""
    call = ToolCall(id="c1", name="get_weather", arguments={"location": "北京"})
    assert (
        doc_values([call], [WEATHER], ask("What's the weather in Beijing today, and what time is it there?"))
        == []
    )
    copied = ToolCall(id="c2", name="get_weather", arguments={"location": "北京"})
    assert [f.value for f in doc_values([copied], [WEATHER], ask("芝加哥今天天气怎么样?"))] == ["北京"]
    english = ToolCall(id="c3", name="get_weather", arguments={"location": "San Francisco"})
    assert [f.value for f in doc_values([english], [WEATHER], ask("What's the weather in Chicago?"))] == [
        "San Francisco"
    ]


def test_grounding_keeps_a_count_said_in_words() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments={"location": "Paris", "days": 3})
    assert (
        ground_calls([call], [WEATHER], ask("Paris weather for the next three days"))[0].arguments["days"]
        == 3
    )
    dropped = ground_calls([call], [WEATHER], ask("Paris weather"))[0]
    assert dropped.dropped_arguments == {"days": 3}


def test_with_numerals_leaves_text_it_cannot_read() -> None:
    assert with_numerals("no numbers here") == "no numbers here"
    assert "3" in with_numerals("three") and "2" in with_numerals("两个")


def test_an_enum_member_is_named_only_as_a_whole_word():
    """ "flowers" does not name the priority "low": an important reminder keeps "high"."""
    task = ToolSpec(
        name="add_task",
        parameters={
            "type": "object",
            "required": ["title"],
            "properties": {
                "title": {"type": "string"},
                "priority": {"type": "string", "enum": ["low", "medium", "high"]},
            },
        },
    )
    call = ToolCall(id="c", name="add_task", arguments={"title": "buy flowers", "priority": "high"})
    assert doc_values([call], [task], ask("remind me to buy flowers, it's important")) == []
    spoken_against = doc_values([call], [task], ask("buy flowers, low priority"))
    assert [f.why for f in spoken_against] == ["the request names 'low', not this"]
