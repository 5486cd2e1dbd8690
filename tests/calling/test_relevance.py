"""The relevance question the schema and router ways ask per tool before calling."""

from __future__ import annotations

from flowcall.calling.relevance import has_tool_results, last_user_text, margin, relevance_request
from flowcall.messages import Message, ToolSpec

WEATHER = ToolSpec(name="get_weather", description="Weather for a city.",
                   parameters={"type": "object", "properties": {"location": {"type": "string"}}})


def test_the_question_names_the_function_its_parameters_and_the_request():
    sent = relevance_request(WEATHER, "Will it rain in Paris?")
    assert sent.score_options == ["yes", "no"] and sent.max_tokens == 1
    assert sent.messages[1].content == ("Function: get_weather\nDescription: Weather for a city.\nParameters: location\n\n"
                                        "User request: Will it rain in Paris?\n\n"
                                        "Can this function handle the request? Answer yes or no.")


def test_last_user_text_tool_results_and_margin():
    messages = [Message(role="system", content="Be brief."), Message(role="user", content="hi"),
                Message(role="user", content="weather in Rome?")]
    assert last_user_text(messages) == "weather in Rome?" and not has_tool_results(messages)
    assert margin({"yes": -0.2, "no": -1.7}) == 1.5 and margin(None) == float("-inf")
