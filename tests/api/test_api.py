"""The HTTP API against a real `flowcall serve` process (uvicorn) and a real SQLite database:
the official OpenAI client (sync, async, streaming) on /v1/chat/completions, httpx on the REST
routes and the Server-Sent Events stream, approval through the API, and every auth case."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Iterator

import httpx
import openai
import pytest

from tests.api.server import Server, api_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with api_server(tmp_path_factory.mktemp("api")) as running:
        yield running


def client(server: Server, key: str = "all") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.base}/v1", api_key=server.keys[key], max_retries=0)


def events(text: str) -> list[tuple[str, dict]]:
    """(event, data) of each Server-Sent Event in a response body."""
    found = []
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if lines:
            fields = dict(line.split(": ", 1) for line in lines)
            found.append((fields.get("event", "message"), json.loads(fields["data"])))
    return found


# --- the OpenAI SDK -------------------------------------------------------------------------
def test_the_openai_client_calls_a_flow_and_gets_its_run_id(server: Server) -> None:
    raw = client(server).chat.completions.with_raw_response.create(
        model="clock",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "几点了?"}],
    )
    completion = raw.parse()
    answer = completion.choices[0].message.content
    assert (
        answer.startswith("Results: get_current_time -> ") and completion.choices[0].finish_reason == "stop"
    )
    assert not completion.choices[0].message.tool_calls  # the flow's tools ran inside FlowCall
    run = server.app.store.get_run(raw.headers["x-flowcall-run-id"])
    assert run.question == "几点了?" and run.final_answer == answer and run.status == "succeeded"
    assert completion.usage.total_tokens == run.tokens_in + run.tokens_out > 0


def test_the_async_openai_client(server: Server) -> None:
    async def ask() -> list[str]:
        aclient = openai.AsyncOpenAI(base_url=f"{server.base}/v1", api_key=server.keys["all"], max_retries=0)
        done = await asyncio.gather(
            *(
                aclient.chat.completions.create(
                    model="plain", messages=[{"role": "user", "content": f"question {n}"}]
                )
                for n in range(3)
            )
        )
        return [c.choices[0].message.content for c in done]

    assert asyncio.run(ask()) == [f"No tool results. Last message: question {n}" for n in range(3)]


def test_the_openai_client_streams_the_answer(server: Server) -> None:
    stream = client(server).chat.completions.create(
        model="clock", stream=True, messages=[{"role": "user", "content": "现在几点?"}]
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.startswith("Results: get_current_time -> ")
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1


@pytest.mark.parametrize("flow, reads_the_chat", [("chat", True), ("plain", False)])
def test_earlier_messages_reach_a_flow_that_reads_the_chat(
    server: Server, flow: str, reads_the_chat: bool
) -> None:
    raw = client(server).chat.completions.with_raw_response.create(
        model=flow,
        messages=[
            {"role": "system", "content": "You are a pirate."},
            {"role": "user", "content": "My name is Ana."},
            {"role": "assistant", "content": "Hello Ana!"},
            {"role": "tool", "content": "{}", "tool_call_id": "x"},
            {"role": "user", "content": "What is my name?"},
        ],
    )
    run = server.app.store.get_run(raw.headers["x-flowcall-run-id"])
    sent = [(m["role"], m["content"]) for m in run.steps[0].request["messages"]]
    chat = [("user", "My name is Ana."), ("assistant", "Hello Ana!")]
    assert sent == (chat if reads_the_chat else []) + [
        ("user", "What is my name?")
    ]  # no client system or tool text
    assert [(t.role, t.content) for t in run.context] == (chat if reads_the_chat else [])


def test_models_are_the_flows_the_key_may_use(server: Server) -> None:
    assert {m.id for m in client(server).models.list()} == {"clock", "tasks", "plain", "chat"}
    assert [m.id for m in client(server, "clock-only").models.list()] == ["clock"]


def test_a_flow_that_does_not_exist_is_a_clear_404(server: Server) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client(server).chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["code"] == "NOT_FOUND" and "nope" in caught.value.body["message"]


# --- REST and SSE -----------------------------------------------------------------------------
def test_flows_are_listed_exported_and_imported_without_replacing_a_saved_one(server: Server) -> None:
    with httpx.Client(base_url=server.base, headers=server.headers()) as http:
        assert {f["name"] for f in http.get("/v1/flows").json()} >= {"clock", "tasks", "plain", "chat"}
        exported = http.get("/v1/flows/clock").json()
        assert exported["name"] == "clock" and exported["tools"] == ["time/v1/get_current_time"]
        other = {**exported, "description": "a different flow with the same name"}
        imported = http.post("/v1/flows", json=other)
        assert imported.status_code == 201 and imported.json()["name"] == "clock-imported"
        assert http.get("/v1/flows/clock").json() == exported  # the saved flow is unchanged
        bad = http.post("/v1/flows", json={"name": "x", "decision": {"provider": "nowhere"}})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_ARGUMENT"


def test_a_run_waits_for_its_answer_and_reads_back_with_its_steps(server: Server) -> None:
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
        done = http.post("/v1/flows/clock/runs", json={"question": "几点了?"})
        assert done.status_code == 200
        run = done.json()
        assert run["status"] == "succeeded" and run["answer"].startswith("Results: get_current_time")
        assert [s["kind"] for s in run["steps"]] == ["model_call", "tool_call", "model_call"]
        full = http.get(f"/v1/runs/{run['id']}").json()
        assert full["steps"][1]["result"] and full["final_answer"] == run["answer"]
        listed = http.get("/v1/runs", params={"flow": "clock", "status": "succeeded"}).json()
        assert run["id"] in [r["id"] for r in listed]


def test_a_streamed_run_sends_each_step_then_the_run(server: Server) -> None:
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
        with http.stream(
            "POST", "/v1/flows/clock/runs", json={"question": "几点了?", "stream": True}
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            body = "".join(response.iter_text())
    sent = events(body)
    assert [e for e, _ in sent] == ["step", "step", "step", "run"]
    assert [d["seq"] for _, d in sent[:3]] == [1, 2, 3] and sent[-1][1]["status"] == "succeeded"
    stored = server.app.store.get_run(sent[-1][1]["id"])
    assert [s.model_dump(mode="json") for s in stored.steps] == [d for _, d in sent[:3]]


def test_approval_through_the_api_answers_202_then_resumes(server: Server) -> None:
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
        waiting = http.post("/v1/flows/tasks/runs", json={"question": "add a task"})
        assert waiting.status_code == 202
        run = waiting.json()
        assert run["status"] == "waiting_approval" and [w["tool"] for w in run["waiting"]] == ["add_task"]
        call_id = run["waiting"][0]["call_id"]
        none_decided = http.post(f"/v1/runs/{run['id']}/resume", json={"decisions": []})
        assert none_decided.status_code == 202 and none_decided.json()["status"] == "waiting_approval"
        denied = http.post(
            f"/v1/runs/{run['id']}/resume",
            json={"decisions": [{"call_id": call_id, "action": "deny", "reason": "not today"}]},
        )
        assert denied.status_code == 200 and denied.json()["status"] == "succeeded"
        steps = http.get(f"/v1/runs/{run['id']}").json()["steps"]
        decision = [s for s in steps if s["kind"] == "approval" and s["result"]][-1]
        assert decision["result"] == {"action": "deny", "by": "API key all", "reason": "not today"}
        again = http.post(f"/v1/runs/{run['id']}/resume", json={"decisions": []})
        assert again.status_code == 409 and again.json()["error"]["code"] == "CONFLICT"


def test_a_run_is_cancelled_through_the_api(server: Server) -> None:
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=60) as http:
        run = http.post("/v1/flows/tasks/runs", json={"question": "add a task"}).json()
        cancelled = http.post(f"/v1/runs/{run['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


# --- keys ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer fc_not-a-key"}, {"Authorization": "Basic abc"}]
)
def test_no_valid_key_is_401_on_every_route(server: Server, headers: dict[str, str]) -> None:
    for method, path in [
        ("GET", "/v1/flows"),
        ("GET", "/v1/models"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/flows/clock/runs"),
        ("GET", "/v1/runs"),
    ]:
        response = httpx.request(method, server.base + path, headers=headers, json={})
        assert response.status_code == 401, (method, path)
        assert (
            response.json()["error"]["code"] == "UNAUTHORIZED"
            and "Bearer" in response.headers["www-authenticate"]
        )


def test_a_revoked_key_is_refused(server: Server) -> None:
    _, secret = server.app.create_key("short-lived")
    assert (
        httpx.get(f"{server.base}/v1/flows", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    )
    server.app.revoke_key("short-lived")
    assert (
        httpx.get(f"{server.base}/v1/flows", headers={"Authorization": f"Bearer {secret}"}).status_code == 401
    )


def test_a_key_for_some_flows_finds_no_other_flow(server: Server) -> None:
    """A flow outside the key's scope is answered as one that does not exist; importing is 403."""
    with httpx.Client(base_url=server.base, headers=server.headers("clock-only"), timeout=60) as http:
        assert http.post("/v1/flows/clock/runs", json={"question": "几点了?"}).status_code == 200
        for response in [
            http.post("/v1/flows/tasks/runs", json={"question": "x"}),
            http.get("/v1/flows/tasks"),
            http.post(
                "/v1/chat/completions",
                json={"model": "tasks", "messages": [{"role": "user", "content": "x"}]},
            ),
        ]:
            assert response.status_code == 404 and response.json()["error"]["code"] == "NOT_FOUND"
        imported = http.post("/v1/flows", json={"name": "new", "decision": {"provider": "scripted"}})
        assert imported.status_code == 403 and imported.json()["error"]["code"] == "FORBIDDEN"
        assert {r["flow"] for r in http.get("/v1/runs").json()} == {"clock"}
        other_run = server.app.store.list_runs("plain", limit=1)
        if other_run:
            assert http.get(f"/v1/runs/{other_run[0].id}").status_code == 404


def test_the_openapi_docs_are_served(server: Server) -> None:
    assert httpx.get(f"{server.base}/docs").status_code == 200
    paths = httpx.get(f"{server.base}/openapi.json").json()["paths"]
    assert {"/v1/chat/completions", "/v1/flows/{name}/runs", "/v1/runs/{run_id}/resume"} <= set(paths)


def test_limits_answer_429_with_retry_after(tmp_path: Path) -> None:
    with api_server(tmp_path, "--rate", "1", "--burst", "2") as limited:
        codes = [httpx.get(f"{limited.base}/v1/flows", headers=limited.headers()) for _ in range(3)]
        assert [r.status_code for r in codes] == [200, 200, 429]
        assert (
            codes[-1].json()["error"]["code"] == "RATE_LIMITED" and int(codes[-1].headers["retry-after"]) >= 1
        )
        # another key has its own bucket
        assert httpx.get(f"{limited.base}/v1/flows", headers=limited.headers("clock-only")).status_code == 200


def test_no_auth_is_for_loopback_only(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from flowcall.cli.main import cli

    result = CliRunner().invoke(
        cli, ["--db", f"sqlite:///{tmp_path / 'x.db'}", "serve", "--host", "0.0.0.0", "--no-auth"]
    )
    assert result.exit_code == 2 and "--no-auth" in result.output and "keys create" in result.output
    with api_server(tmp_path, "--no-auth") as open_server:
        assert httpx.get(f"{open_server.base}/v1/flows").status_code == 200


def test_a_chunked_request_streams_whole(server: Server) -> None:
    body = json.dumps({"question": "几点了?", "stream": True}).encode()
    with httpx.Client(
        base_url=server.base, headers={**server.headers(), "Content-Type": "application/json"}, timeout=60
    ) as http:
        with http.stream("POST", "/v1/flows/clock/runs", content=iter([body[:10], body[10:]])) as response:
            sent = events("".join(response.iter_text()))
    assert [e for e, _ in sent] == ["step", "step", "step", "run"]
