"""A run started through the HTTP API with `"queue": true` runs on a real `flowcall worker`
(Celery on Redis, PostgreSQL), and the client sees each step as the worker commits it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from flowcall.workers.local_workers import LocalWorkers
from tests.api.server import SCHEMA_MODEL, api_server
from tests.api.test_api import events

QUEUED = {"queued": {"name": "queued", "tools": ["workertest/v1/record_item"], "decision": SCHEMA_MODEL}}


def test_a_queued_run_is_streamed_from_the_worker(worker_env: dict[str, str], tmp_path: Path) -> None:
    with LocalWorkers(1, worker_env, tmp_path / "workers") as workers:
        workers.wait_ready(timeout_s=90)
        with api_server(
            tmp_path, env=worker_env, flows=QUEUED, database_url=worker_env["FLOWCALL_DATABASE_URL"]
        ) as server:
            with httpx.Client(base_url=server.base, headers=server.headers(), timeout=120) as http:
                with http.stream(
                    "POST",
                    "/v1/flows/queued/runs",
                    json={"question": "record the item", "queue": True, "stream": True},
                ) as response:
                    sent = events("".join(response.iter_text()))
                waited = http.post("/v1/flows/queued/runs", json={"question": "once more", "queue": True})
    assert [e for e, _ in sent][-1] == "run" and sent[-1][1]["status"] == "succeeded"
    assert [d["kind"] for e, d in sent if e == "step"] == ["model_call", "tool_call", "model_call"]
    ran_by = Path(worker_env["WORKER_TEST_LOG"]).read_text().split()
    assert sent[-1][1]["id"] in ran_by  # the worker ran the tool, not the API's process
    assert waited.status_code == 200 and waited.json()["status"] == "succeeded"
    assert json.dumps(sent[-1][1]["answer"]).count("recorded") == 1
