"""A stand-in OpenAI-compatible chat server on 127.0.0.1 that answers after a fixed delay: the
model of the worker benchmark (benchmarks/workers.py) and of the worker kill test, shipped
beside the other test doubles (testing.py) so both use the same one.

It is a pure function of the request, like the schema-driven model: offered tools and no tool
result yet, it calls the first tool with arguments made from its schema (each string argument
is the question); otherwise it answers with the last tool result it saw. Any number of requests
are served at once, each in its own thread, so N workers waiting on it wait in parallel.

    with FakeModelServer(delay_s=0.2) as server:
        os.environ["OPENAI_COMPATIBLE_BASE_URL"] = server.base_url
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flowcall.core.schema_example import example_for


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion for a request body (no delay)."""
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
        finish = "tool_calls"
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


class FakeModelServer:
    """The server, in a thread of this process, for the length of a `with` block."""

    def __init__(self, delay_s: float = 0.2, port: int = 0):
        self.delay_s = delay_s
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a worker's client reuses its connection

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                time.sleep(server.delay_s)
                server.requests += 1
                payload = json.dumps(answer(body), ensure_ascii=False).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="fake-model", daemon=True)

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
