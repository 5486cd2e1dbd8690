"""Scaling on workers (issue 13, point 5): a 200-item experiment run by 1, 2 and 4 `flowcall
worker` processes over the real Redis and PostgreSQL on 127.0.0.1, with an OpenAI-compatible
stand-in model (flowcall/testing/fake_server.py) that answers every request after a fixed 200 ms.

Each run asks the model twice (decision, then polish: 400 ms of model) and runs a read-only
plugin tool (time/v1/get_current_time) in between. For each number of workers, fresh worker
processes are started, warmed up on a few items, then given the experiment. Printed:

- items/s, from the submission of the experiment to its end (recording its 200 queued runs
  included), and the speed-up over 1 worker;
- queue wait in the experiment: submit -> start of each run (queued_at -> started_at). All 200
  are submitted at once, so this is mostly the backlog: items wait for a free worker;
- gap between runs: how long a worker takes from the end of one run to the start of its next
  (scoring, acknowledging, taking the next task, claiming it), when a task is waiting;
- overhead outside the model: a run's time (start to end) less its model steps' latency;
- queue latency with idle workers: single runs submitted one at a time, submit -> start. The
  last line's Q is its p95 with 4 workers: what the queue adds when a worker is free.

Last line, exactly: `workers 4: speedup S, queue p95 Q ms`.

    python benchmarks/workers.py [--items 200] [--workers 1,2,4] [--delay-ms 200] [--idle-runs 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowcall.core.datasets import DatasetItem  # noqa: E402
from flowcall.core.experiment_record import percentile  # noqa: E402
from flowcall.core.spec import parse_flow  # noqa: E402
from flowcall.core.steps import Run, StepKind  # noqa: E402
from flowcall.service.door import choose, start_run  # noqa: E402
from flowcall.testing.fake_server import FakeModelServer  # noqa: E402
from flowcall.workers.local_workers import LocalWorkers, scratch_database, scratch_redis  # noqa: E402

FLOW = {
    "format": "flowcall.flow/v1",
    "name": "workers-bench",
    "tools": ["time/v1/get_current_time"],
    "max_rounds": 1,
    "decision": {"provider": "openai-compatible", "model": "fake", "calling_way": "native"},
    "polish": {"provider": "openai-compatible", "model": "fake"},
}


def ms(seconds: float) -> float:
    return seconds * 1000


def p50_p95(values: list[float]) -> str:
    return f"{percentile(values, 50):7.1f} / {percentile(values, 95):7.1f}" if values else "      - /       -"


def experiment_figures(runs: list[Run]) -> dict[str, list[float]]:
    waits, overhead, gaps = [], [], []
    by_worker: dict[str, list[Run]] = {}
    for run in runs:
        waits.append(ms((run.started_at - run.queued_at).total_seconds()))
        model = sum(s.latency_ms for s in run.steps if s.kind in (StepKind.MODEL_CALL, StepKind.POLISH))
        overhead.append(ms((run.ended_at - run.started_at).total_seconds()) - model)
        by_worker.setdefault(run.owner or "?", []).append(run)
    for owned in by_worker.values():
        owned.sort(key=lambda r: r.started_at)
        for before, after in zip(owned, owned[1:]):
            if after.queued_at <= before.ended_at:  # its task was waiting when the worker came free
                gaps.append(ms((after.started_at - before.ended_at).total_seconds()))
    return {"waits": waits, "overhead": overhead, "gaps": gaps}


def run_experiment(app, flow, dataset: str, timeout_s: float) -> tuple[float, list[Run]]:
    from flowcall.eval.experiments import submit
    from flowcall.store.experiments import get_experiment

    began = time.perf_counter()
    experiment = submit(app, flow, "workers-bench", dataset)
    deadline = time.monotonic() + timeout_s
    while get_experiment(app.store, experiment.id).status.value == "running":
        if time.monotonic() > deadline:
            raise SystemExit(f"experiment {experiment.id} did not finish within {timeout_s:g} s")
        time.sleep(0.05)
    wall = time.perf_counter() - began
    ended = get_experiment(app.store, experiment.id)
    runs = [app.store.get_run(item.run_id) for item in ended.items]
    failed = [r for r in runs if r.status.value != "succeeded"]
    if failed:
        raise SystemExit(
            f"{len(failed)} runs did not succeed, e.g. {failed[0].id}: {failed[0].status} {failed[0].error}"
        )
    return wall, runs


def idle_latency(app, flow, count: int) -> list[float]:
    """Single runs, one at a time, each submitted when every worker is idle."""
    found = []
    for n in range(count):
        run = start_run(app, choose(app, None, queue=True), flow, f"idle {n}")
        run = app.follow(run.id, poll_s=0.02, timeout_s=60)
        found.append(ms((run.started_at - run.queued_at).total_seconds()))
        time.sleep(0.05)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--delay-ms", type=float, default=200)
    parser.add_argument("--idle-runs", type=int, default=20)
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="flowcall-workers-bench-"))

    with (
        scratch_database(prefix="flowcall_bench") as db,
        scratch_redis() as broker_url,
        FakeModelServer(delay_s=args.delay_ms / 1000) as model,
    ):
        settings = {
            "FLOWCALL_DATABASE_URL": db,
            "FLOWCALL_BROKER_URL": broker_url,
            "FLOWCALL_QUEUE": "flowcall-bench",
            "OPENAI_COMPATIBLE_BASE_URL": model.base_url,
            "FLOWCALL_HOME": str(folder / "home"),
            "FLOWCALL_PROMPT_CACHE_DISK_MB": "0",
        }
        os.environ.update(settings)
        from flowcall.service.front import FlowCall
        from flowcall.store.datasets import save_dataset

        app = FlowCall.open(db)
        flow = parse_flow(FLOW)
        save_dataset(
            app.store,
            "bench",
            [DatasetItem(question=f"现在几点了? #{n}") for n in range(args.items)],
            source="benchmarks/workers.py",
        )
        print(
            f"{args.items} items, model {args.delay_ms:g} ms per request (2 per run), {os.cpu_count()} CPUs; "
            f"PostgreSQL {db.rsplit('/', 1)[1]}, Redis {broker_url}",
            flush=True,
        )
        header = (
            f"{'workers':>7} {'wall s':>7} {'items/s':>8} {'speedup':>8}  {'queue wait p50/p95 ms':>22}  "
            f"{'gap between runs p50/p95 ms':>27}  {'overhead outside model p50/p95 ms':>33}  "
            f"{'idle queue latency p50/p95 ms':>29}"
        )
        print(header)
        base, last = None, None
        for count in counts:
            save_dataset(
                app.store,
                f"warm-{count}",
                [DatasetItem(question=f"warm {n}") for n in range(2 * count)],
                source="benchmarks/workers.py",
            )
            with LocalWorkers(count, {**os.environ}, folder / f"logs-{count}", loglevel="WARNING") as workers:
                workers.wait_ready(timeout_s=120)
                run_experiment(app, flow, f"warm-{count}", 120)
                wall, runs = run_experiment(app, flow, "bench", 60 + args.items * 2.0)
                idle = idle_latency(app, flow, args.idle_runs)
            rate = args.items / wall
            base = base or rate
            figures = experiment_figures(runs)
            last = (count, rate / base, percentile(idle, 95))
            print(
                f"{count:>7} {wall:>7.1f} {rate:>8.2f} {rate / base:>7.2f}x  {p50_p95(figures['waits']):>22} "
                f" {p50_p95(figures['gaps']):>27}  {p50_p95(figures['overhead']):>33}  {p50_p95(idle):>29}",
                flush=True,
            )
        app.store.close()
    count, speedup, q95 = last
    print(f"workers {count}: speedup {speedup:.2f}, queue p95 {q95:.0f} ms")


if __name__ == "__main__":
    main()
