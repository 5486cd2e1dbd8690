"""Hosted models' text as it is written (issue 49, point 3): while someone watches, the
OpenAI-compatible and DashScope providers stream, pass each piece of text on, and record the
same turn as an unstreamed call. The real SDKs over real HTTP against the fake server, which
streams Server-Sent Events as the servers do, and breaks off when told to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowcall.core import progress
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import ModelRequest, ModelTurn
from flowcall.providers.dashscope_native import DashScopeProvider
from flowcall.providers.openai_compat import OpenAICompatibleProvider
from flowcall.providers.streamed import completion_from_chunks, dashscope_from_chunks
from flowcall.testing.fake_server import completion_chunks, openai_events
from tests.providers.conftest import Streamed

KEY = "sk-stream-SECRET-123"


class Watcher:
    """What a watcher hears: ("started", kind), ("text", piece), ("ended",)."""

    def __init__(self) -> None:
        self.heard: list[tuple] = []

    def started(self, kind: str, label: str) -> None:
        self.heard.append(("started", kind))

    def text(self, piece: str) -> None:
        self.heard.append(("text", piece))

    def ended(self) -> None:
        self.heard.append(("ended",))

    def pieces(self) -> list[str]:
        return [h[1] for h in self.heard if h[0] == "text"]


def watched(provider: Any, request: ModelRequest) -> tuple[ModelTurn, Watcher]:
    watcher = Watcher()
    with progress.watching(watcher), progress.step("polish", "the model"):
        turn = provider.complete(request)
    return turn, watcher


def same_turn(streamed: ModelTurn, quiet: ModelTurn) -> None:
    """What a step records of a turn, but for the wire payloads, is the same either way."""
    fields = ("content", "tool_calls", "finish_reason", "usage", "request_id", "parse_errors")
    assert streamed.model_dump(include=set(fields)) == quiet.model_dump(include=set(fields))


def openai_provider(server: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider("gpt-4o-mini", base_url=f"{server.base_url}/v1", api_key=KEY)


# ---------------------------------------------------------------- OpenAI-compatible


@pytest.mark.parametrize(
    "fixture", ["openai_plain_content", "openai_parallel_tool_calls", "openai_structured_output"]
)
def test_a_watched_call_streams_its_text_and_records_the_same_turn(
    fake_server, recorded, weather_request, fixture
) -> None:
    completion = recorded(fixture)
    chunks = completion_chunks(completion)
    fake_server.answer((200, completion), (200, Streamed(openai_events(chunks))))
    quiet = openai_provider(fake_server).complete(weather_request)
    turn, watcher = watched(openai_provider(fake_server), weather_request)

    same_turn(turn, quiet)
    content = completion["choices"][0]["message"].get("content") or ""
    assert "".join(watcher.pieces()) == content  # the text, in order; no call's arguments
    if content:
        assert len(watcher.pieces()) > 3
    calls = completion["choices"][0]["message"].get("tool_calls") or []
    assert len(chunks) > len(calls) + 5  # arguments came in pieces, and were put back together
    assert [c.raw_arguments for c in turn.tool_calls] == [c["function"]["arguments"] for c in calls]
    assert watcher.heard[0] == ("started", "polish") and watcher.heard[-1] == ("ended",)

    unstreamed, streamed = (r["body"] for r in fake_server.requests)
    assert "stream" not in unstreamed
    assert streamed == {**unstreamed, "stream": True, "stream_options": {"include_usage": True}}
    assert {k: v for k, v in turn.wire_request.items() if k != "base_url"} == streamed
    assert turn.wire_response["object"] == "chat.completion"
    assert turn.wire_response["choices"][0]["message"]["content"] == completion["choices"][0]["message"].get(
        "content"
    )
    assert turn.wire_response["usage"] == completion["usage"]
    assert KEY not in json.dumps(turn.wire_request) + json.dumps(turn.wire_response)


def test_a_stream_that_breaks_off_is_tried_again_and_its_text_dropped(fake_server, recorded, weather_request):
    events = openai_events(completion_chunks(recorded("openai_plain_content")))
    fake_server.answer((200, Streamed(events, drop_after=4)), (200, Streamed(events)))
    turn, watcher = watched(openai_provider(fake_server), weather_request)

    assert turn.content == recorded("openai_plain_content")["choices"][0]["message"]["content"]
    (retry,) = turn.retries
    assert "stopped in the middle of its answer, after 4 chunks" in retry["message"]
    assert "connection broke off" in retry["message"] and retry["error_code"] == "PROVIDER_ERROR"
    # the watcher heard 3 pieces, then the step start again, then the whole text
    restart = watcher.heard.index(("started", "polish"), 1)
    assert [h[0] for h in watcher.heard[1:restart]] == ["text"] * 3
    assert "".join(h[1] for h in watcher.heard[restart + 1 : -1]) == turn.content


def test_a_stream_that_keeps_breaking_off_is_a_clear_provider_error(
    fake_server, recorded, weather_request, monkeypatch
):
    monkeypatch.setenv("FLOWCALL_PROVIDER_ATTEMPTS", "2")
    events = openai_events(completion_chunks(recorded("openai_plain_content")))
    fake_server.answer((200, Streamed(events, drop_after=3)))
    with pytest.raises(ProviderError) as caught:
        watched(openai_provider(fake_server), weather_request)
    error = caught.value
    assert error.transient and error.code == ErrorCode.PROVIDER_ERROR
    assert error.message.startswith(
        f"openai-compatible at {fake_server.base_url}/v1 stopped in the middle of its answer, after 3 chunks"
    )
    assert "the connection broke off" in error.message
    assert len(fake_server.requests) == 2 and len(error.details["retries"]) == 1
    assert error.details["wire_request"]["stream"] is True


def test_an_error_sent_in_the_stream_says_what_the_server_said(fake_server, recorded, weather_request):
    chunks = completion_chunks(recorded("openai_plain_content"))
    broken = openai_events(chunks[:3], done=False) + [
        'data: {"error": {"message": "The server is overloaded."}}\n\n'
    ]
    fake_server.answer((200, Streamed(broken)), (200, Streamed(openai_events(chunks))))
    turn, _ = watched(openai_provider(fake_server), weather_request)
    assert "it sent an error: The server is overloaded." in turn.retries[0]["message"]


def test_a_stream_that_ends_before_the_model_finished_is_tried_again(fake_server, recorded, weather_request):
    chunks = completion_chunks(recorded("openai_plain_content"))
    fake_server.answer((200, Streamed(openai_events(chunks[:-2]))), (200, Streamed(openai_events(chunks))))
    turn, _ = watched(openai_provider(fake_server), weather_request)
    assert "ended before the model finished" in turn.retries[0]["message"]
    assert turn.finish_reason == "stop"


def test_a_server_that_refuses_stream_options_is_asked_without(fake_server, recorded, weather_request):
    refused = {
        "error": {"message": "Unrecognized request argument supplied: stream_options", "type": "invalid"}
    }
    chunks = completion_chunks(recorded("openai_plain_content"), usage=False)
    fake_server.answer((400, refused), (200, Streamed(openai_events(chunks))))
    provider = openai_provider(fake_server)
    turn, watcher = watched(provider, weather_request)

    assert turn.content and "".join(watcher.pieces()) == turn.content
    assert "stream_options" in fake_server.requests[0]["body"]
    assert "stream_options" not in fake_server.requests[1]["body"]
    assert "stream_options" not in turn.wire_request and turn.wire_request["stream"] is True
    assert turn.retries == [] and turn.usage.input_tokens == 0  # no usage without it
    watched(provider, weather_request)  # the provider remembers: not asked again
    assert "stream_options" not in fake_server.requests[2]["body"]


def test_a_request_refused_for_another_reason_keeps_its_own_error(fake_server, recorded, weather_request):
    fake_server.answer((400, recorded("openai_error_400")))
    provider = openai_provider(fake_server)
    with pytest.raises(ProviderError) as caught:
        watched(provider, weather_request)
    assert caught.value.status == 400 and "does not exist" in caught.value.message
    assert [("stream_options" in r["body"]) for r in fake_server.requests] == [True, False]
    assert "stream_options" in caught.value.details["wire_request"] and provider.stream_options


def test_a_server_that_does_not_stream_is_asked_again_unstreamed(fake_server, recorded, weather_request):
    fake_server.answer((200, recorded("openai_plain_content")))  # JSON, even to a streamed request
    turn, watcher = watched(openai_provider(fake_server), weather_request)
    assert turn.content.startswith("Light rain") and watcher.pieces() == []
    assert [r["body"].get("stream") for r in fake_server.requests] == [True, None]
    assert "stream" not in turn.wire_request


def test_chunks_without_an_index_or_with_repeated_names_are_put_together() -> None:
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": '{"x"'}}]}),
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": ": 1}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    ]
    message = completion_from_chunks(chunks)["choices"][0]["message"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]] == [
        ("a", "f", '{"x": 1}'),
        ("b", "g", "{}"),
    ]


# ---------------------------------------------------------------- DashScope, native


def dashscope_chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A DashScope response body as its incremental stream sends it (result_format "message"):
    the text a word a chunk, calls' arguments in pieces, finish_reason "null" until the last,
    the usage so far in every chunk."""
    choice = body["output"]["choices"][0]
    message = choice["message"]
    usage = body["usage"]

    def chunk(delta: dict, finish: str = "null") -> dict:
        return {
            "output": {"choices": [{"message": {"role": "assistant", **delta}, "finish_reason": finish}]},
            "usage": usage,
            "request_id": body["request_id"],
        }

    openai_like = {"choices": [{"message": message, "finish_reason": None}]}
    deltas = [c["choices"][0]["delta"] for c in completion_chunks(openai_like, usage=False)[1:-1]]
    return [chunk({"content": "", **d}) for d in deltas] + [chunk({"content": ""}, choice["finish_reason"])]


def dashscope_events(chunks: list[dict[str, Any]]) -> list[str]:
    return [
        f"id:{n}\nevent:result\n:HTTP_STATUS/200\ndata:{json.dumps(c, ensure_ascii=False)}\n\n"
        for n, c in enumerate(chunks, 1)
    ]


PLAIN_DASHSCOPE = {
    "output": {
        "choices": [
            {
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "杭州今天小雨,通勤请带伞。Take an umbrella."},
            }
        ]
    },
    "usage": {"input_tokens": 120, "output_tokens": 18, "total_tokens": 138},
    "request_id": "5a1e2f3d-0000-9b1a-a7e2-5d0c6f4b8e13",
}


def dashscope_provider(server: Any) -> DashScopeProvider:
    return DashScopeProvider("qwen-plus", api_key=KEY, base_url=f"{server.base_url}/api/v1", timeout_s=5)


@pytest.mark.parametrize("body", ["tool_calls", "plain"])
def test_dashscope_streams_through_its_sdk_and_records_the_same_turn(
    fake_server, recorded, weather_request, body
):
    body = recorded("dashscope_tool_calls")["body"] if body == "tool_calls" else PLAIN_DASHSCOPE
    chunks = dashscope_chunks(body)
    fake_server.answer((200, body), (200, Streamed(dashscope_events(chunks))))
    quiet = dashscope_provider(fake_server).complete(weather_request)
    turn, watcher = watched(dashscope_provider(fake_server), weather_request)

    same_turn(turn, quiet)
    assert "".join(watcher.pieces()) == (body["output"]["choices"][0]["message"]["content"] or "")
    unstreamed, streamed = (r for r in fake_server.requests)
    assert streamed["headers"]["accept"] == "text/event-stream"
    assert streamed["body"]["parameters"]["incremental_output"] is True
    assert turn.wire_request["stream"] is True and turn.wire_request["incremental_output"] is True
    assert streamed["body"]["input"] == unstreamed["body"]["input"]
    assert KEY not in json.dumps(turn.wire_request) + json.dumps(turn.wire_response)


def test_dashscope_chunks_are_put_together_as_one_response(recorded) -> None:
    """The assembly alone, on the chunk shapes DashScope sends: "null" finish reasons, the
    usage so far in each chunk, a call's id only in its first delta."""
    body = recorded("dashscope_tool_calls")["body"]
    data = dashscope_from_chunks([{**c, "status_code": 200} for c in dashscope_chunks(body)])
    (choice,) = data["output"]["choices"]
    assert choice["finish_reason"] == "tool_calls"
    calls = body["output"]["choices"][0]["message"]["tool_calls"]
    assert len(dashscope_chunks(body)) > len(calls) + 5  # the arguments came in pieces
    assert choice["message"]["tool_calls"] == [{k: v for k, v in c.items() if k != "index"} for c in calls]
    assert data["usage"] == body["usage"] and data["request_id"] == body["request_id"]


def test_dashscope_stream_that_breaks_off_is_tried_again(fake_server, weather_request):
    events = dashscope_events(dashscope_chunks(PLAIN_DASHSCOPE))
    fake_server.answer((200, Streamed(events, drop_after=3)), (200, Streamed(events)))
    turn, watcher = watched(dashscope_provider(fake_server), weather_request)
    assert turn.content == PLAIN_DASHSCOPE["output"]["choices"][0]["message"]["content"]
    assert "DashScope stopped in the middle of its answer, after 3 chunks" in turn.retries[0]["message"]
    assert watcher.heard.count(("started", "polish")) == 2


def test_dashscope_error_in_the_stream_is_mapped(fake_server, weather_request, monkeypatch):
    monkeypatch.setenv("FLOWCALL_PROVIDER_ATTEMPTS", "1")
    error = {
        "code": "InvalidParameter",
        "message": "Range of input length should be [1, 30000]",
        "request_id": "r",
    }
    events = dashscope_events(dashscope_chunks(PLAIN_DASHSCOPE)[:2])
    events.append(f"id:3\nevent:error\nstatus:400\ndata:{json.dumps(error)}\n\n")
    fake_server.answer((200, Streamed(events)))
    with pytest.raises(ProviderError) as caught:
        watched(dashscope_provider(fake_server), weather_request)
    assert caught.value.message.startswith("DashScope stopped in the middle of its answer, after 2 chunks")
    assert "InvalidParameter" in caught.value.message and not caught.value.transient
