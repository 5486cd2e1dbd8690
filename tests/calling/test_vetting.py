"""The host's review of a decision (calling/vetting.py) is pure: it says what to record and
what to ask again, and the caller makes the calls (issue 38, point 5)."""

from __future__ import annotations

from flowcall.calling.doc_values import UNMADE_NOTE
from flowcall.calling.vetting import review
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ToolCall, ToolSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a place.",
    parameters={
        "type": "object",
        "required": ["location"],
        "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}
        },
    },
)
TIME = ToolSpec(name="get_time", description="The time now.", parameters={"type": "object", "properties": {}})


def request(text: str) -> ModelRequest:
    return ModelRequest(messages=[Message(role="user", content=text)], tools=[WEATHER, TIME])


def calls(*cities: str) -> ModelTurn:
    return ModelTurn(
        tool_calls=[
            ToolCall(id=f"c{i}", name="get_weather", arguments={"location": city})
            for i, city in enumerate(cities)
        ]
    )


def test_a_sound_decision_stands_as_it_is():
    turn = calls("Chicago")
    reviewed = review(turn, request("weather in Chicago?"), budget=2)
    assert (
        reviewed.turn is turn and reviewed.warnings == [] and reviewed.retry is None and reviewed.spent == 0
    )


def test_the_docs_example_is_asked_for_again_once_with_a_note_that_is_not_the_users():
    asked = request("weather in Chicago?")
    reviewed = review(calls("San Francisco, CA"), asked, budget=1)
    assert reviewed.spent == 1 and [w.flagged[0].value for w in reviewed.warnings] == ["San Francisco, CA"]
    again = reviewed.retry.request
    assert again.tool_choice == "required" and [t.name for t in again.tools] == ["get_weather"]
    note = again.messages[-1]
    assert note.is_note and not note.from_user and "San Francisco, CA" in note.content
    fixed = reviewed.retry.then(calls("Chicago"))
    assert fixed.retry is None and fixed.turn.tool_calls[0].arguments == {"location": "Chicago"}


def test_with_no_budget_the_unsaid_required_value_is_not_made_and_the_model_answers_instead():
    asked = request("thanks, that's all")
    reviewed = review(calls("San Francisco, CA"), asked, budget=0)
    assert reviewed.spent == 0 and "the model answers instead" in reviewed.warnings[0].note
    answer_request = reviewed.retry.request
    assert answer_request.tool_choice == "none" and UNMADE_NOTE in answer_request.messages[0].content
    answered = reviewed.retry.then(ModelTurn(content="You're welcome."))
    assert answered.turn.content == "You're welcome." and answered.retry is None
    assert answered.turn.withheld and "San Francisco, CA" in answered.turn.withheld[0]


def test_a_retry_that_loses_the_sound_call_keeps_the_first_decisions_sound_call():
    asked = request("weather in Chicago?")
    first = calls("Chicago", "San Francisco, CA")
    reviewed = review(first, asked, budget=1)
    settled = reviewed.retry.then(calls("San Francisco, CA"))
    assert settled.retry is None and "first decision's other calls stand" in settled.warnings[0].note
    assert [c.arguments for c in settled.turn.tool_calls] == [{"location": "Chicago"}]
