"""Attacks on a flow served over HTTP with `flowcall mcp serve --transport http`: an exposed port
with no token, calls without (or with a wrong) token, DNS rebinding, error text that leaks
internals, a run paused for approval, and a flood of calls.

The CLI is started for real where the attack is on the command itself; the rest serve the same
ASGI app (`http_app`) with uvicorn on 127.0.0.1 in a thread, so the flow can run on a scripted
model and the runs can be counted in the store."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from flowcall.api.mcp_serve import build_server, http_app
from flowcall.core.errors import ProviderError
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from tests.local_servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
PLAIN = Flow(name="plain", decision=DecisionConfig(provider="scripted"))
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def service_with(script_for_each_run: Any) -> FlowCall:
    """A service on the test's database whose every run gets a new scripted model."""
    return FlowCall(
        store=FlowCall.open().store, provider_factory=lambda cfg: ScriptedProvider(script_for_each_run())
    )


def runs_in(service: FlowCall) -> int:
    return len(service.store.list_runs(limit=1000))


@contextmanager
def serving_app(app: Any) -> Iterator[tuple[str, int]]:
    """Serve an ASGI app with uvicorn on 127.0.0.1 in a thread; yields (url, port)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        server.should_exit = True
        thread.join(timeout=15)


async def ask(url: str, question: str, token: str | None = None) -> Any:
    """The SDK's own client over HTTP, with a bearer token when given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(10, read=60)) as http:
        with anyio.fail_after(60):
            async with Client(
                streamable_http_client(url, http_client=http), read_timeout_seconds=30
            ) as client:
                listed = await client.list_tools()
                return await client.call_tool(listed.tools[0].name, {"question": question})


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_an_exposed_host_without_a_token_never_starts(attack):
    attack.tried(
        "`flowcall mcp serve FLOW --transport http --host 0.0.0.0` with no token",
        expected="exit 2, a one-line error naming --token and FLOWCALL_MCP_TOKEN, the port never opens",
    )
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "FLOWCALL_MCP_TOKEN"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowcall.cli.main",
            "mcp",
            "serve",
            str(ROOT / "flows" / "current_time.json"),
            "--transport",
            "http",
            "--host",
            "0.0.0.0",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        _, err = proc.communicate(timeout=45)
        opened = port_open(port)
    except subprocess.TimeoutExpired:  # it is serving: the attack worked
        opened = port_open(port)
        proc.kill()
        _, err = proc.communicate()
    attack.observed(f"exit {proc.returncode}, port open: {opened}, stderr: {err.strip()[:200]!r}")
    assert proc.returncode == 2 and not opened
    assert len(err.strip().splitlines()) == 1 and "--token" in err and "FLOWCALL_MCP_TOKEN" in err


def test_the_real_command_with_a_token_answers_401_to_callers_without_it(attack, tmp_path):
    attack.tried(
        "call the real `mcp serve --token T` with no token, a wrong one, or another scheme",
        expected="401 with an empty body each time; the right token gets through",
    )
    port, token = free_port(), secrets.token_urlsafe(24)
    url = f"http://127.0.0.1:{port}/mcp"
    argv = [
        sys.executable,
        "-m",
        "flowcall.cli.main",
        "mcp",
        "serve",
        str(ROOT / "flows" / "current_time.json"),
        "--transport",
        "http",
        "--port",
        str(port),
        "--token",
        token,
    ]
    with serving(argv, url, tmp_path / "serve.log", within_s=60, name="flowcall mcp serve", any_answer=True):
        answers = {
            name: httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **extra}, timeout=20)
            for name, extra in [
                ("none", {}),
                ("wrong", {"Authorization": f"Bearer wrong-{token}"}),
                ("basic", {"Authorization": f"Basic {token}"}),
                ("right", {"Authorization": f"Bearer {token}"}),
            ]
        }
    attack.observed(", ".join(f"{name}: {r.status_code} {r.content[:40]!r}" for name, r in answers.items()))
    for name in ("none", "wrong", "basic"):
        assert answers[name].status_code == 401 and answers[name].content == b""
    assert answers["right"].status_code == 200


def test_a_call_with_a_wrong_token_records_no_run(attack):
    attack.tried(
        "a full MCP tool call with no token and with a wrong token",
        expected="the client is refused (401) and no run is recorded; the right token runs the flow",
    )
    token = secrets.token_urlsafe(24)
    service = service_with(lambda: ["the answer"])
    refused = []
    with serving_app(http_app(service, PLAIN, host="127.0.0.1", token=token)) as (url, _):
        for given in (None, "not-the-token"):
            try:
                result = anyio.run(ask, url, "hi", given)
                refused.append(f"answered: {result.content[0].text[:40]}")
            except Exception as exc:  # noqa: BLE001 - any refusal will do; what matters is no run
                refused.append(f"refused: {type(exc).__name__}")
        recorded_before_right = runs_in(service)
        right = anyio.run(ask, url, "hi", token)
    attack.observed(
        f"{refused}; runs recorded: {recorded_before_right}; right token: {right.content[0].text!r}"
    )
    assert all(r.startswith("refused") for r in refused) and recorded_before_right == 0
    assert not right.is_error and right.content[0].text == "the answer" and runs_in(service) == 1


def test_a_page_on_another_port_of_this_host_is_refused(attack):
    attack.tried(
        "a page on http://127.0.0.1:<another port> (another local program) posts to the MCP server",
        expected="403; a page of the server's own origin passes",
    )
    token = secrets.token_urlsafe(24)
    app = http_app(service_with(lambda: ["x"]), PLAIN, host="127.0.0.1", token=token)
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    with serving_app(app) as (url, port):

        def post(origin: str) -> int:
            return httpx.post(
                url, json=INITIALIZE, headers={**auth, "Origin": origin}, timeout=20
            ).status_code

        other = [post(f"http://127.0.0.1:{port + 1}"), post("http://localhost:9"), post("https://127.0.0.1")]
        own = post(f"http://127.0.0.1:{port}")
    attack.observed(f"other ports: {other}, own origin: {own}")
    assert other == [403, 403, 403] and own == 200


@pytest.mark.parametrize("served_as", ["127.0.0.1", "0.0.0.0"])
def test_dns_rebinding_and_foreign_origins_are_refused(attack, served_as):
    attack.tried(
        f"served as --host {served_as} (with a token): a request with Host: evil.example, and one "
        "with Origin: http://evil.example",
        expected="421 and 403; the server's own Host and an --allow-origin pass",
    )
    token = secrets.token_urlsafe(24)
    app = http_app(
        service_with(lambda: ["x"]),
        PLAIN,
        host=served_as,
        token=token,
        allow_origins=["https://app.example.com"],
    )
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    with serving_app(app) as (url, port):

        def post(**headers: str) -> int:
            return httpx.post(url, json=INITIALIZE, headers={**auth, **headers}, timeout=20).status_code

        evil_host = post(Host=f"evil.example:{port}")
        evil_origin = post(Origin="http://evil.example")
        own = post()
        allowed_origin = post(Origin="https://app.example.com")
    attack.observed(
        f"evil Host: {evil_host}, evil Origin: {evil_origin}, own: {own}, allowed Origin: {allowed_origin}"
    )
    assert evil_host == 421 and evil_origin == 403
    assert own == 200 and allowed_origin == 200


def test_a_failed_run_tells_the_remote_caller_no_internals(attack):
    secret = "could not read /root/.secret/key.pem for https://internal.example:9000/v1"
    attack.tried(
        "make a served flow fail with an error whose text holds a path and an internal URL",
        expected="the caller gets the run id, the error code and the `runs show` command, not the text",
    )
    service = service_with(lambda: [ProviderError(secret)] * 5)  # each calling way falls back once
    with serving_app(http_app(service, PLAIN)) as (url, _):
        result = anyio.run(ask, url, "hi")
    reply = result.model_dump_json()
    run = service.store.list_runs(limit=1)[0]
    attack.observed(f"reply: {result.content[0].text!r}")
    assert (
        result.is_error and run.status == RunStatus.FAILED and secret in run.error
    )  # the server keeps it all
    assert "/root/.secret" not in reply and "internal.example" not in reply
    assert result.content[0].text == (
        f"the flow failed (run {run.id}, PROVIDER_ERROR); "
        f"see it with `flowcall runs show {run.id}` on the server"
    )

    async def local() -> Any:  # over stdio the caller is the local user: the full error may stay
        async with Client(build_server(service, PLAIN, remote=False)) as client:
            return await client.call_tool("plain", {"question": "hi"})

    assert secret in anyio.run(local).content[0].text


def test_a_run_waiting_for_approval_says_so_and_how_to_resume(attack):
    attack.tried(
        "call a served flow whose tool needs a person's approval",
        expected="'waiting for approval' with the run id and the resume command; the run waits in the store",
    )
    flow = Flow(
        name="tasks",
        tools=["task/v1/create_task"],
        needs_approval=["create_task"],
        max_rounds=1,
        decision=DecisionConfig(provider="scripted"),
    )
    service = service_with(lambda: [[("create_task", {"title": "写周报"})]])
    with serving_app(http_app(service, flow)) as (url, _):
        result = anyio.run(ask, url, "记一下:写周报")
    text = result.content[0].text
    run_id = (result.meta or {}).get("flowcall/run_id")
    attack.observed(f"is_error={result.is_error}, reply: {text!r}, meta run id: {run_id}")
    assert run_id and service.store.get_run(run_id).status == RunStatus.WAITING_APPROVAL
    assert text == (
        f"waiting for approval: run {run_id}; "
        f"a person resumes it with `flowcall runs resume {run_id} --approve`"
    )
    assert "failed" not in text and "None" not in text
    assert [t["title"] for t in service.store.list_tasks()] == []  # nothing ran without the person


def test_calls_beyond_the_limit_are_told_busy(attack):
    attack.tried(
        "three calls at once to a server with --max-concurrent 2, while the first two are still running",
        expected="the third answers 'busy, try again' at once and records no run; the two finish; "
        "a later call runs again",
    )
    entered, release = [], threading.Event()

    def slow(request: Any) -> str:  # the model is still thinking until the test releases it
        entered.append(1)
        release.wait(30)
        return "done"

    service = service_with(lambda: [slow])
    results: list[Any] = []
    with serving_app(http_app(service, PLAIN, max_concurrent=2)) as (url, _):

        async def flood() -> Any:
            async with anyio.create_task_group() as group:
                for _ in range(2):
                    group.start_soon(lambda: _keep(results, ask(url, "slow")))
                with anyio.fail_after(20):
                    while len(entered) < 2:
                        await anyio.sleep(0.05)
                extra = await ask(url, "one too many")
                release.set()
            return extra

        extra = anyio.run(flood)
        later = anyio.run(ask, url, "later")  # the slots are free again
    attack.observed(
        f"third: {extra.content[0].text!r}; first two: {[r.content[0].text for r in results]}; "
        f"later: {later.content[0].text!r}; runs: {runs_in(service)}"
    )
    assert extra.is_error and "busy" in extra.content[0].text and "try again" in extra.content[0].text
    assert [r.content[0].text for r in results] == ["done", "done"]
    assert not later.is_error and runs_in(service) == 3  # the two, the later one; none for the busy call


async def _keep(results: list[Any], call: Any) -> None:
    results.append(await call)
