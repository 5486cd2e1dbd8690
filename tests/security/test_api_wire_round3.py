"""What a hostile client, a hostile page or hostile text can make `flowcall serve` (a real uvicorn
process, a real SQLite database) send or answer on the wire: a stream line split by a Unicode
line break, an Origin on another port let in, a body read before the key is checked, a huge
number or a non-UTF-8 body answered with the wrong code or a 500."""

from __future__ import annotations

import json
from typing import Iterator

import httpx
import pytest

from tests.api.server import Server, api_server

# every character str.splitlines() ends a line on, the three JSON leaves raw first
BREAKS = "a\u2028b\u2029c\x85d\re\nf\x0bg\x0ch\x1ci\x1dj\x1ek\r\nl"
RAW_BREAKS = ("\u2028".encode(), "\u2029".encode(), "\x85".encode())
OTHER_PORT = 9999  # a page served by another local program
ALLOWED_ORIGIN = "http://127.0.0.1:9998"  # given with --allow-origin


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("api-wire")
    with api_server(tmp, "--max-body", "5000", "--allow-origin", ALLOWED_ORIGIN) as running:
        yield running


def runs_of(server: Server, flow: str) -> int:
    return len(server.app.store.list_runs(flow, limit=500))


def naive_data(raw: bytes) -> list[str]:
    """The data of each `data:` line, as a client that splits on every Unicode line break reads it."""
    lines = raw.decode("utf-8").splitlines()
    return [line[len("data:") :].strip() for line in lines if line.startswith("data:")]


def streamed(server: Server, path: str, body: dict) -> bytes:
    with httpx.stream("POST", f"{server.base}{path}", json=body, headers=server.headers(), timeout=60) as r:
        assert r.status_code == 200, r.read()
        return b"".join(r.iter_bytes())


# --- line breaks in streamed text ------------------------------------------------------------
def test_a_run_stream_keeps_each_data_line_whole_for_a_naive_client(server: Server, attack) -> None:
    attack.tried(
        "a question (echoed in steps, the answer and the run) holding U+2028, U+2029, U+0085, "
        "CR, LF and the other Unicode line breaks, streamed as SSE",
        expected="every data line parses as JSON after str.splitlines(); none of those bytes raw",
    )
    raw = streamed(server, "/v1/flows/plain/runs", {"question": BREAKS, "stream": True})
    broken = []
    parsed = []
    for data in naive_data(raw):
        try:
            parsed.append(json.loads(data))
        except json.JSONDecodeError:
            broken.append(data[:60])
    raw_found = [b for b in RAW_BREAKS if b in raw]
    attack.observed(f"{len(parsed)} data lines parsed, {len(broken)} broken; raw breaks: {raw_found}")
    assert not broken and not raw_found
    run = next(p for p in parsed if "status" in p and "question" in p)
    assert run["question"] == BREAKS and run["answer"].endswith(BREAKS)


def test_a_chat_stream_keeps_each_chunk_whole_for_a_naive_client(server: Server, attack) -> None:
    attack.tried(
        "a chat-completions stream whose answer holds U+2028, U+2029, U+0085, CR and LF",
        expected="every chunk line parses as JSON after str.splitlines(); the content adds up exactly",
    )
    body = {"model": "plain", "stream": True, "messages": [{"role": "user", "content": BREAKS}]}
    raw = streamed(server, "/v1/chat/completions", body)
    broken, content = [], ""
    for data in naive_data(raw):
        if data == "[DONE]":
            continue
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            broken.append(data[:60])
            continue
        content += chunk["choices"][0]["delta"].get("content") or ""
    raw_found = [b for b in RAW_BREAKS if b in raw]
    attack.observed(f"{len(broken)} broken chunk lines; raw breaks: {raw_found}; content {content[-12:]!r}")
    assert not broken and not raw_found
    assert content == f"No tool results. Last message: {BREAKS}"


# --- the Origin's port -------------------------------------------------------------------------
def test_an_origin_on_another_port_of_this_host_is_refused(server: Server, attack) -> None:
    attack.tried(
        f"a page on another local service (http://127.0.0.1:{OTHER_PORT}, http://localhost:{OTHER_PORT}), "
        "or the same host over https or on port 80, posts a run with a key it holds",
        expected="403 FORBIDDEN for each, no run; the server's own origin and --allow-origin pass",
    )
    before = runs_of(server, "clock")
    hostile = [
        f"http://127.0.0.1:{OTHER_PORT}",
        f"http://localhost:{OTHER_PORT}",
        f"https://127.0.0.1:{server.port}",
        "http://127.0.0.1",
        f"http://127.0.0.1:{server.port}.evil.example",
    ]
    answers = {
        origin: httpx.post(
            f"{server.base}/v1/flows/clock/runs",
            json={"question": "x"},
            headers={**server.headers(), "Origin": origin},
        ).status_code
        for origin in hostile
    }
    attack.observed(f"{answers}; runs added {runs_of(server, 'clock') - before}")
    assert set(answers.values()) == {403} and runs_of(server, "clock") == before
    for origin in (server.base, f"http://localhost:{server.port}", ALLOWED_ORIGIN, ALLOWED_ORIGIN + "/"):
        ok = httpx.get(f"{server.base}/v1/flows", headers={**server.headers(), "Origin": origin})
        assert ok.status_code == 200, origin


# --- error codes --------------------------------------------------------------------------------
def test_a_body_that_is_not_utf8_is_a_bad_request_not_a_conflict(server: Server, attack) -> None:
    attack.tried(
        "a JSON body with bytes that are not UTF-8; a JSON number of 4400 digits",
        expected="400 INVALID_ARGUMENT saying what is wrong with the body; no run",
    )
    before = runs_of(server, "clock")
    latin = httpx.post(
        f"{server.base}/v1/flows/clock/runs",
        content=b'{"question": "caf\xe9 \xff"}',
        headers={**server.headers(), "Content-Type": "application/json"},
    )
    digits = httpx.post(
        f"{server.base}/v1/flows",
        content=b'{"name": "n", "x": ' + b"9" * 4400 + b"}",
        headers={**server.headers(), "Content-Type": "application/json"},
    )
    attack.observed(
        f"{latin.status_code} {latin.json()['error']['code']}, {digits.status_code} "
        f"{digits.json()['error']['code']}; runs added {runs_of(server, 'clock') - before}"
    )
    for answer in (latin, digits):
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert "UTF-8" in latin.json()["error"]["message"] and runs_of(server, "clock") == before


def test_a_huge_number_is_refused_never_a_server_error(server: Server, attack) -> None:
    attack.tried(
        "version 10**30 in a run's body and in ?version=, limit=10**30, version 2**63",
        expected="4xx naming the field for each; never 500",
    )
    big = 10**30
    answers = [
        httpx.post(
            f"{server.base}/v1/flows/clock/runs",
            json={"question": "x", "version": big},
            headers=server.headers(),
        ),
        httpx.post(
            f"{server.base}/v1/flows/clock/runs",
            json={"question": "x", "version": 2**63},
            headers=server.headers(),
        ),
        httpx.get(f"{server.base}/v1/flows/clock", params={"version": big}, headers=server.headers()),
        httpx.get(f"{server.base}/v1/runs", params={"limit": big}, headers=server.headers()),
    ]
    attack.observed(", ".join(f"{r.status_code} {r.json()['error']['code']}" for r in answers))
    for answer in answers:
        assert answer.status_code in (400, 404, 422), answer.text
        message = answer.json()["error"]["message"]
        assert "version" in message or "limit" in message, message


# --- the key before the body ---------------------------------------------------------------------
def test_no_key_is_401_before_the_body_is_read(server: Server, attack) -> None:
    attack.tried(
        "without a key (and with a wrong one): malformed JSON, non-UTF-8, a body of the wrong shape, "
        "a bad query value, a body over --max-body",
        expected="401 for each (413 allowed for the oversized body), never 422 or 400 with schema details",
    )
    run_url = f"{server.base}/v1/flows/clock/runs"
    json_type = {"Content-Type": "application/json"}
    wrong = {**json_type, "Authorization": "Bearer fc_not-a-key"}
    answers = {
        "malformed": httpx.post(run_url, content=b"{not json", headers=json_type),
        "not utf-8": httpx.post(run_url, content=b'{"question": "\xff"}', headers=json_type),
        "wrong shape": httpx.post(run_url, json={"question": ["a list"], "version": "x"}),
        "wrong key": httpx.post(run_url, content=b"{not json", headers=wrong),
        "bad query": httpx.get(f"{server.base}/v1/flows/clock", params={"version": "x"}),
        "chat": httpx.post(f"{server.base}/v1/chat/completions", json={"messages": 3}),
        "resume": httpx.post(f"{server.base}/v1/runs/r/resume", content=b"[", headers=json_type),
    }
    huge = httpx.post(run_url, content=b'{"question": "' + b"x" * 6000 + b'"}', headers=json_type)
    attack.observed(
        ", ".join(f"{k}: {r.status_code}" for k, r in answers.items()) + f", huge: {huge.status_code}"
    )
    for name, answer in answers.items():
        assert answer.status_code == 401, (name, answer.text)
        assert answer.json()["error"]["code"] == "UNAUTHORIZED"
    assert huge.status_code in (401, 413)
    for answer in [*answers.values(), huge]:
        assert "question" not in answer.text and "messages" not in answer.text
