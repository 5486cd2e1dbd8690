"""The local provider renders with the GGUF's own chat template: check tool calls and tool
results come out the way Qwen was trained to read them."""

from __future__ import annotations

import json

import pytest

from flowcall.core.errors import ConfigError, ProviderError
from flowcall.core.messages import Message, ModelRequest, ResponseFormat, ToolCall, ToolSpec

pytestmark = pytest.mark.model

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)


@pytest.fixture(scope="module")
def provider(model_path):
    from flowcall.providers.local import LocalProvider

    return LocalProvider.shared()


def test_tool_calls_and_results_render_as_qwen_expects(provider):
    calls = [
        ToolCall(id="c1", name="get_weather", arguments={"location": "成都"}),
        ToolCall(id="c2", name="get_weather", arguments={"location": "北京"}),
    ]
    request = ModelRequest(
        tools=[WEATHER],
        messages=[
            Message(role="user", content="成都和北京天气?"),
            Message(role="assistant", tool_calls=calls),
            Message(role="tool", tool_call_id="c1", name="get_weather", content='{"weather": "小雨"}'),
            Message(role="tool", tool_call_id="c2", name="get_weather", content='{"weather": "晴"}'),
        ],
    )
    prompt = provider.render(request)
    assert '"name": "get_weather"' in prompt and "<tools>" in prompt
    # arguments are an object, not a JSON string encoded twice
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"location": "成都"}}\n</tool_call>' in prompt
    # consecutive tool results share one user turn, each in its own <tool_response>
    assert (
        '<|im_start|>user\n<tool_response>\n{"weather": '
        '"小雨"}\n</tool_response>\n<tool_response>\n{"weather": "晴"}\n</tool_response><|im_end|>' in prompt
    )
    assert prompt.endswith("<|im_start|>assistant\n")


def test_no_tools_when_choice_is_none(provider):
    prompt = provider.render(
        ModelRequest(tools=[WEATHER], tool_choice="none", messages=[Message(role="user", content="hi")])
    )
    assert "<tools>" not in prompt


def test_real_call_and_grammar_constrained_json(provider):
    turn = provider.complete(
        ModelRequest(
            tools=[WEATHER], messages=[Message(role="user", content="成都现在天气怎么样?")], max_tokens=80
        )
    )
    assert turn.rendered_prompt and turn.usage.input_tokens > 50 and turn.latency_ms > 0
    timings = turn.wire_response["timings"]  # where the time went, per call
    assert (
        timings["prompt_tokens_evaluated"] > 0
        and timings["prompt_eval_ms"] > 0
        and timings["generated_tokens"] > 0
    )
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "rain": {"type": "boolean"}},
        "required": ["city", "rain"],
    }
    turn = provider.complete(
        ModelRequest(
            messages=[Message(role="user", content="成都明天下雨。Give city and rain as JSON.")],
            response_format=ResponseFormat(json_schema=schema),
            max_tokens=60,
        )
    )
    value = json.loads(turn.content)
    assert set(value) >= {"city", "rain"} and isinstance(value["rain"], bool)


def test_a_generation_past_the_time_limit_is_stopped_with_an_error(provider, monkeypatch):
    monkeypatch.setenv("FLOWCALL_LOCAL_TIMEOUT_S", "0.3")
    request = ModelRequest(
        messages=[Message(role="user", content="Write a long story about a cat.")], max_tokens=400
    )
    with pytest.raises(ProviderError, match="longer than 0.3 s and was stopped"):
        provider.complete(request)
    monkeypatch.setenv("FLOWCALL_LOCAL_TIMEOUT_S", "120")
    assert provider.complete(request.model_copy(update={"max_tokens": 8})).content  # the model works on


def test_a_bad_time_limit_is_named(monkeypatch):
    from flowcall.core import config

    monkeypatch.setenv("FLOWCALL_LOCAL_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="FLOWCALL_LOCAL_TIMEOUT_S must be a number of seconds"):
        config.local_timeout_s()
