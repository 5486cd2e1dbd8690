"""Provider keys go only where the person sent them, and no credential from a base URL is stored.

Real parts: the openai SDK over HTTP to capture servers on 127.0.0.1 that record each request's
Authorization header, runs through FlowCall with its SQLite store, and the run export.
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest

from flowcall.core.errors import ConfigError, ProviderError
from flowcall.core.messages import Message, ModelRequest
from flowcall.core.spec import DecisionConfig, Flow, ModelConfig, PolishConfig
from flowcall.core.steps import RunStatus
from flowcall.providers import provider_for
from flowcall.providers.dashscope_native import DashScopeProvider
from flowcall.service.front import FlowCall

KEY = "sk-test-CAPTURE-0123456789abcdef"
PASSWORD = "Pw-from-the-env-4711"

COMPLETION = {
    "id": "chatcmpl-capture",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


@dataclass
class Capture:
    """A minimal OpenAI-compatible server: answers every POST with one completion and keeps the
    Authorization header (None when absent) of each request."""

    base_url: str
    authorizations: list[str | None] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1"


@pytest.fixture
def capture() -> Iterator[Callable[[], Capture]]:
    servers: list[ThreadingHTTPServer] = []

    def start() -> Capture:
        record = Capture(base_url="")

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                record.authorizations.append(self.headers.get("Authorization"))
                body = json.dumps(COMPLETION).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(httpd)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        record.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
        return record

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("FLOWCALL_RETRY_INITIAL_S", "0.01")
    monkeypatch.setenv("FLOWCALL_PROVIDER_ATTEMPTS", "2")
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_COMPATIBLE_API_KEY",
        "OPENAI_COMPATIBLE_BASE_URL",
        "DASHSCOPE_API_KEY",
        "DASHSCOPE_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)


def compatible_flow(name: str, decision_url: str | None, polish_url: str | None = None) -> Flow:
    polish = (
        PolishConfig(provider="openai-compatible", model="m", base_url=polish_url) if polish_url else None
    )
    return Flow(
        name=name,
        decision=DecisionConfig(
            provider="openai-compatible", model="m", base_url=decision_url, calling_way="native"
        ),
        polish=polish,
    )


def run_granted(service: FlowCall, flow: Flow, question: str = "hello?"):
    """Run as a person would after reading the flow and granting what it reaches (flowcall trust)."""
    service.grant(flow, by="test")
    return service.run(flow, question)


def carries_key(authorization: str | None) -> bool:
    return authorization is not None and KEY in authorization


# ---------------------------------------------------------------- Point A: where a key goes


def test_flow_base_url_does_not_receive_the_compatible_key(attack, capture, monkeypatch):
    attack.tried(
        "a shared flow points decision.base_url at its own server to collect OPENAI_COMPATIBLE_API_KEY",
        expected="that server gets no key (the placeholder); the configured server still gets it",
    )
    configured, foreign = capture(), capture()
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", configured.url)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    service = FlowCall.open()

    stolen = run_granted(service, compatible_flow("collector", foreign.url))
    # the person's own flow, spelled differently (upper-case scheme, trailing slash, default-less port)
    spelled = configured.url.replace("http://", "HTTP://") + "/"
    own = run_granted(service, compatible_flow("own", spelled))

    attack.observed(
        f"foreign server saw {foreign.authorizations}; configured saw "
        f"{['key' if carries_key(a) else a for a in configured.authorizations]}"
    )
    assert stolen.status == RunStatus.SUCCEEDED and foreign.authorizations
    assert not any(carries_key(a) for a in foreign.authorizations)
    assert foreign.authorizations == ["Bearer not-needed"] * len(foreign.authorizations)
    assert own.status == RunStatus.SUCCEEDED
    assert configured.authorizations and all(carries_key(a) for a in configured.authorizations)


def test_polish_base_url_does_not_receive_the_key(attack, capture, monkeypatch):
    attack.tried(
        "the decision model is the configured server, the polish model a foreign one",
        expected="the polish server gets no key",
    )
    configured, foreign = capture(), capture()
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", configured.url)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    service = FlowCall.open()

    run = run_granted(service, compatible_flow("polish-collector", configured.url, polish_url=foreign.url))

    attack.observed(f"status {run.status}, polish server saw {foreign.authorizations}")
    assert run.status == RunStatus.SUCCEEDED
    assert foreign.authorizations and not any(carries_key(a) for a in foreign.authorizations)
    assert all(carries_key(a) for a in configured.authorizations)


def test_imported_run_rerun_does_not_send_the_key(attack, capture, monkeypatch, tmp_path):
    attack.tried(
        "a shared run export whose flow points base_url at the sender's server; the receiver "
        "imports it and re-runs it from step 1",
        expected="the sender's server gets no key",
    )
    configured, foreign = capture(), capture()
    sender = FlowCall.open(f"sqlite:///{tmp_path / 'sender.db'}")  # the attacker's machine: no key there
    original = run_granted(sender, compatible_flow("shared-run", foreign.url))
    export = sender.export_run(original.id)
    foreign.authorizations.clear()

    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", configured.url)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    receiver = FlowCall.open()
    imported = receiver.import_run(export)
    receiver.grant(receiver.flow_of(imported), by="test")
    rerun = receiver.rerun_from(imported.id, 1)

    attack.observed(f"rerun {rerun.status}; sender's server saw {foreign.authorizations}")
    assert rerun.status == RunStatus.SUCCEEDED and foreign.authorizations
    assert not any(carries_key(a) for a in foreign.authorizations)


def test_no_configured_base_url_means_the_key_goes_nowhere(attack, capture, monkeypatch):
    attack.tried(
        "OPENAI_COMPATIBLE_API_KEY is set but OPENAI_COMPATIBLE_BASE_URL is not; a flow names a server",
        expected="the server gets no key",
    )
    foreign = capture()
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    service = FlowCall.open()

    run = run_granted(service, compatible_flow("no-configured-url", foreign.url))

    attack.observed(f"status {run.status}, server saw {foreign.authorizations}")
    assert foreign.authorizations and not any(carries_key(a) for a in foreign.authorizations)


def test_openai_provider_refuses_a_flow_base_url(attack, capture, monkeypatch):
    attack.tried(
        "a flow sets base_url for provider openai, hoping OPENAI_API_KEY follows it",
        expected="ConfigError pointing to openai-compatible; nothing sent anywhere",
    )
    configured, foreign = capture(), capture()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", configured.url)

    with pytest.raises(ConfigError) as caught:
        provider_for(ModelConfig(provider="openai", model="gpt-4o-mini", base_url=foreign.url))

    attack.observed(f"error: {caught.value}; foreign saw {foreign.authorizations}")
    assert "openai-compatible" in str(caught.value) and "base_url" in str(caught.value)
    assert foreign.authorizations == [] and configured.authorizations == []
    assert KEY not in str(caught.value)


def test_dashscope_provider_refuses_a_flow_base_url(attack, capture, monkeypatch):
    attack.tried(
        "a flow sets base_url for provider dashscope, hoping DASHSCOPE_API_KEY follows it",
        expected="ConfigError pointing to openai-compatible",
    )
    foreign = capture()
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)

    with pytest.raises(ConfigError) as caught:
        provider_for(
            ModelConfig(provider="dashscope", model="qwen-plus", base_url=f"{foreign.base_url}/api/v1")
        )

    attack.observed(f"error: {caught.value}; foreign saw {foreign.authorizations}")
    assert "openai-compatible" in str(caught.value)
    assert foreign.authorizations == []


# ---------------------------------------------------------------- Point C: credentials in base URLs


def with_password(url: str) -> str:
    return url.replace("http://", f"http://alice:{PASSWORD}@")


def test_openai_base_url_password_is_not_stored(attack, capture, monkeypatch):
    attack.tried(
        "OPENAI_BASE_URL=http://alice:<password>@proxy/v1; a run is recorded and exported",
        expected="neither the stored steps nor the export hold the password",
    )
    proxy = capture()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", with_password(proxy.url))
    service = FlowCall.open()
    flow = Flow(
        name="via-proxy",
        decision=DecisionConfig(provider="openai", model="gpt-4o-mini", calling_way="native"),
    )

    run = run_granted(service, flow)
    stored = service.store.get_run(run.id).model_dump_json()
    exported = json.dumps(service.export_run(run.id))

    attack.observed(
        f"status {run.status}; password in store: {PASSWORD in stored}, in export: {PASSWORD in exported}"
    )
    assert run.status == RunStatus.SUCCEEDED and proxy.authorizations
    assert proxy.url.removeprefix("http://") in stored  # the base URL is still recorded, without the password
    assert PASSWORD not in stored and PASSWORD not in exported
    assert KEY not in stored and KEY not in exported


def test_compatible_base_url_password_is_not_stored(attack, capture, monkeypatch):
    attack.tried(
        "OPENAI_COMPATIBLE_BASE_URL=http://alice:<password>@server/v1 and a flow without base_url",
        expected="the run goes to the configured server; no password in steps or export",
    )
    server = capture()
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", with_password(server.url))
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    service = FlowCall.open()

    run = run_granted(service, compatible_flow("configured-server", None))
    stored = service.store.get_run(run.id).model_dump_json()
    exported = json.dumps(service.export_run(run.id))

    attack.observed(
        f"status {run.status}; requests {len(server.authorizations)}; "
        f"password in store: {PASSWORD in stored}, in export: {PASSWORD in exported}"
    )
    assert run.status == RunStatus.SUCCEEDED and server.authorizations
    assert PASSWORD not in stored and PASSWORD not in exported


def test_unreachable_base_url_error_holds_no_password(attack, monkeypatch):
    attack.tried(
        "OPENAI_BASE_URL with a password points at a closed port; the run fails",
        expected="the error (message, stored step, export) names the URL without the password",
    )
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://alice:{PASSWORD}@127.0.0.1:{port}/v1")
    service = FlowCall.open()
    flow = Flow(
        name="closed-proxy",
        decision=DecisionConfig(provider="openai", model="gpt-4o-mini", calling_way="native"),
    )

    run = run_granted(service, flow)
    stored = service.store.get_run(run.id).model_dump_json()
    exported = json.dumps(service.export_run(run.id))
    errors = " ".join([run.error or ""] + [step.error_message or "" for step in run.steps])

    attack.observed(f"status {run.status}; errors: {errors[:200]}")
    assert run.status == RunStatus.FAILED and f"127.0.0.1:{port}" in errors
    assert PASSWORD not in errors and PASSWORD not in stored and PASSWORD not in exported


def test_dashscope_base_url_password_is_not_recorded(attack, monkeypatch):
    attack.tried(
        "a DashScope base URL with user:password@ (DASHSCOPE_HTTP_BASE_URL or base_url)",
        expected="the recorded request and the error name the URL without the password",
    )
    import requests

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://alice:{PASSWORD}@127.0.0.1:{port}/api/v1"
    provider = DashScopeProvider("qwen-plus", api_key=KEY, base_url=url, timeout_s=5)
    with pytest.raises(ProviderError) as caught:
        provider.complete(ModelRequest(messages=[Message(role="user", content="hi")]))
    recorded = json.dumps(caught.value.details.get("wire_request"))

    attack.observed(
        f"error: {caught.value.message[:160]}; recorded base_url "
        f"{caught.value.details.get('wire_request', {}).get('base_url')}"
    )
    assert isinstance(caught.value.__cause__, requests.exceptions.RequestException)
    assert f"127.0.0.1:{port}" in recorded
    assert PASSWORD not in recorded and PASSWORD not in caught.value.message
