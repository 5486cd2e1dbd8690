"""OpenAI-compatible provider: conversions against recorded payloads, then the real SDK over
real HTTP against a fake server (retries, error mapping, no key in the record)."""

from __future__ import annotations

import json
import socket

import pytest

from flowcall.core.errors import ConfigError, ErrorCode, ProviderError
from flowcall.core.messages import Message, ModelRequest, ResponseFormat
from flowcall.providers.base import Capabilities
from flowcall.providers.openai_compat import (
    DASHSCOPE_COMPATIBLE_BASE_URL,
    OpenAICompatibleProvider,
    build_request,
    compatible_provider,
    dashscope_compatible_provider,
    openai_provider,
    parse_response,
)

KEY = "sk-test-SECRET-0123456789"

WEATHER_TOOLS_WIRE = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_traffic",
            "description": "Travel time between two places.",
            "parameters": {
                "type": "object",
                "properties": {"origin": {"type": "string"}, "destination": {"type": "string"}},
                "required": ["origin", "destination"],
            },
        },
    },
]


# ---------------------------------------------------------------- neutral -> wire


def test_request_with_tools_and_history(weather_request: ModelRequest) -> None:
    assert build_request(weather_request, "gpt-4o-mini") == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You plan commutes. Use the tools."},
            {"role": "user", "content": "Do I need an umbrella for my commute in Hangzhou today?"},
            {
                "role": "assistant",
                "content": "",  # not null: llama.cpp's server rejects null
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Hangzhou"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"weather": "light rain"}'},
        ],
        "tools": WEATHER_TOOLS_WIRE,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "temperature": 0.0,
        "seed": 42,
        "max_tokens": 512,
    }


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("get_traffic", {"type": "function", "function": {"name": "get_traffic"}}),
    ],
)
def test_tool_choice(weather_request: ModelRequest, choice: str, wire: object) -> None:
    request = weather_request.model_copy(update={"tool_choice": choice, "parallel_tool_calls": False})
    built = build_request(request, "m")
    assert built["tool_choice"] == wire
    assert built["parallel_tool_calls"] is False


def test_no_tools_means_no_tool_fields_and_structured_output() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "advice": {"type": "string"}},
        "required": ["city", "advice"],
        "additionalProperties": False,
    }
    request = ModelRequest(
        messages=[Message(role="user", content="Make the card.")],
        tool_choice="required",
        response_format=ResponseFormat(name="commute_card", json_schema=schema),
        seed=None,
        max_tokens=None,
        temperature=0.2,
    )
    assert build_request(request, "gpt-4o-mini") == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Make the card."}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "commute_card", "schema": schema, "strict": True},
        },
        "temperature": 0.2,
    }


# ---------------------------------------------------------------- wire -> neutral


def test_parallel_tool_calls(recorded) -> None:
    turn = parse_response(recorded("openai_parallel_tool_calls"))
    assert turn.content is None
    assert turn.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_Xq3pV8dN2mLw7KfR1tYb5GcZ", "get_weather", {"city": "Hangzhou", "unit": "celsius"}),
        ("call_J6hT0sWe9uAa4PzQ8vMn2LkD", "get_traffic", {"origin": "Xixi", "destination": "Binjiang"}),
    ]
    assert turn.tool_calls[0].raw_arguments == '{"city": "Hangzhou", "unit": "celsius"}'
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (142, 54)
    assert turn.request_id == "chatcmpl-BvT8Yq2kLr4WJdZ6nE1pXo9aHc3Fm"
    assert turn.wire_response == recorded("openai_parallel_tool_calls")


def test_plain_content(recorded) -> None:
    turn = parse_response(recorded("openai_plain_content"))
    assert turn.content.startswith("Light rain in Hangzhou")
    assert turn.tool_calls == []
    assert turn.finish_reason == "stop"
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (231, 29)


def test_unparsable_arguments_are_kept_raw(recorded) -> None:
    turn = parse_response(recorded("openai_unparsable_arguments"))
    (call,) = turn.tool_calls
    assert call.name == "get_weather"
    assert call.arguments is None
    assert call.raw_arguments == '{"city": "Hangzhou", "unit": celsius'
    assert call.arguments_json() == call.raw_arguments  # what goes back to the model, unchanged
    assert turn.content is None  # "" beside a call carries nothing


def test_structured_output_reply(recorded) -> None:
    turn = parse_response(recorded("openai_structured_output"))
    assert turn.tool_calls == []
    assert json.loads(turn.content) == {
        "city": "Hangzhou",
        "weather": "light rain",
        "temperature_c": 18,
        "commute_minutes": 45,
        "advice": "Take an umbrella and leave early.",
    }


def test_arguments_that_are_not_an_object_count_as_unparsed() -> None:
    call = {"id": "c", "function": {"name": "f", "arguments": "[1, 2]"}}
    data = {"choices": [{"message": {"tool_calls": [call]}}]}
    (call,) = parse_response(data).tool_calls
    assert call.arguments is None and call.raw_arguments == "[1, 2]"


# ---------------------------------------------------------------- real SDK, real HTTP


def provider_for(server, **kwargs) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider("gpt-4o-mini", base_url=f"{server.base_url}/v1", api_key=KEY, **kwargs)


def test_429_then_200_is_retried_and_recorded(fake_server, recorded, weather_request) -> None:
    fake_server.answer(
        (429, recorded("openai_error_429"), {"x-request-id": "req_rate"}),
        (200, recorded("openai_parallel_tool_calls"), {"x-request-id": "req_ok_123"}),
    )
    turn = provider_for(fake_server).complete(weather_request)

    assert [c.name for c in turn.tool_calls] == ["get_weather", "get_traffic"]
    assert len(turn.retries) == 1
    retry = turn.retries[0]
    assert (retry["attempt"], retry["status"], retry["error_code"]) == (1, 429, "RATE_LIMITED")
    assert "Rate limit reached" in retry["message"]
    assert turn.request_id == "req_ok_123"
    assert turn.latency_ms > 0
    assert turn.wire_response == recorded("openai_parallel_tool_calls")

    # what was sent is exactly what was recorded, and the key went only into the header
    assert len(fake_server.requests) == 2
    sent = fake_server.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert {k: v for k, v in turn.wire_request.items() if k != "base_url"} == sent["body"]
    assert turn.wire_request["base_url"] == f"{fake_server.base_url}/v1"
    assert KEY not in json.dumps(turn.wire_request) + json.dumps(turn.wire_response)


def test_500_then_200_is_retried(fake_server, recorded, weather_request) -> None:
    fake_server.answer(
        (500, {"error": {"message": "The server had an error.", "type": "server_error"}}),
        (200, recorded("openai_plain_content")),
    )
    turn = provider_for(fake_server).complete(weather_request)
    assert turn.content.startswith("Light rain")
    assert [(r["status"], r["error_code"]) for r in turn.retries] == [(500, "PROVIDER_ERROR")]
    assert turn.request_id == "chatcmpl-BvT9Dk1oR7sXqWm3Lf8ZyN2uPa6Ej"  # no x-request-id: the response id


def test_400_is_not_retried_and_says_what_to_check(fake_server, recorded, weather_request) -> None:
    fake_server.answer((400, recorded("openai_error_400"), {"x-request-id": "req_bad"}))
    with pytest.raises(ProviderError) as caught:
        provider_for(fake_server).complete(weather_request)
    error = caught.value
    assert len(fake_server.requests) == 1
    assert error.transient is False
    assert (error.code, error.status, error.request_id) == (ErrorCode.PROVIDER_ERROR, 400, "req_bad")
    assert "The model `gpt-4o-mimi` does not exist" in error.message
    assert "model name 'gpt-4o-mini'" in error.message and "base URL" in error.message
    assert error.details["retries"] == []
    assert KEY not in json.dumps(error.details["wire_request"])


def test_persistent_429_gives_up(fake_server, recorded, weather_request, monkeypatch) -> None:
    monkeypatch.setenv("FLOWCALL_PROVIDER_ATTEMPTS", "3")
    fake_server.answer((429, recorded("openai_error_429")))
    with pytest.raises(ProviderError) as caught:
        provider_for(fake_server).complete(weather_request)
    assert caught.value.code == ErrorCode.RATE_LIMITED and caught.value.transient
    assert len(fake_server.requests) == 3
    assert [r["attempt"] for r in caught.value.details["retries"]] == [1, 2]


def test_out_of_quota_429_is_not_retried(fake_server, weather_request) -> None:
    quota = {
        "error": {
            "message": "You exceeded your current quota.",
            "type": "insufficient_quota",
            "code": "insufficient_quota",
        }
    }
    fake_server.answer((429, quota))
    with pytest.raises(ProviderError) as caught:
        provider_for(fake_server).complete(weather_request)
    assert (caught.value.code, caught.value.transient) == (ErrorCode.RATE_LIMITED, False)
    assert "billing" in caught.value.message
    assert len(fake_server.requests) == 1


def test_unreachable_server_is_transient(weather_request, monkeypatch) -> None:
    monkeypatch.setenv("FLOWCALL_PROVIDER_ATTEMPTS", "2")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = OpenAICompatibleProvider("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, timeout_s=5)
    with pytest.raises(ProviderError) as caught:
        provider.complete(weather_request)
    assert caught.value.transient
    assert "could not reach" in caught.value.message
    assert len(caught.value.details["retries"]) == 1


# ---------------------------------------------------------------- factories


def test_openai_provider_needs_a_key(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="export OPENAI_API_KEY"):
        openai_provider("gpt-4o-mini")


def test_openai_provider_reads_env(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.example:8080/v1")
    provider = openai_provider("gpt-4o-mini")
    assert (provider.name, provider.base_url) == ("openai", "http://proxy.example:8080/v1")
    assert provider.client.max_retries == 0
    assert provider.capabilities.tool_choice_modes == ["auto", "required", "none", "named"]


def test_dashscope_compatible_provider(monkeypatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="export DASHSCOPE_API_KEY"):
        dashscope_compatible_provider("qwen-plus")
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.delenv("DASHSCOPE_BASE_URL", raising=False)
    assert dashscope_compatible_provider("qwen-plus").base_url == DASHSCOPE_COMPATIBLE_BASE_URL
    monkeypatch.setenv("DASHSCOPE_BASE_URL", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1")
    assert dashscope_compatible_provider("qwen-plus").base_url.startswith("https://dashscope-intl.")


def test_compatible_provider_needs_no_key(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    weak = Capabilities(native_tools=True, tool_choice_modes=["auto"])
    provider = compatible_provider("qwen2.5-coder", "http://127.0.0.1:8080/v1", capabilities=weak)
    assert provider.client.api_key == "not-needed"
    assert provider.capabilities == weak
    assert provider.name == "openai-compatible"


# ---------------------------------------------------------------- where the key goes


def test_compatible_key_goes_only_to_the_configured_base_url(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:8080/v1")
    same = compatible_provider("m", "HTTP://127.0.0.1:8080/v1/")
    assert same.client.api_key == KEY and same.base_url == "http://127.0.0.1:8080/v1"
    assert same.no_key_reason is None
    other = compatible_provider("m", "http://127.0.0.1:9090/v1")
    assert other.client.api_key == "not-needed" and other.base_url == "http://127.0.0.1:9090/v1"
    assert "OPENAI_COMPATIBLE_BASE_URL" in other.no_key_reason
    unset = compatible_provider("m")  # no base_url in the flow: the configured one
    assert unset.client.api_key == KEY and unset.base_url == "http://127.0.0.1:8080/v1"


def test_compatible_provider_needs_some_base_url(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_COMPATIBLE_BASE_URL"):
        compatible_provider("m", None)


def test_401_without_the_key_says_why(fake_server, weather_request, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:1/v1")
    fake_server.answer(
        (401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
    )
    with pytest.raises(ProviderError) as caught:
        compatible_provider("m", f"{fake_server.base_url}/v1").complete(weather_request)
    assert fake_server.requests[0]["headers"]["authorization"] == "Bearer not-needed"
    assert (
        "No API key was sent" in caught.value.message and "OPENAI_COMPATIBLE_BASE_URL" in caught.value.message
    )
    assert KEY not in caught.value.message


def test_recorded_base_url_has_no_credentials(fake_server, recorded, weather_request) -> None:
    fake_server.answer((200, recorded("openai_plain_content")))
    url = fake_server.base_url.replace("http://", "http://alice:s3cret-pw@") + "/v1?api-key=k3y&region=eu"
    turn = OpenAICompatibleProvider("m", base_url=url, api_key=KEY).complete(weather_request)
    recorded_url = turn.wire_request["base_url"]
    assert recorded_url.startswith(f"{fake_server.base_url}/v1") and recorded_url.endswith(
        "?api-key=***&region=eu"
    )
    assert "s3cret-pw" not in json.dumps(turn.wire_request) and "k3y" not in json.dumps(turn.wire_request)


def test_redact_url() -> None:
    from flowcall.providers.base import redact_url

    assert redact_url("https://user:pw@Host:8443/v1/") == "https://Host:8443/v1/"
    assert redact_url("https://h/v1?token=abc&x=1") == "https://h/v1?token=***&x=1"
    assert redact_url("https://h/v1") == "https://h/v1" and redact_url(None) is None


def test_userinfo_spelling_of_the_configured_host_gets_no_key(monkeypatch) -> None:
    # looks like the configured server, goes to another one: the host is what follows the @
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:8080/v1")
    provider = compatible_provider("m", "http://127.0.0.1:8080@127.0.0.1:9090/v1")
    assert provider.client.api_key == "not-needed" and provider.base_url == "http://127.0.0.1:9090/v1"


def test_one_wire_builder_serves_both_formats_and_only_dashscope_names_the_tool():
    from flowcall.core.messages import Message, ModelRequest
    from flowcall.providers import dashscope_native, openai_compat

    request = ModelRequest(
        messages=[
            Message(role="user", content="q"),
            Message(role="tool", tool_call_id="c1", name="get_weather", content="{}"),
        ]
    )
    openai_tool = openai_compat.build_request(request, "m")["messages"][1]
    dashscope_tool = dashscope_native.build_request(request, "qwen-plus")["messages"][1]
    assert openai_tool == {"role": "tool", "tool_call_id": "c1", "content": "{}"}
    assert dashscope_tool == {**openai_tool, "name": "get_weather"}
