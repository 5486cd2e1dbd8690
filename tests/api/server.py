"""A real `flowcall serve` process on a real database, for the API tests."""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from flowcall.core.spec import parse_flow
from flowcall.service.front import FlowCall
from tests.local_servers import free_port, serving

SCHEMA_MODEL = {"provider": "scripted", "model": "schema"}  # a deterministic model, no model file
FLOWS = {
    "clock": {"name": "clock", "tools": ["time/v1/get_current_time"], "decision": SCHEMA_MODEL},
    "tasks": {
        "name": "tasks",
        "tools": ["task/v1/add_task"],
        "decision": SCHEMA_MODEL,
        "needs_approval": ["task/v1/add_task"],
    },
    "plain": {"name": "plain", "tools": [], "decision": SCHEMA_MODEL},
    "chat": {"name": "chat", "tools": [], "decision": SCHEMA_MODEL, "conversation": True},
}


@dataclass
class Server:
    base: str  # http://127.0.0.1:PORT
    port: int
    app: FlowCall  # the same database, from this process
    keys: dict[str, str]  # key name -> secret
    log: Path

    def headers(self, key: str = "all") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[key]}"}


def save_flows(app: FlowCall, flows: dict[str, dict] = FLOWS) -> None:
    for spec in flows.values():
        app.store.save_flow(parse_flow(json.dumps(spec)))


@contextmanager
def api_server(
    tmp: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    flows: dict[str, dict] = FLOWS,
    database_url: str | None = None,
) -> Iterator[Server]:
    url = database_url or f"sqlite:///{tmp / 'api.db'}"
    env = {**os.environ, "FLOWCALL_HOME": str(tmp / "home"), **(env or {}), "FLOWCALL_DATABASE_URL": url}
    app = FlowCall.open(url)
    save_flows(app, flows)
    keys = {"all": app.create_key("all")[1]}
    if "clock" in flows:
        keys["clock-only"] = app.create_key("clock-only", ["clock"])[1]
    port = free_port()
    log = tmp / f"serve-{port}.log"
    argv = [sys.executable, "-m", "flowcall.cli.main", "serve", "--port", str(port), *extra]
    with serving(
        argv, f"http://127.0.0.1:{port}/openapi.json", log, within_s=60, name="flowcall serve", env=env
    ):
        yield Server(f"http://127.0.0.1:{port}", port, app, keys, log)
    app.store.close()
