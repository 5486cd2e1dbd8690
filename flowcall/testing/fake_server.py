"""A stand-in OpenAI-compatible chat server on 127.0.0.1 that answers after a fixed delay: the
model of the worker benchmark (benchmarks/workers.py) and of the worker kill test, shipped
beside the other test doubles (testing.py) so both use the same one.

It is a pure function of the request, like the schema-driven model: offered tools and no tool
result yet, it calls the first tool with arguments made from its schema (each string argument
is the question), after a `preamble` if it has one; asked for JSON against a schema, it
answers with a value made from the schema; otherwise with the last tool result it saw. Any
number of requests are served at once, each in its own thread, so N workers waiting on it
wait in parallel.

Asked to `stream`, it sends the same completion as Server-Sent Events, as OpenAI does
(completion_chunks): the text a word a chunk, each call's arguments in pieces, the usage last
when `stream_options.include_usage` asks for it; `piece_delay_s` apart, to watch it come.

    with FakeModelServer(delay_s=0.2) as server:
        os.environ["OPENAI_COMPATIBLE_BASE_URL"] = server.base_url
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flowcall.core.schema_example import example_for


def answer(body: dict[str, Any], preamble: str | None = None) -> dict[str, Any]:
    """The chat completion for a request body (no delay); `preamble`: text beside a tool call."""
    messages = body.get("messages") or []
    question = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
    results = [m.get("content") or "" for m in messages if m.get("role") == "tool"]
    tools = body.get("tools") or []
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if tools and not results and body.get("tool_choice") != "none":
        function = tools[0]["function"]
        schema = function.get("parameters") or {"type": "object"}
        arguments = example_for(schema)
        for name, sub in (schema.get("properties") or {}).items():
            if isinstance(sub, dict) and sub.get("type") == "string" and name in arguments:
                arguments[name] = question
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {
                    "name": function["name"],
                    "arguments": json.dumps(arguments, ensure_ascii=False),
                },
            }
        ]
        message["content"] = preamble
        finish = "tool_calls"
    elif schema := ((body.get("response_format") or {}).get("json_schema") or {}).get("schema"):
        message["content"] = json.dumps(example_for(schema), ensure_ascii=False)
        finish = "stop"
    else:
        message["content"] = f"answer: {results[-1]}" if results else f"answer to: {question}"
        finish = "stop"
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12},
    }


def completion_chunks(completion: dict[str, Any], *, usage: bool = True) -> list[dict[str, Any]]:
    """A chat completion as OpenAI streams it (`chat.completion.chunk`s): the role (with content
    null before calls), the content a word a chunk, each tool call's id and name with the first
    piece of its arguments and the rest 8 characters a chunk, the finish reason, and with
    `usage` a last chunk with the usage and no choice (`stream_options.include_usage`)."""
    head = {key: completion[key] for key in ("id", "created", "model") if key in completion}
    choice = completion["choices"][0]
    message = choice.get("message") or {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return {**head, "object": "chat.completion.chunk", "choices": choices}

    text = message.get("content") or ""
    words = re.findall(r"\s*\S+", text)
    words += [text[len("".join(words)) :]] if text != "".join(words) else []
    first = {"role": "assistant", "content": "" if text or not message.get("tool_calls") else None}
    chunks = [chunk(first)] + [chunk({"content": w}) for w in words]
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        pieces = [arguments[n : n + 8] for n in range(0, len(arguments), 8)] or [""]
        function = {"name": call["function"]["name"], "arguments": pieces[0]}
        chunks.append(
            chunk(
                {"tool_calls": [{"index": index, "id": call["id"], "type": "function", "function": function}]}
            )
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in pieces[1:]
        ]
    chunks.append(chunk({}, choice.get("finish_reason")))
    if usage and completion.get("usage"):
        chunks.append(
            {**head, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]}
        )
    return chunks


def openai_events(chunks: list[dict[str, Any]], done: bool = True) -> list[str]:
    """Chunks as the Server-Sent Events of a Chat Completions stream, ending with [DONE]."""
    events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks]
    return events + (["data: [DONE]\n\n"] if done else [])


def send_events(
    handler: BaseHTTPRequestHandler, events: list[str], *, drop_after: int | None = None, pause_s: float = 0.0
) -> None:
    """Answer with `events` as a text/event-stream, each its own HTTP/1.1 chunk, `pause_s`
    apart. With `drop_after`, the connection is cut after that many events, without the
    chunked body's end: a stream that breaks off."""
    handler.protocol_version = "HTTP/1.1"
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for n, event in enumerate(events):
        if drop_after is not None and n >= drop_after:
            break
        data = event.encode()
        handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        handler.wfile.flush()
        time.sleep(pause_s)
    else:
        handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()
    handler.close_connection = True


class FakeModelServer:
    """The server, in a thread of this process, for the length of a `with` block."""

    def __init__(
        self, delay_s: float = 0.2, port: int = 0, *, piece_delay_s: float = 0.0, preamble: str | None = None
    ):
        self.delay_s, self.piece_delay_s, self.preamble = delay_s, piece_delay_s, preamble
        self.requests = 0
        self.bodies: list[dict[str, Any]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fake-model", daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a worker's client reuses its connection

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                time.sleep(server.delay_s)
                server.requests += 1
                server.bodies.append(body)
                completion = answer(body, server.preamble)
                if body.get("stream"):
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    events = openai_events(completion_chunks(completion, usage=usage))
                    send_events(self, events, pause_s=server.piece_delay_s)
                    return
                payload = json.dumps(completion, ensure_ascii=False).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
