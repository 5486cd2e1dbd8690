"""Shared test helpers for providers: recorded payloads, a neutral request, a fake HTTP server
(which answers with JSON, or with a stream of Server-Sent Events that may break off)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from flowcall.core.messages import Message, ModelRequest, ToolCall, ToolSpec
from flowcall.testing.fake_server import send_events

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def recorded() -> Callable[[str], Any]:
    """Load a recorded wire payload from tests/providers/fixtures/<name>.json."""
    return lambda name: json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCALL_RETRY_INITIAL_S", "0.01")
    monkeypatch.setenv("FLOWCALL_PROVIDER_ATTEMPTS", "4")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def weather_request() -> ModelRequest:
    """A second-round decision request: the model already called one tool and got its result."""
    return ModelRequest(
        messages=[
            Message(role="system", content="You plan commutes. Use the tools."),
            Message(role="user", content="Do I need an umbrella for my commute in Hangzhou today?"),
            Message(
                role="assistant",
                content=None,
                tool_calls=[ToolCall(id="call_1", name="get_weather", arguments={"city": "Hangzhou"})],
            ),
            Message(
                role="tool", tool_call_id="call_1", name="get_weather", content='{"weather": "light rain"}'
            ),
        ],
        tools=[
            ToolSpec(
                name="get_weather",
                description="Current weather for a city.",
                parameters={
                    "type": "object",
                    "properties": {
                        "city": {"type": "string"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                    },
                    "required": ["city"],
                },
            ),
            ToolSpec(
                name="get_traffic",
                description="Travel time between two places.",
                parameters={
                    "type": "object",
                    "properties": {"origin": {"type": "string"}, "destination": {"type": "string"}},
                    "required": ["origin", "destination"],
                },
            ),
        ],
        tool_choice="auto",
        parallel_tool_calls=True,
        temperature=0.0,
        seed=42,
        max_tokens=512,
    )


@dataclass
class Streamed:
    """A scripted answer sent as a text/event-stream: each event's raw text, an HTTP chunk each;
    with `drop_after`, the connection is cut after that many events."""

    events: list[str]
    drop_after: int | None = None


@dataclass
class FakeServer:
    """Answers POSTs from a script of (status, json body, headers); the last entry repeats.
    Every request is kept (path, lower-cased headers, parsed body) so tests can check what was sent."""

    base_url: str
    script: list[tuple[int, Any, dict[str, str]]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, *responses: tuple[int, Any] | tuple[int, Any, dict[str, str]]) -> None:
        self.script = [(r[0], r[1], r[2] if len(r) > 2 else {}) for r in responses]  # type: ignore[misc]

    def next_response(self) -> tuple[int, Any, dict[str, str]]:
        return self.script.pop(0) if len(self.script) > 1 else self.script[0]


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    state: dict[str, FakeServer] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            server = state["server"]
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            sent_headers = {k.lower(): v for k, v in self.headers.items()}
            body = json.loads(raw or b"null")
            server.requests.append({"path": self.path, "headers": sent_headers, "body": body})
            status, answer, headers = server.next_response()
            if isinstance(answer, Streamed):
                send_events(self, answer.events, drop_after=answer.drop_after)
                return
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["server"] = FakeServer(base_url=f"http://127.0.0.1:{httpd.server_address[1]}")
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state["server"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
