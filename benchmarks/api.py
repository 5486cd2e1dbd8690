"""HTTP API figures, printed (never asserted): a real `flowcall serve` (uvicorn) on a fresh SQLite
database in a temporary folder, called by httpx over loopback.

1. In process: the median of `FlowCall.run(flow, question)`, sequential, on the same kind of
   database (a fresh SQLite file, the same saved flow), in this process before any server starts.
2. For each server configuration (--workers-list, default 1 and 2 uvicorn workers, each a server
   started afresh on a database of its own):
   - sequential: one client, one keep-alive connection, --sequential requests one after the other;
   - load: --clients concurrent clients (asyncio, one httpx.AsyncClient and so one connection
     each) × --requests non-streaming `POST /v1/flows/plain/runs` each: requests, errors (any
     answer but 200, or no answer), p50 and p95 latency, throughput; then the database is read
     back: every question sent is a run recorded exactly once, succeeded, none left running.

The flow is `plain`: no tools, decided by the deterministic scripted model
(`{"provider": "scripted", "model": "schema"}`, no model file), so a run is one model_call step
and its answer. Of the flows tests/api/server.py saves it is the cleanest for the overhead: a run
costs ~1 ms in process (a tool flow such as `clock`, with time/v1/get_current_time, costs ~8 ms
with three steps to record, and varies more), so what the API adds is not lost in the run's own
time and noise. The limits are set far above the load (--rate/--burst/--concurrent/--concurrent-all 10^6): the
figures are the server's, never the limiter's 429s.

Overhead per request = the API's p50 sequential (1 client) - the in-process p50. Sequential on
both sides because with concurrent clients a request's latency also holds its wait behind the
others (in the event loop, the thread pool, SQLite's write lock, the two cores this machine
shares between client and server): queueing, which grows with the load and is not what the API
adds to one request. The API's side includes the client's own time (httpx building the request
and reading the JSON) and loopback TCP, as any caller pays them.

    .venv/bin/python benchmarks/api.py [--clients 50] [--requests 20] [--workers-list 1,2] [--sequential 200]

A progress bar goes to stderr, the figures to stdout. One line per configuration, then the last
line, exactly

    api: R requests, errors E, p50 X ms, p95 Y ms, overhead Z ms

for the configuration with the fewest workers (1 by default: `flowcall serve` without --workers,
the default deployment); the other configurations' lines stand above it in the same form.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from tqdm import tqdm  # noqa: E402

from flowcall.core.steps import RunStatus  # noqa: E402
from flowcall.service.front import FlowCall  # noqa: E402
from tests.api.server import FLOWS, Server, api_server, save_flows  # noqa: E402

FLOW = "plain"
UNLIMITED = (
    *("--rate", "1000000", "--burst", "1000000"),
    *("--concurrent", "1000000", "--concurrent-all", "1000000"),
)
WARM_UP = 20  # runs before any timing, per side: imports, the plugin registry, the pools
CHECK_LIMIT = 1_000_000  # list_runs' limit when reading every run back


@dataclass
class Load:
    latencies_ms: list[float] = field(default_factory=list)  # of the 200s
    errors: Counter = field(default_factory=Counter)  # what went wrong -> how many
    wall_s: float = 0.0
    client_cpu_s: float = 0.0  # this process's CPU time meanwhile: the clients' share of the machine

    @property
    def requests(self) -> int:
        return len(self.latencies_ms) + sum(self.errors.values())


def percentile(samples: list[float], q: int) -> float:
    """The q-th percentile (q in 1..99) of `samples`; nan for none."""
    if not samples:
        return float("nan")
    if len(samples) == 1:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def in_process(tmp: Path, runs: int, bar: tqdm) -> list[float]:
    """ms per FlowCall.run(flow, question), sequential, on a fresh SQLite database."""
    app = FlowCall.open(f"sqlite:///{tmp / 'in-process.db'}")
    save_flows(app, {FLOW: FLOWS[FLOW]})
    flow, _, _ = app.store.get_flow(FLOW)
    for n in range(WARM_UP):
        app.run(flow, f"warm-up {n}")
    samples = []
    for n in range(runs):
        started = time.perf_counter()
        run = app.run(flow, f"in process {n}")
        samples.append((time.perf_counter() - started) * 1000)
        if run.status != RunStatus.SUCCEEDED:
            raise SystemExit(f"the in-process run ended {run.status}: {run.error}")
        bar.update()
    app.store.close()
    return samples


def sequential(server: Server, requests: int, bar: tqdm) -> Load:
    """One client on one keep-alive connection, one request after the other."""
    load = Load()
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=120) as http:
        for n in range(requests):
            started = time.perf_counter()
            try:
                answer: httpx.Response | httpx.HTTPError = http.post(
                    f"/v1/flows/{FLOW}/runs", json={"question": f"sequential {n}"}
                )
            except httpx.HTTPError as exc:
                answer = exc
            _count(load, started, answer)
            bar.update()
    return load


def _count(load: Load, started: float, answer: httpx.Response | httpx.HTTPError) -> None:
    """A 200's latency, or what went wrong instead."""
    if isinstance(answer, httpx.HTTPError):
        load.errors[f"no answer: {type(answer).__name__}: {answer}"] += 1
    elif answer.status_code == 200:
        load.latencies_ms.append((time.perf_counter() - started) * 1000)
    else:
        load.errors[f"{answer.status_code} {answer.text[:300]}"] += 1


def concurrent(server: Server, clients: int, requests: int, bar: tqdm, prefix: str) -> Load:
    """`clients` clients at once, each on its own connection, each sending `requests` requests one
    after the other; the question names the client and the request, so each can be found again."""
    load = Load()

    async def client(c: int) -> None:
        async with httpx.AsyncClient(base_url=server.base, headers=server.headers(), timeout=120) as http:
            for r in range(requests):
                question = f"{prefix} client {c} request {r}"
                started = time.perf_counter()
                try:
                    answer: httpx.Response | httpx.HTTPError = await http.post(
                        f"/v1/flows/{FLOW}/runs", json={"question": question}
                    )
                except httpx.HTTPError as exc:
                    answer = exc
                _count(load, started, answer)
                bar.update()

    async def everyone() -> None:
        await asyncio.gather(*(client(c) for c in range(clients)))

    started, cpu = time.perf_counter(), time.process_time()
    asyncio.run(everyone())
    load.wall_s, load.client_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    return load


def recorded(server: Server, prefix: str, expected: int) -> str:
    """What the database holds for the load's questions: each recorded once, succeeded, and no run
    of the flow left running."""
    runs = server.app.store.list_runs(FLOW, limit=CHECK_LIMIT)
    mine = Counter(r.question for r in runs if r.question.startswith(f"{prefix} client "))
    statuses = Counter(str(r.status) for r in runs if r.question.startswith(f"{prefix} client "))
    twice = sum(1 for n in mine.values() if n > 1)
    running = sum(1 for r in runs if r.status in (RunStatus.RUNNING, RunStatus.WAITING_APPROVAL))
    shown = ", ".join(f"{status} {n}" for status, n in sorted(statuses.items()))
    return (
        f"runs recorded {len(mine)} of {expected} ({shown}), recorded twice {twice}, left running {running}"
    )


def workers_name(workers: int) -> str:
    return f"{workers} worker{'s' * (workers > 1)}"


def serve(tmp: Path, workers: int, args: argparse.Namespace, in_process_p50: float) -> tuple[Load, Load]:
    """One server start: warm-up, the sequential requests, then the load; its lines printed."""
    folder = tmp / f"workers-{workers}"
    folder.mkdir()
    total = args.sequential + args.clients * args.requests
    with api_server(folder, "--workers", str(workers), *UNLIMITED, flows={FLOW: FLOWS[FLOW]}) as server:
        # WARM_UP connections at once, so that every worker has answered before any timing
        warm = concurrent(server, WARM_UP, 1, tqdm(disable=True), "warm-up")
        with tqdm(total=total, desc=workers_name(workers), file=sys.stderr, unit="req") as bar:
            alone = sequential(server, args.sequential, bar)
            load = concurrent(server, args.clients, args.requests, bar, "load")
        check = recorded(server, "load", args.clients * args.requests)
        log = server.log.read_text(errors="replace")
    report(workers_name(workers), args, alone, load, in_process_p50)
    print(f"{workers_name(workers)}: {check}")
    errors = warm.errors + alone.errors + load.errors
    for what, n in errors.most_common(10):
        print(f"  error x{n}: {what}")
    if errors:
        print(f"  the server's log ({len(log.splitlines())} lines) ends:")
        print("\n".join("    " + line for line in log.splitlines()[-40:]))
    return alone, load


def report(name: str, args: argparse.Namespace, alone: Load, load: Load, in_process_p50: float) -> None:
    alone_p50 = percentile(alone.latencies_ms, 50)
    print(
        f"{name}: sequential, 1 client: {alone.requests} requests, errors {sum(alone.errors.values())}, "
        f"p50 {alone_p50:.2f} ms, p95 {percentile(alone.latencies_ms, 95):.2f} ms; "
        f"overhead at p50 {alone_p50 - in_process_p50:.2f} ms"
    )
    print(
        f"{name}: {args.clients} clients x {args.requests} requests: {load.requests} requests, "
        f"errors {sum(load.errors.values())}, p50 {percentile(load.latencies_ms, 50):.1f} ms, "
        f"p95 {percentile(load.latencies_ms, 95):.1f} ms, "
        f"throughput {load.requests / load.wall_s:.0f} req/s ({load.wall_s:.1f} s; "
        f"the clients' own CPU {load.client_cpu_s:.1f} s)"
    )


def summary(alone: Load, load: Load, in_process_p50: float) -> str:
    return (
        f"{load.requests} requests, errors {sum(load.errors.values())}, "
        f"p50 {percentile(load.latencies_ms, 50):.1f} ms, "
        f"p95 {percentile(load.latencies_ms, 95):.1f} ms, "
        f"overhead {percentile(alone.latencies_ms, 50) - in_process_p50:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients in the load")
    parser.add_argument("--requests", type=int, default=20, help="requests per client in the load")
    parser.add_argument(
        "--workers-list", default="1,2", help="uvicorn workers of each server start, comma-separated"
    )
    parser.add_argument(
        "--sequential",
        type=int,
        default=200,
        help="sequential runs in process, and requests per server, for the overhead",
    )
    args = parser.parse_args()
    workers_list = [int(w) for w in args.workers_list.split(",") if w.strip()]

    with tempfile.TemporaryDirectory(prefix="flowcall-api-bench-") as name:
        tmp = Path(name)
        os.environ["FLOWCALL_HOME"] = str(tmp / "home")  # nothing of the user's ~/.flowcall
        with tqdm(total=args.sequential, desc="in process", file=sys.stderr, unit="run") as bar:
            own = in_process(tmp, args.sequential, bar)
        own_p50 = percentile(own, 50)
        print(
            f"flow {FLOW!r} (no tools, scripted schema model), SQLite in a temporary folder, "
            f"{os.cpu_count()} CPUs shared by client and server"
        )
        print(
            f"in process: FlowCall.run, {len(own)} sequential runs: p50 {own_p50:.2f} ms, "
            f"p95 {percentile(own, 95):.2f} ms"
        )
        results = {w: serve(tmp, w, args, own_p50) for w in workers_list}

    reported = min(workers_list)
    for workers, (alone, load) in results.items():
        print(f"api, {workers_name(workers)}: {summary(alone, load, own_p50)}")
    print(f"api: {summary(*results[reported], own_p50)}")


if __name__ == "__main__":
    main()
