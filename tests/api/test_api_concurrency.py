"""Concurrent clients against one real `flowcall serve` on SQLite, with 1 and 2 uvicorn workers:
every request answers 200 and its run is recorded exactly once, succeeded, none left running.
benchmarks/api.py holds the same invariant at full size (50 clients x 20 requests) and times it."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.api.server import FLOWS, Server, api_server

CLIENTS, REQUESTS = 10, 3
UNLIMITED = (
    *("--rate", "1000000", "--burst", "1000000"),
    *("--concurrent", "1000000", "--concurrent-all", "1000000"),
)


async def ask_concurrently(server: Server) -> list[httpx.Response]:
    async def client(c: int) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.base, headers=server.headers(), timeout=60) as http:
            return [
                await http.post("/v1/flows/plain/runs", json={"question": f"client {c} request {r}"})
                for r in range(REQUESTS)
            ]

    answers = await asyncio.gather(*(client(c) for c in range(CLIENTS)))
    return [response for per_client in answers for response in per_client]


@pytest.mark.parametrize("workers", [1, 2])  # 2: two processes writing the one SQLite file
def test_concurrent_clients_each_get_their_run_recorded_once(tmp_path: Path, workers: int) -> None:
    plain = {"plain": FLOWS["plain"]}
    with api_server(tmp_path, "--workers", str(workers), *UNLIMITED, flows=plain) as server:
        answers = asyncio.run(ask_concurrently(server))
        assert [r.status_code for r in answers] == [200] * (CLIENTS * REQUESTS), [r.text for r in answers]
        bodies = [r.json() for r in answers]
        for body in bodies:
            assert body["status"] == "succeeded"
            assert body["answer"] == f"No tool results. Last message: {body['question']}"
        runs = server.app.store.list_runs("plain", limit=1_000)
    asked = {f"client {c} request {r}" for c in range(CLIENTS) for r in range(REQUESTS)}
    assert Counter(run.question for run in runs) == Counter(asked)  # each exactly once, nothing else
    assert {run.id for run in runs} == {b["id"] for b in bodies}
    assert {str(run.status) for run in runs} == {"succeeded"}  # none failed, none left running


def test_the_workers_socket_is_tcp_so_responses_are_not_held_back() -> None:
    """With --workers N the listening socket is marked as TCP, so asyncio sets TCP_NODELAY on
    each connection (else every response waits for the client's delayed ACK)."""
    import socket

    from flowcall.cli.serve import tcp_socket

    bound = socket.socket(socket.AF_INET)  # as uvicorn binds it: protocol 0
    bound.bind(("127.0.0.1", 0))
    sock = tcp_socket(bound)
    try:
        assert sock.proto == socket.IPPROTO_TCP and sock.get_inheritable()
    finally:
        sock.close()
