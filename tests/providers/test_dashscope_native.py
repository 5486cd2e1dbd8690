"""DashScope native provider: conversions against recorded payloads, the provider with an
injected `call` returning the SDK's own response objects, and once the real SDK over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from dashscope.api_entities.dashscope_response import DashScopeAPIResponse, GenerationResponse
from dashscope.common.utils import _handle_error_message

from flowcall.core.errors import ConfigError, ErrorCode, ProviderError
from flowcall.core.messages import Message, ModelRequest, ResponseFormat
from flowcall.providers.dashscope_native import (
    DashScopeProvider,
    build_request,
    error_from_response,
    parse_response,
    response_to_dict,
)

KEY = "sk-dashscope-SECRET-42"
CARD_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "advice": {"type": "string"}},
    "required": ["city", "advice"],
}


def sdk_response(fixture: dict[str, Any]) -> GenerationResponse:
    """Build the response object the SDK itself returns for a recorded HTTP answer, the way
    dashscope's HttpRequest does (success body, or the error path for non-200)."""
    status, body = fixture["http_status"], fixture["body"]
    if status == 200:
        api = DashScopeAPIResponse(
            status_code=200,
            request_id=body["request_id"],
            output=body["output"],
            usage=body.get("usage"),
            headers={},
        )
    else:
        api = _handle_error_message(dict(body), status, False, {})
    return GenerationResponse.from_api_response(api)


class ScriptedCall:
    """Stands in for dashscope.Generation.call: returns (or raises) the scripted items in order."""

    def __init__(self, *items: Any):
        self.items = list(items)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


# ---------------------------------------------------------------- neutral -> wire


def test_request_with_tools_and_history(weather_request: ModelRequest) -> None:
    wire = build_request(weather_request, "qwen-plus")
    assert wire["model"] == "qwen-plus"
    assert wire["result_format"] == "message"
    assert wire["messages"][2:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Hangzhou"}'},
                }
            ],
        },
        {
            "role": "tool",
            "content": '{"weather": "light rain"}',
            "tool_call_id": "call_1",
            "name": "get_weather",
        },
    ]
    assert [t["function"]["name"] for t in wire["tools"]] == ["get_weather", "get_traffic"]
    assert wire["tools"][0]["type"] == "function"
    assert wire["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assert (wire["tool_choice"], wire["parallel_tool_calls"]) == ("auto", True)
    assert (wire["temperature"], wire["seed"], wire["max_tokens"]) == (0.0, 42, 512)
    assert "response_format" not in wire


def test_named_tool_choice_and_no_tools(weather_request: ModelRequest) -> None:
    named = build_request(weather_request.model_copy(update={"tool_choice": "get_traffic"}), "qwen-plus")
    assert named["tool_choice"] == {"type": "function", "function": {"name": "get_traffic"}}
    bare = build_request(ModelRequest(messages=[Message(role="user", content="hi")]), "qwen-plus")
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & bare.keys()


def test_structured_output_modes() -> None:
    request = ModelRequest(
        messages=[Message(role="user", content="Make the card.")],
        response_format=ResponseFormat(name="commute_card", json_schema=CARD_SCHEMA),
    )
    schema_mode = build_request(request, "qwen-plus")
    assert schema_mode["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "commute_card", "schema": CARD_SCHEMA, "strict": True},
    }
    assert len(schema_mode["messages"]) == 1

    object_mode = build_request(request, "qwen-turbo", "json_object")
    assert object_mode["response_format"] == {"type": "json_object"}
    note = object_mode["messages"][-1]
    assert note["role"] == "system" and "JSON" in note["content"] and '"advice"' in note["content"]


# ---------------------------------------------------------------- wire -> neutral


def test_tool_calls_response(recorded) -> None:
    data = response_to_dict(sdk_response(recorded("dashscope_tool_calls")))
    assert data["status_code"] == 200 and "headers" not in data
    turn = parse_response(data)
    assert turn.content is None
    assert turn.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in turn.tool_calls] == [
        ("call_6596dafa2a6a46f7a217da", "get_weather", {"city": "杭州市", "unit": "celsius"}),
        ("call_2e1c4b7a9d0f43d8b6a5c1", "get_traffic", {"origin": "西溪", "destination": "滨江"}),
    ]
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (237, 52)
    assert turn.request_id == "7c8a3f2e-91d4-9b1a-a7e2-5d0c6f4b8e13"
    # the SDK object adds output.text/finish_reason = None; the choices are as the server sent them
    assert turn.wire_response["output"]["choices"] == data["output"]["choices"]
    assert data["output"]["choices"] == recorded("dashscope_tool_calls")["body"]["output"]["choices"]


def test_throttling_maps_to_transient_rate_limited(recorded) -> None:
    data = response_to_dict(sdk_response(recorded("dashscope_error_429_throttling")))
    error = error_from_response(data, model="qwen-plus")
    assert (error.code, error.transient, error.status) == (ErrorCode.RATE_LIMITED, True, 429)
    assert error.request_id == "b51d0e6a-3c2f-9e8d-a4b1-7f6e5d4c3b2a"
    assert "Throttling.RateQuota" in error.message


def test_throttling_code_alone_is_rate_limited() -> None:
    data = {"status_code": 400, "code": "Throttling.AllocationQuota", "message": "Allocated quota exceeded"}
    assert error_from_response(data, model="qwen-plus").code == ErrorCode.RATE_LIMITED


def test_invalid_parameter_is_permanent_and_clear(recorded) -> None:
    error = error_from_response(
        response_to_dict(sdk_response(recorded("dashscope_error_400_invalid_parameter"))), model="qwen-plus"
    )
    assert (error.code, error.transient, error.status) == (ErrorCode.PROVIDER_ERROR, False, 400)
    assert "InvalidParameter" in error.message and "The tool call is not supported" in error.message
    assert "model name 'qwen-plus'" in error.message


def test_server_error_is_transient() -> None:
    data = {"status_code": 503, "code": "ServiceUnavailable", "message": "busy"}
    error = error_from_response(data, model="m")
    assert (error.code, error.transient) == (ErrorCode.PROVIDER_ERROR, True)


# ---------------------------------------------------------------- provider with an injected call


def test_retry_after_429_is_recorded(recorded, weather_request) -> None:
    call = ScriptedCall(
        sdk_response(recorded("dashscope_error_429_throttling")),
        sdk_response(recorded("dashscope_tool_calls")),
    )
    turn = DashScopeProvider("qwen-plus", api_key=KEY, call=call).complete(weather_request)

    assert [c.name for c in turn.tool_calls] == ["get_weather", "get_traffic"]
    assert [(r["attempt"], r["status"], r["error_code"]) for r in turn.retries] == [(1, 429, "RATE_LIMITED")]
    assert turn.request_id == "7c8a3f2e-91d4-9b1a-a7e2-5d0c6f4b8e13"
    assert len(call.calls) == 2
    sent = call.calls[-1]
    assert sent["api_key"] == KEY and sent["result_format"] == "message" and sent["request_timeout"] == 60.0
    sent_wire = {k: v for k, v in turn.wire_request.items() if k != "base_url"}
    assert sent_wire == build_request(weather_request, "qwen-plus")
    assert turn.wire_request["base_url"].startswith("https://")
    assert KEY not in json.dumps(turn.wire_request) + json.dumps(turn.wire_response)


def test_400_is_not_retried(recorded, weather_request) -> None:
    call = ScriptedCall(sdk_response(recorded("dashscope_error_400_invalid_parameter")))
    with pytest.raises(ProviderError) as caught:
        DashScopeProvider("qwen-plus", api_key=KEY, call=call).complete(weather_request)
    assert len(call.calls) == 1
    assert caught.value.transient is False
    assert caught.value.request_id == "e3f2a1b0-c9d8-9e7f-b6a5-4c3d2e1f0a9b"
    assert caught.value.details["retries"] == []


def test_network_failure_is_transient(recorded, weather_request) -> None:
    call = ScriptedCall(
        requests.exceptions.ConnectionError("connection reset"),
        sdk_response(recorded("dashscope_tool_calls")),
    )
    turn = DashScopeProvider("qwen-plus", api_key=KEY, call=call).complete(weather_request)
    assert len(turn.tool_calls) == 2
    assert turn.retries[0]["status"] is None and "connection reset" in turn.retries[0]["message"]


def test_missing_key_is_a_clear_config_error(monkeypatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="export DASHSCOPE_API_KEY"):
        DashScopeProvider("qwen-plus")


# ---------------------------------------------------------------- the real SDK over HTTP


def test_real_sdk_over_http(fake_server, recorded, weather_request) -> None:
    """Proves the keyword arguments we pass are ones Generation.call really understands."""
    throttled, ok = recorded("dashscope_error_429_throttling"), recorded("dashscope_tool_calls")
    fake_server.answer((throttled["http_status"], throttled["body"]), (ok["http_status"], ok["body"]))
    base_url = f"{fake_server.base_url}/api/v1"
    provider = DashScopeProvider("qwen-plus", api_key=KEY, base_url=base_url, timeout_s=5)
    turn = provider.complete(weather_request)

    assert [c.name for c in turn.tool_calls] == ["get_weather", "get_traffic"]
    assert [r["status"] for r in turn.retries] == [429]
    assert turn.request_id == "7c8a3f2e-91d4-9b1a-a7e2-5d0c6f4b8e13"
    sent = fake_server.requests[-1]
    assert sent["path"] == "/api/v1/services/aigc/text-generation/generation"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert body["model"] == "qwen-plus"
    assert body["input"]["messages"] == build_request(weather_request, "qwen-plus")["messages"]
    params = body["parameters"]
    assert params["result_format"] == "message"
    assert params["tools"][0]["function"]["name"] == "get_weather"
    assert params["tool_choice"] == "auto" and params["parallel_tool_calls"] is True
    assert (params["seed"], params["max_tokens"], params["temperature"]) == (42, 512, 0.0)
    assert KEY not in json.dumps(turn.wire_request)
