"""Reliability figures (issue 11, point 7): concurrent runs, fault classes, fuzzed inputs, kill -9.

    .venv/bin/python benchmarks/reliability.py                  # the issue's sizes
    .venv/bin/python benchmarks/reliability.py --concurrency 2 --fuzz-examples 20 --kills 0   # a smoke run
    .venv/bin/python benchmarks/reliability.py --parts concurrency,faults --no-postgres

Each figure is printed as it is measured. The LAST line is always exactly

    kills: N, steps lost: L, unfinished: U, lock errors: K, crashes: C

N kill -9s done, L committed steps lost (kill part, plus steps a concurrent run reported that
the database does not have), U runs that did not finish after resume (kill part), K lock errors
(concurrency part), C crashes (fuzz + fault classes + concurrent runs that failed otherwise: an
input or a fault that ended in anything but a recorded, clear outcome). The targets are 0 for
L, U, K and C.

The parts (what each runs and what it counts: tests/support/reliability.py, and
tests/support/kill_resume.py for the kills; tests/reliability/ runs them at small sizes):

- concurrency: N runs at once through the real CLI against one database, SQLite and PostgreSQL.
- faults: each fault class once (provider errors, a crashed MCP server, a hung tool, a huge
  result, the database connection dropped); each must end as a recorded run with a clear error.
- fuzz: hypothesis-generated flow imports, run imports, tool calls, OpenAPI documents and MCP
  tool lists; each bad input must be refused with a clear error and no partial write.
- kills: kill -9 at random points of real CLI runs, then `flowcall runs resume` until each ends.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.kill_resume import kill_and_resume as measure_kills  # noqa: E402
from tests.support.reliability import (  # noqa: E402
    FaultFigure,
    FuzzFigure,
    backends,
    concurrency,
    db_drop_runs,
    fault_huge_result,
    fault_hung_tool,
    fault_malformed_arguments,
    fault_mcp_crash,
    fault_provider_429,
    fault_provider_500,
    fault_provider_malformed_body,
    fault_provider_not_completion,
    fault_provider_timeout,
    fuzz_flow_import,
    fuzz_mcp_schemas,
    fuzz_openapi,
    fuzz_run_import,
    fuzz_tool_calls,
    postgres_available,
)


def all_faults(url: str, backend: str) -> list[FaultFigure]:
    cases: list[Callable[[str], FaultFigure]] = [
        fault_provider_429,
        fault_provider_500,
        fault_provider_timeout,
        fault_provider_malformed_body,
        fault_provider_not_completion,
        fault_malformed_arguments,
        fault_mcp_crash,
        fault_hung_tool,
        fault_huge_result,
    ]
    figures = []
    for case in cases:
        try:
            figure = case(url)
        except Exception as exc:  # noqa: BLE001 - the harness must report, not stop
            figure = FaultFigure(case.__name__, False, f"harness error {type(exc).__name__}: {exc}")
        figure.name = f"{figure.name} [{backend}]"
        print(figure.line(), flush=True)
        figures.append(figure)
    return figures


def all_fuzz(url: str, examples: int, *, with_url_free: bool = True) -> list[FuzzFigure]:
    parts: list[Callable[[], FuzzFigure]] = [
        lambda: fuzz_flow_import(url, examples),
        lambda: fuzz_run_import(url, examples),
        lambda: fuzz_tool_calls(url, examples),
    ]
    if with_url_free:
        parts += [lambda: fuzz_openapi(examples), lambda: fuzz_mcp_schemas(examples)]
    figures = []
    for part in parts:
        figure = part()
        print(figure.line(), flush=True)
        for failure in figure.failures:
            print(f"    {failure}", flush=True)
        figures.append(figure)
    return figures


def kill_and_resume(url: str, kills: int, model_kills: int, rng: random.Random) -> Any:
    """kill -9 at random points across runs, then `flowcall runs resume` to the end (the
    scripted runs' answers are checked against an uninterrupted run's; `model_kills` more on
    the embedded model), with the kills counted on stderr as they happen."""
    return measure_kills(
        url,
        kills,
        model_kills,
        rng,
        progress=lambda f: print(f"\rkill -9: {f.kills}/{f.target}", end="", file=sys.stderr, flush=True),
    )


# ================================================================ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=8, help="runs at once, as processes (default 8)")
    parser.add_argument("--rounds", type=int, default=10, help="tool rounds per concurrent run (default 10)")
    parser.add_argument("--fuzz-examples", type=int, default=500, help="inputs per fuzz target (default 500)")
    parser.add_argument("--kills", type=int, default=50, help="kill -9s, scripted model (default 50)")
    parser.add_argument(
        "--model-kills", type=int, default=5, help="kill -9s on the embedded model (default 5)"
    )
    parser.add_argument(
        "--parts",
        default="concurrency,faults,fuzz,kills",
        help="comma-separated: concurrency, faults, fuzz, kills (default all)",
    )
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    parts = {p.strip() for p in args.parts.split(",") if p.strip()}
    with_pg = not args.no_postgres and postgres_available()
    if not args.no_postgres and not with_pg:
        print("PostgreSQL is not reachable at 127.0.0.1:5432: SQLite only", flush=True)
    print(
        f"reliability: parts {sorted(parts)}, concurrency {args.concurrency}x{args.rounds} rounds, fuzz "
        f"{args.fuzz_examples} inputs a target, kills {args.kills}+{args.model_kills}, "
        f"backends {'sqlite, postgres' if with_pg else 'sqlite'}",
        flush=True,
    )

    lock_errors = crashes = lost = 0
    kill: Any = None
    started = time.perf_counter()
    for backend, url in backends(with_pg):
        if "concurrency" in parts:
            figures = concurrency(url, backend, args.concurrency, args.rounds)
            print(figures.line(), flush=True)
            for problem in figures.other_errors[:5]:
                print(f"    {problem}", flush=True)
            lock_errors += figures.lock_errors
            lost += figures.steps_lost  # steps a run reported that the database does not have
            crashes += len(figures.other_errors)
        if "faults" in parts:
            faults = all_faults(url, backend)
            if backend == "postgres":
                for figure in db_drop_runs(url):
                    print(figure.line(), flush=True)
                    faults.append(figure)
            crashes += sum(not f.ok for f in faults)
        if "fuzz" in parts:
            fuzz = all_fuzz(url, args.fuzz_examples, with_url_free=backend == "sqlite")
            crashes += sum(f.crashes + f.partial_writes for f in fuzz)
        if "kills" in parts and backend == "sqlite":
            kill = kill_and_resume(url, args.kills, args.model_kills, random.Random(args.seed))
            print(file=sys.stderr)
            print(
                f"kill -9: {kill.kills} kills, {kill.resumes} resumes, {kill.steps_lost} committed steps "
                f"lost, {kill.unfinished} runs unfinished after resume, {kill.answers_differ} answers differ",
                flush=True,
            )
            for problem in kill.problems:
                print(f"    {problem}", flush=True)
    print(f"({time.perf_counter() - started:.0f} s in all)", flush=True)
    kills, kill_lost, unfinished = (kill.kills, kill.steps_lost, kill.unfinished) if kill else (0, 0, 0)
    print(
        f"kills: {kills}, steps lost: {kill_lost + lost}, unfinished: {unfinished}, "
        f"lock errors: {lock_errors}, crashes: {crashes}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
