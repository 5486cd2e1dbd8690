"""The openai-compatible provider for real: `python -m llama_cpp.server` serving the embedded
model on 127.0.0.1, driven through the whole engine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus, StepKind
from flowcall.providers.openai_compat import compatible_provider
from flowcall.service.front import FlowCall
from tests.local_servers import free_port, serving

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def server_url(model_path, tmp_path_factory):
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--model_alias",
        "qwen-local",
    ]
    with serving(
        argv,
        f"{url}/models",
        tmp_path_factory.mktemp("llama-server") / "server.log",
        within_s=120,
        name="llama_cpp.server",
    ):
        yield url


def test_plain_completion_records_the_wire(server_url):
    from flowcall.core.messages import Message, ModelRequest

    provider = compatible_provider("qwen-local", server_url)
    turn = provider.complete(
        ModelRequest(messages=[Message(role="user", content="Say hello in one word.")], max_tokens=10)
    )
    assert turn.content and turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0
    assert turn.wire_request["model"] == "qwen-local" and turn.wire_request["messages"][0][
        "content"
    ].startswith("Say hello")
    assert turn.wire_response["choices"][0]["message"]["role"] == "assistant"


def test_weather_flow_through_the_server(server_url, monkeypatch):
    # the person's own server, configured in the environment: it needs no grant (flowcall/trust/consent.py)
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", server_url)
    # A named tool_choice makes llama.cpp's server constrain the call with a grammar and send
    # parsed tool_calls on the wire (with "auto" this small model often answers in prose).
    flow = Flow(
        name="server-weather",
        tools=["weather/v1/get_weather"],
        max_rounds=1,
        tool_choice="get_weather",
        decision=DecisionConfig(
            provider="openai-compatible",
            model="qwen-local",
            base_url=server_url,
            max_tokens=160,
            system_prompt="用户问天气时调用 get_weather。明天的天气用 extensions=all。",
        ),
    )
    service = FlowCall.open()
    run = service.run(flow, "我明天要在成都上下班通勤,会下雨吗?")
    assert run.status == RunStatus.SUCCEEDED, run.error
    tool = next(s for s in run.steps if s.kind == StepKind.TOOL_CALL)
    assert tool.error_code is None and tool.name == "get_weather" and "成都" in tool.arguments["location"]
    first = run.steps[0]
    assert (
        first.name == "openai-compatible/qwen-local"
        and first.request["tools"][0]["function"]["name"] == "get_weather"
    )
    assert first.request["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    wire_calls = first.response["choices"][0]["message"]["tool_calls"]
    assert wire_calls[0]["id"] == tool.tool_call_id  # the result went back keyed by the server's call id
    assert run.final_answer  # after the round limit, the model answered without tools


def test_bfcl_eval_runs_on_an_openai_compatible_server(server_url):
    """`flowcall eval bfcl` on a remote provider: the same cases, checker and report as locally."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowcall.cli.main",
            "eval",
            "bfcl",
            "--category",
            "simple",
            "--category",
            "irrelevance",
            "--limit",
            "1",
            "--provider",
            "openai-compatible",
            "--model",
            "qwen-local",
            "--base-url",
            server_url,
            "--way",
            "prompt",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["provider"], report["model"], report["way"]) == (
        "openai-compatible",
        "qwen-local",
        "prompt",
    )
    assert [c["category"] for c in report["cases"]] == ["simple", "irrelevance"]
    simple = report["cases"][0]
    assert simple["calls_produced"] >= 1 and simple["tokens_in"] > 0 and simple["latency_ms"] > 0
    assert all(c["error"] is None for c in report["cases"])  # the server answered every case
