"""What one API key can do to the others and to the server (a real `flowcall serve` process, a
real SQLite database): keep runs going past its limits by letting go of them, learn of flows and
runs outside its scope, read or decide another key's runs, run a flow with its approvals taken
out, and fill the database."""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest

from flowcall.core.spec import parse_flow
from flowcall.testing.fake_server import FakeModelServer
from tests.api.server import FLOWS, SCHEMA_MODEL, Server, api_server

SLOW = {"name": "slow", "tools": [], "decision": {"provider": "openai-compatible", "model": "fake"}}


class GatedModel(FakeModelServer):
    """The fake model server, holding every request until the test opens the gate: a run that
    is going, for as long as the test wants."""

    def __init__(self) -> None:
        self.gate, self.arrived, self._count = threading.Event(), 0, threading.Lock()
        super().__init__(delay_s=0)

    def _handler(self) -> Any:
        plain, server = super()._handler(), self

        class Gated(plain):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                with server._count:
                    server.arrived += 1
                server.gate.wait(60)
                super().do_POST()

        return Gated


def until(check: Callable[[], bool], within_s: float = 30.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def gated() -> Iterator[GatedModel]:
    with GatedModel() as model:
        yield model
        model.gate.set()  # nothing left hanging


def slow_server(tmp: Path, model: GatedModel, *extra: str) -> Any:
    env = {"OPENAI_COMPATIBLE_BASE_URL": model.base_url, "NO_PROXY": "127.0.0.1,localhost"}
    return api_server(tmp, "--wait", "1", *extra, env=env, flows={**FLOWS, "slow": SLOW})


def add_key(server: Server, name: str, flows: list[str] | None = None) -> None:
    server.keys[name] = server.app.create_key(name, flows)[1]


def stream_then_leave(server: Server, model: GatedModel, path: str, body: dict, key: str) -> int:
    """Start a streamed run, wait until it reached the model, and hang up. Returns the status."""
    before = model.arrived
    with httpx.stream("POST", server.base + path, json=body, headers=server.headers(key), timeout=30) as r:
        status = r.status_code
        if status == 200:
            until(lambda: model.arrived > before)
    return status


def runs_going(server: Server) -> int:
    return sum(1 for run in server.app.store.list_runs("slow", limit=50) if str(run.status) == "running")


def all_ended(server: Server) -> bool:
    runs = server.app.store.list_runs("slow", limit=50)
    return bool(runs) and all(str(run.status) == "succeeded" for run in runs)


# --- limits a client leaves behind -------------------------------------------------------------
def test_a_run_the_client_left_keeps_its_keys_slot_until_it_ends(tmp_path: Path, gated, attack) -> None:
    attack.tried(
        "with --concurrent 2, start a streamed run and hang up, start a waited run that answers "
        "202 after --wait 1, then ask for a third while both still go",
        expected="the third gets 429 while the two go; it gets through once they end",
    )
    with slow_server(tmp_path, gated, "--concurrent", "2") as server:
        streamed = stream_then_leave(
            server, gated, "/v1/flows/slow/runs", {"question": "a", "stream": True}, "all"
        )
        waited = httpx.post(
            f"{server.base}/v1/flows/slow/runs", json={"question": "b"}, headers=server.headers(), timeout=30
        )
        third = httpx.post(
            f"{server.base}/v1/flows/slow/runs", json={"question": "c"}, headers=server.headers(), timeout=30
        )
        going = runs_going(server)
        attack.observed(
            f"stream {streamed}, waited {waited.status_code}, third {third.status_code} "
            f"with {going} runs going, {gated.arrived} model calls"
        )
        gated.gate.set()
        ended = until(lambda: all_ended(server))
        after = httpx.post(
            f"{server.base}/v1/flows/slow/runs", json={"question": "d"}, headers=server.headers(), timeout=30
        )
        attack.observed(f"after the runs ended: {after.status_code}")
    assert streamed == 200 and waited.status_code == 202
    assert third.status_code == 429 and third.json()["error"]["code"] == "RATE_LIMITED"
    assert going == 2 and ended and after.status_code == 200


def test_the_server_limits_runs_going_across_keys(tmp_path: Path, gated, attack) -> None:
    attack.tried(
        "with --concurrent 1 and --concurrent-all 2, key A streams a chat completion and hangs up, "
        "key B waits past --wait on a chat completion, key C starts a run",
        expected="C gets 429 (the server's limit) while the two go; C gets through once they end",
    )
    with slow_server(tmp_path, gated, "--concurrent", "1", "--concurrent-all", "2") as server:
        for name in ("b", "c"):
            add_key(server, name)
        chat = {"model": "slow", "messages": [{"role": "user", "content": "a"}]}
        streamed = stream_then_leave(server, gated, "/v1/chat/completions", {**chat, "stream": True}, "all")
        again = httpx.post(
            f"{server.base}/v1/chat/completions", json=chat, headers=server.headers(), timeout=30
        )
        waited = httpx.post(
            f"{server.base}/v1/chat/completions", json=chat, headers=server.headers("b"), timeout=30
        )
        third = httpx.post(
            f"{server.base}/v1/flows/slow/runs",
            json={"question": "c"},
            headers=server.headers("c"),
            timeout=30,
        )
        going = runs_going(server)
        attack.observed(
            f"A stream {streamed}, A again {again.status_code}, B {waited.status_code}, "
            f"C {third.status_code} with {going} runs going"
        )
        gated.gate.set()
        ended = until(lambda: all_ended(server))
        after = httpx.post(
            f"{server.base}/v1/flows/slow/runs",
            json={"question": "d"},
            headers=server.headers("c"),
            timeout=30,
        )
        attack.observed(f"after the runs ended: C {after.status_code}")
    assert streamed == 200 and again.status_code == 429 and waited.status_code == 504
    assert third.status_code == 429 and "server" in third.json()["error"]["message"]
    assert going == 2 and ended and after.status_code == 200


# --- what a scoped key learns ------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    unlimited = ("--rate", "100000", "--burst", "100000")  # what is compared is never a 429
    with api_server(tmp_path_factory.mktemp("api-round3"), *unlimited) as running:
        add_key(running, "other")
        yield running


def masked(response: httpx.Response, given: str) -> tuple[int, bytes]:
    return response.status_code, response.content.replace(given.encode(), b"<GIVEN>")


def run_routes(http: httpx.Client, run_id: str) -> list[httpx.Response]:
    return [
        http.get(f"/v1/runs/{run_id}"),
        http.post(f"/v1/runs/{run_id}/resume", json={"decisions": []}),
        http.post(f"/v1/runs/{run_id}/cancel"),
    ]


def flow_routes(http: httpx.Client, name: str) -> list[httpx.Response]:
    chat = {"model": name, "messages": [{"role": "user", "content": "x"}]}
    return [
        http.get(f"/v1/flows/{name}"),
        http.get(f"/v1/flows/{name}", params={"version": 1}),
        http.post(f"/v1/flows/{name}/runs", json={"question": "x"}),
        http.post(f"/v1/flows/{name}/runs", json={"question": "x", "stream": True}),
        http.post("/v1/chat/completions", json=chat),
        http.post("/v1/chat/completions", json={**chat, "stream": True}),
        http.get("/v1/runs", params={"flow": name}),
    ]


def test_a_scoped_key_cannot_tell_a_flow_outside_its_scope_from_a_missing_one(server: Server, attack) -> None:
    attack.tried(
        "a key limited to 'clock' asks for flow 'tasks' (saved) and flow 'no-such-flow' on every flow route",
        expected="the same status and the same body byte for byte, apart from the name given",
    )
    with httpx.Client(base_url=server.base, headers=server.headers("clock-only"), timeout=30) as http:
        hidden = [masked(r, "tasks") for r in flow_routes(http, "tasks")]
        missing = [masked(r, "no-such-flow") for r in flow_routes(http, "no-such-flow")]
    attack.observed(f"outside scope: {[s for s, _ in hidden]}; missing: {[s for s, _ in missing]}")
    assert hidden == missing
    assert [s for s, _ in hidden] == [404] * 6 + [200]
    assert b"clock" not in b"".join(body for _, body in hidden)  # no list of the flows there are


def test_a_scoped_key_cannot_tell_another_flows_run_from_a_missing_one(server: Server, attack) -> None:
    attack.tried(
        "a key limited to 'clock' asks for a run of 'tasks', a run of 'clock' another key started, "
        "a run started from the CLI, and an id no run has, on get, resume and cancel",
        expected="404 with the same body for all of them, apart from the id given; the runs unchanged",
    )
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as http:
        tasks_run = http.post("/v1/flows/tasks/runs", json={"question": "add a task"}).json()["id"]
        clock_run = http.post("/v1/flows/clock/runs", json={"question": "time?"}).json()["id"]
    cli_run = server.app.run(parse_flow(json.dumps(FLOWS["clock"])), "time?").id
    nobody = str(uuid.uuid4())
    with httpx.Client(base_url=server.base, headers=server.headers("clock-only"), timeout=30) as http:
        answers = {
            run_id: [masked(r, run_id) for r in run_routes(http, run_id)]
            for run_id in (tasks_run, clock_run, cli_run, nobody)
        }
    attack.observed("; ".join(f"{k[:8]}: {[s for s, _ in v]}" for k, v in answers.items()))
    assert answers[tasks_run] == answers[clock_run] == answers[cli_run] == answers[nobody]
    assert [s for s, _ in answers[nobody]] == [404, 404, 404]
    assert str(server.app.store.get_run(tasks_run).status) == "waiting_approval"


def test_a_run_id_prefix_finds_nothing(server: Server, attack) -> None:
    attack.tried(
        "a key asks for the first 8 characters of its own run's id, and of an id no run has",
        expected="404 for both, the same body apart from the id given: the API takes whole ids only",
    )
    with httpx.Client(base_url=server.base, headers=server.headers("clock-only"), timeout=30) as http:
        own = http.post("/v1/flows/clock/runs", json={"question": "time?"}).json()["id"]
        whole = http.get(f"/v1/runs/{own}")
        prefix, unknown = own[:8], "0123abcd"
        by_prefix = [masked(r, prefix) for r in run_routes(http, prefix)]
        by_unknown = [masked(r, unknown) for r in run_routes(http, unknown)]
    attack.observed(f"whole id {whole.status_code}; prefix {[s for s, _ in by_prefix]}")
    assert whole.status_code == 200 and by_prefix == by_unknown
    assert [s for s, _ in by_prefix] == [404, 404, 404]


# --- runs belong to the key that started them ------------------------------------------------------
def test_a_key_cannot_read_decide_or_cancel_another_keys_run(server: Server, attack) -> None:
    attack.tried(
        "key 'other' (every flow) lists runs, reads, approves and cancels a run key 'all' started "
        "that waits for approval, and reads a run started from the CLI",
        expected="the run is not listed, 404 on each route, it still waits, no task added; its owner sees it",
    )
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as owner:
        waiting = owner.post("/v1/flows/tasks/runs", json={"question": "add a task"}).json()
    cli_run = server.app.run(parse_flow(json.dumps(FLOWS["plain"])), "from the terminal").id
    tasks_before = len(server.app.store.list_tasks())
    decision = {"decisions": [{"call_id": waiting["waiting"][0]["call_id"], "action": "approve"}]}
    with httpx.Client(base_url=server.base, headers=server.headers("other"), timeout=30) as http:
        listed = {r["id"] for r in http.get("/v1/runs", params={"limit": 500}).json()}
        answers = [
            http.get(f"/v1/runs/{waiting['id']}"),
            http.post(f"/v1/runs/{waiting['id']}/resume", json=decision),
            http.post(f"/v1/runs/{waiting['id']}/cancel"),
            http.get(f"/v1/runs/{cli_run}"),
        ]
    status = str(server.app.store.get_run(waiting["id"]).status)
    added = len(server.app.store.list_tasks()) - tasks_before
    attack.observed(
        f"listed: {waiting['id'] in listed or cli_run in listed}; {[r.status_code for r in answers]}; "
        f"run {status}; tasks added {added}"
    )
    assert waiting["id"] not in listed and cli_run not in listed
    assert [r.status_code for r in answers] == [404] * 4
    assert status == "waiting_approval" and added == 0
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as owner:
        assert owner.get(f"/v1/runs/{waiting['id']}").status_code == 200
        assert waiting["id"] in {r["id"] for r in owner.get("/v1/runs", params={"limit": 500}).json()}
        assert cli_run not in {r["id"] for r in owner.get("/v1/runs", params={"limit": 500}).json()}


def test_a_new_key_under_a_revoked_keys_name_sees_none_of_its_runs(server: Server, attack) -> None:
    attack.tried(
        "key 'rotating' starts a run and is revoked; a new key is made under the same name and "
        "lists and reads that run",
        expected="the old run is not listed and reads 404 for the new key",
    )
    add_key(server, "rotating")
    with httpx.Client(base_url=server.base, headers=server.headers("rotating"), timeout=30) as old:
        run_id = old.post("/v1/flows/plain/runs", json={"question": "hello"}).json()["id"]
    server.app.revoke_key("rotating")
    add_key(server, "rotating")
    with httpx.Client(base_url=server.base, headers=server.headers("rotating"), timeout=30) as new:
        listed = {r["id"] for r in new.get("/v1/runs", params={"limit": 500}).json()}
        read = new.get(f"/v1/runs/{run_id}").status_code
    attack.observed(f"listed: {run_id in listed}; read {read}")
    assert run_id not in listed and read == 404


# --- approvals a key cannot take out ---------------------------------------------------------------
def test_a_key_cannot_import_a_flow_without_the_approvals_a_person_set(server: Server, attack) -> None:
    attack.tried(
        "a key allowed every flow exports 'tasks' (add_task waits for a person), takes add_task out "
        "of needs_approval, imports it under the same name and under a new one, and runs it",
        expected="403 naming add_task and 'tasks'; nothing saved; add_task never runs without a person",
    )
    tasks_before = len(server.app.store.list_tasks())
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as http:
        flows_before = {f["name"] for f in http.get("/v1/flows").json()}
        exported = http.get("/v1/flows/tasks").json()
        lowered = [
            http.post("/v1/flows", json={**exported, "needs_approval": []}),
            http.post("/v1/flows", json={**exported, "name": "sneaky", "needs_approval": []}),
        ]
        ran = []
        for response in lowered:
            if response.status_code == 201:
                name = response.json()["name"]
                ran.append(
                    http.post(f"/v1/flows/{name}/runs", json={"question": "add a task"}).json()["status"]
                )
        kept = http.post("/v1/flows", json={**exported, "name": "careful", "description": "same approvals"})
        flows_after = {f["name"] for f in http.get("/v1/flows").json()}
    added = len(server.app.store.list_tasks()) - tasks_before
    attack.observed(
        f"imports {[r.status_code for r in lowered]}; runs {ran}; tasks added without a person {added}"
    )
    assert [r.status_code for r in lowered] == [403, 403] and added == 0
    message = lowered[0].json()["error"]["message"]
    assert "add_task" in message and "'tasks'" in message and "needs_approval" in message
    assert kept.status_code == 201 and flows_after == flows_before | {"careful"}


# --- storage quota per key ---------------------------------------------------------------------
def test_a_key_cannot_fill_the_database(tmp_path: Path, attack) -> None:
    attack.tried(
        "with --quota-runs 2 --quota-flows 1, a key starts runs and imports flows past its quota",
        expected="429 QUOTA_EXCEEDED saying which quota, nothing stored past it; another key is not affected",
    )
    with api_server(tmp_path, "--quota-runs", "2", "--quota-flows", "1") as server:
        add_key(server, "other")
        with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as http:
            runs = [http.post("/v1/flows/plain/runs", json={"question": f"q{n}"}) for n in range(3)]
            chat = http.post(
                "/v1/chat/completions",
                json={"model": "plain", "messages": [{"role": "user", "content": "x"}]},
            )
            flows = [
                http.post("/v1/flows", json={"name": f"new{n}", "decision": SCHEMA_MODEL}) for n in range(2)
            ]
        with httpx.Client(base_url=server.base, headers=server.headers("other"), timeout=30) as http:
            others = [
                http.post("/v1/flows/plain/runs", json={"question": "other"}),
                http.post("/v1/flows", json={"name": "new-other", "decision": SCHEMA_MODEL}),
            ]
        stored = len(server.app.store.list_runs("plain", limit=50))
        saved = {f["name"] for f in server.app.store.list_flows()}
    attack.observed(
        f"runs {[r.status_code for r in runs]}, chat {chat.status_code}, "
        f"imports {[r.status_code for r in flows]}; "
        f"other key {[r.status_code for r in others]}; runs stored {stored}"
    )
    assert [r.status_code for r in runs] == [200, 200, 429] and chat.status_code == 429
    assert [r.status_code for r in flows] == [201, 429]
    assert (
        runs[2].json()["error"]["code"] == "QUOTA_EXCEEDED"
        and "--quota-runs" in runs[2].json()["error"]["message"]
    )
    assert "--quota-flows" in flows[1].json()["error"]["message"]
    assert [r.status_code for r in others] == [200, 201]
    assert stored == 3 and "new1" not in saved and {"new0", "new-other"} <= saved


def test_a_key_cannot_run_an_older_version_from_before_an_approval(server: Server, attack) -> None:
    attack.tried(
        "a person adds add_task to needs_approval in version 2 of a flow; a key runs version 1",
        expected="403 naming add_task; no task added; the latest version still runs (and waits)",
    )
    before = {"name": "payments", "tools": ["task/v1/add_task"], "decision": SCHEMA_MODEL}
    for spec in (before, {**before, "needs_approval": ["add_task"]}):
        server.app.store.save_flow(parse_flow(json.dumps(spec)))
    tasks_before = len(server.app.store.list_tasks())
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as http:
        old = http.post("/v1/flows/payments/runs", json={"question": "pay", "version": 1})
        latest = http.post("/v1/flows/payments/runs", json={"question": "pay"})
    added = len(server.app.store.list_tasks()) - tasks_before
    attack.observed(
        f"version 1: {old.status_code}; latest: {latest.json().get('status')}; tasks added {added}"
    )
    assert old.status_code == 403 and "add_task" in old.json()["error"]["message"] and added == 0
    assert latest.status_code == 202 and latest.json()["status"] == "waiting_approval"
