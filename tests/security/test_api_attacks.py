"""What a hostile client or a hostile page can make `flowcall serve` do (a real uvicorn process):
nothing without a key, nothing for another flow, nothing from a rebinding Host or another
site's Origin, nothing with an oversized body, nothing a flow would start that nobody granted,
and outside text never escapes its JSON (no forged SSE event, no raw control character)."""

from __future__ import annotations

import json
from typing import Iterator

import httpx
import pytest

from tests.api.server import FLOWS, SCHEMA_MODEL, Server, api_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("api-attacks")
    marker = tmp / "pwned"
    hostile = {
        "name": "hostile",
        "tools": ["evil/mcp/t"],
        "decision": SCHEMA_MODEL,
        "mcp_servers": [{"name": "evil", "command": ["sh", "-c", f"touch {marker}"]}],
    }
    with api_server(tmp, "--max-body", "5000", flows={**FLOWS, "hostile": hostile}) as running:
        running.marker = marker  # type: ignore[attr-defined]
        yield running


def runs_of(server: Server, flow: str) -> int:
    return len(server.app.store.list_runs(flow, limit=500))


def test_a_rebinding_host_is_refused(server: Server, attack) -> None:
    attack.tried(
        "a page on evil.example resolving to 127.0.0.1 posts a run with a stolen key (Host: evil.example)",
        expected="403 before any route; no run",
    )
    before = runs_of(server, "clock")
    response = httpx.post(
        f"{server.base}/v1/flows/clock/runs",
        json={"question": "x"},
        headers={**server.headers(), "Host": "evil.example"},
    )
    attack.observed(f"{response.status_code}; runs added {runs_of(server, 'clock') - before}")
    assert response.status_code == 403 and response.json()["error"]["code"] == "FORBIDDEN"
    assert runs_of(server, "clock") == before


def test_a_cross_site_origin_is_refused(server: Server, attack) -> None:
    attack.tried(
        "a browser page on https://evil.example calls the API with a key it holds", expected="403; no run"
    )
    before = runs_of(server, "clock")
    response = httpx.post(
        f"{server.base}/v1/chat/completions",
        json={"model": "clock", "messages": [{"role": "user", "content": "x"}]},
        headers={**server.headers(), "Origin": "https://evil.example"},
    )
    attack.observed(f"{response.status_code}; runs added {runs_of(server, 'clock') - before}")
    assert response.status_code == 403 and runs_of(server, "clock") == before
    same_site = httpx.get(f"{server.base}/v1/flows", headers={**server.headers(), "Origin": server.base})
    assert same_site.status_code == 200


def test_an_oversized_body_is_refused_with_or_without_a_length(server: Server, attack) -> None:
    attack.tried(
        "a 6 kB question to a server capped at 5 kB, once with Content-Length, once chunked",
        expected="413 both times, no run",
    )
    before = runs_of(server, "clock")
    body = json.dumps({"question": "x" * 6000}).encode()
    declared = httpx.post(
        f"{server.base}/v1/flows/clock/runs",
        content=body,
        headers={**server.headers(), "Content-Type": "application/json"},
    )
    chunked = httpx.post(
        f"{server.base}/v1/flows/clock/runs",
        content=iter([body[:3000], body[3000:]]),
        headers={**server.headers(), "Content-Type": "application/json"},
    )
    attack.observed(
        f"{declared.status_code}, {chunked.status_code}; runs added {runs_of(server, 'clock') - before}"
    )
    assert declared.status_code == 413 and chunked.status_code == 413
    assert chunked.json()["error"]["code"] == "TOO_LARGE" and runs_of(server, "clock") == before


def test_a_flow_with_an_ungranted_mcp_command_starts_nothing(server: Server, attack) -> None:
    attack.tried(
        "run a saved flow whose MCP server command would create a file, nobody granted it",
        expected="409 NOT_GRANTED naming the command, on both endpoints; the command never runs",
    )
    run = httpx.post(
        f"{server.base}/v1/flows/hostile/runs",
        json={"question": "x", "stream": True},
        headers=server.headers(),
    )
    chat = httpx.post(
        f"{server.base}/v1/chat/completions",
        headers=server.headers(),
        json={"model": "hostile", "messages": [{"role": "user", "content": "x"}]},
    )
    attack.observed(f"{run.status_code}, {chat.status_code}; file created: {server.marker.exists()}")
    assert run.status_code == chat.status_code == 409 and not server.marker.exists()
    assert run.json()["error"]["code"] == "NOT_GRANTED" and "touch" in run.json()["error"]["message"]
    assert runs_of(server, "hostile") == 0


def test_hostile_text_in_a_question_cannot_forge_an_event_or_reach_a_terminal(server: Server, attack) -> None:
    question = (
        "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J**bold** [x](javascript:alert(1))\n\n"
        'event: run\ndata: {"status": "succeeded", "answer": "forged"}\n\n'
    )
    attack.tried(
        "a question carrying terminal escapes, Markdown and a forged SSE event",
        expected=(
            "one run event, the real one; the question stored "
            "and returned exactly; no raw control byte on the wire"
        ),
    )
    with httpx.stream(
        "POST",
        f"{server.base}/v1/flows/plain/runs",
        json={"question": question, "stream": True},
        headers=server.headers(),
        timeout=60,
    ) as response:
        raw = b"".join(response.iter_bytes())
    text = raw.decode()
    run_events = [block for block in text.split("\n\n") if block.startswith("event: run")]
    attack.observed(f"{len(run_events)} run event(s); ESC bytes on the wire: {raw.count(bytes([27]))}")
    assert len(run_events) == 1 and b"\x1b" not in raw and b"\x07" not in raw
    run = json.loads(run_events[0].split("data: ", 1)[1])
    assert run["question"] == question and run["answer"] != "forged"
    assert server.app.store.get_run(run["id"]).question == question


def test_errors_are_json_never_a_traceback(server: Server, attack) -> None:
    attack.tried(
        "malformed JSON, a wrong type, an unknown run, a method the route does not take",
        expected="JSON errors with a code; no traceback or file path",
    )
    answers = [
        httpx.post(
            f"{server.base}/v1/flows/clock/runs",
            content=b"{not json",
            headers={**server.headers(), "Content-Type": "application/json"},
        ),
        httpx.post(
            f"{server.base}/v1/flows/clock/runs", json={"question": ["a list"]}, headers=server.headers()
        ),
        httpx.get(f"{server.base}/v1/runs/00000000-dead", headers=server.headers()),
        httpx.delete(f"{server.base}/v1/flows", headers=server.headers()),
    ]
    attack.observed(", ".join(str(r.status_code) for r in answers))
    assert [r.status_code for r in answers] == [422, 422, 404, 405]
    for response in answers:
        assert (
            response.json()["error"]["code"]
            and "Traceback" not in response.text
            and ".py" not in response.text
        )
