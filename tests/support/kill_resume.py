"""kill -9 at random points, then `flowcall runs resume` until the run ends: `kill_and_resume`,
run small by tests/reliability/test_kill_resume.py and at full size by benchmarks/kill_resume.py.

Each run is the real CLI (`python -m flowcall.cli.main run FLOW.json ...`) in its own process, on
the real store, with real plugin tools (kill_plugins/ beside this file: tools that take a moment
and log each execution, half of them read-only). The scripted runs' model is the product's
schema-driven model (`provider: scripted, model: schema`), a pure function of its request,
so a resumed run must end with exactly the answer of an uninterrupted one. The embedded-model
runs use an example flow. A kill lands at a uniform random moment of the process's life; the
resume that follows may itself be killed (each kill counts). After every kill the committed
steps are read; after the last resume they must all still be there, unchanged.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = Path(__file__).resolve().parent / "kill_plugins"
TOOLS = [
    "bench/v1/read_alpha",
    "bench/v1/write_beta",
    "bench/v1/read_gamma",
    "bench/v1/write_delta",
    "bench/v1/read_epsilon",
]
QUESTION = "run every step of the benchmark"
MODEL_FLOW = ROOT / "flows" / "current_time.json"
MODEL_QUESTION = "现在几点了?"
FINAL = {"succeeded", "failed", "cancelled"}


@dataclass
class KillFigures:
    kills: int = 0
    steps_lost: int = 0
    unfinished: int = 0
    answers_differ: int = 0  # scripted runs whose final answer differs from an uninterrupted run's
    resumes: int = 0
    target: int = 0  # the kills asked for so far; a killed resume counts toward them
    note: str = ""
    problems: list[str] = field(default_factory=list)


def scripted_flow(folder: Path) -> Path:
    path = folder / "kill_bench_flow.json"
    path.write_text(
        json.dumps(
            {
                "format": "flowcall.flow/v1",
                "name": "kill-bench",
                "tools": TOOLS,
                "max_rounds": len(TOOLS) + 1,
                "parallel_tool_calls": False,
                "decision": {"provider": "scripted", "model": "schema"},
            }
        )
    )
    return path


def _env(url: str, work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "FLOWCALL_DATABASE_URL": url,
        "FLOWCALL_PLUGIN_DIRS": str(PLUGINS),
        "KILL_BENCH_LOG": str(work / "executions.log"),
        "PYTHONPATH": str(ROOT),
    }


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "flowcall.cli.main", *args]


def _store(url: str):
    from flowcall.store import Store

    return Store.open(url)


def _newest_run(store, flow_name: str, known: set[str]) -> Any:
    fresh = [r for r in store.list_runs(flow_name=flow_name, limit=20) if r.id not in known]
    return store.get_run(fresh[0].id) if fresh else None


def _dump(steps: list[Any]) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in steps]


def _killed(command: list[str], env: dict[str, str], after_s: float) -> bool:
    """Start `command`, SIGKILL it after `after_s` seconds; True if it was still running then."""
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        process.wait(timeout=after_s)
        return False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return True


def _uninterrupted(flow_file: Path, question: str, env: dict[str, str]) -> tuple[float, Any]:
    """One whole run: its wall time and its answer."""
    started = time.perf_counter()
    done = subprocess.run(
        _cli("run", str(flow_file), question, "--json", "--quiet"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"the uninterrupted run failed (exit {done.returncode}): {done.stderr.strip()[-500:]}"
        )
    return time.perf_counter() - started, json.loads(done.stdout)["final_answer"]


def _resume_until_done(
    store,
    run_id: str,
    env: dict[str, str],
    rng: random.Random,
    duration: float,
    figures: KillFigures,
    committed: list[dict[str, Any]],
    kill_resumes: bool,
) -> Any:
    """Resume (maybe killing the resume too) until the run ends; check nothing committed was lost."""
    for _attempt in range(20):
        run = store.get_run(run_id)
        if str(run.status) in FINAL:
            return run
        command = _cli("runs", "resume", run_id, "--quiet")
        if str(run.status) == "waiting_approval":  # a call that may have run already: a person says yes
            command.append("--approve-all")
        figures.resumes += 1
        if kill_resumes and figures.kills < figures.target and rng.random() < 0.3:
            if _killed(command, env, rng.uniform(0.2, duration)):
                figures.kills += 1
                after = _dump(store.get_run(run_id).steps)
                figures.steps_lost += _lost(committed, after)
                committed[:] = after
                continue
        subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=900)
    return store.get_run(run_id)


def _lost(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int:
    """Committed steps missing or changed."""
    return sum(1 for i, step in enumerate(before) if i >= len(after) or after[i] != step)


def kill_and_resume(
    url: str, kills: int, model_kills: int, rng: random.Random, progress: Any = None
) -> KillFigures:
    figures = KillFigures()
    work = Path(tempfile.mkdtemp(prefix="flowcall-kills-"))
    env = _env(url, work)
    store = _store(url)
    try:
        flow_file = scripted_flow(work)
        duration, expected = _uninterrupted(flow_file, QUESTION, env)
        known = {r.id for r in store.list_runs(limit=1000)}
        figures.target = kills
        while figures.kills < kills:
            _one(store, flow_file, QUESTION, "kill-bench", env, rng, duration, figures, known, expected, True)
            if progress:
                progress(figures)
        if model_kills:
            model_duration, _ = _uninterrupted(MODEL_FLOW, MODEL_QUESTION, env)
            figures.target = kills + model_kills
            known = {r.id for r in store.list_runs(limit=1000)}
            name = json.loads(MODEL_FLOW.read_text())["name"]
            while figures.kills < kills + model_kills:
                _one(
                    store,
                    MODEL_FLOW,
                    MODEL_QUESTION,
                    name,
                    env,
                    rng,
                    model_duration,
                    figures,
                    known,
                    None,
                    False,
                )
                if progress:
                    progress(figures)
    finally:
        store.close()
    return figures


def _one(
    store,
    flow_file: Path,
    question: str,
    flow_name: str,
    env: dict[str, str],
    rng: random.Random,
    duration: float,
    figures: KillFigures,
    known: set[str],
    expected: Any,
    kill_resumes: bool,
) -> None:
    """One run killed at a random moment, then resumed to its end."""
    if not _killed(_cli("run", str(flow_file), question, "--quiet"), env, rng.uniform(0.1, duration)):
        return  # it ended before the kill: try again
    figures.kills += 1
    run = _newest_run(store, flow_name, known)
    if run is None:
        return  # killed before the run was recorded: nothing to lose or resume
    known.add(run.id)
    committed = _dump(run.steps)
    final = _resume_until_done(store, run.id, env, rng, duration, figures, committed, kill_resumes)
    figures.steps_lost += _lost(committed, _dump(final.steps))
    if str(final.status) != "succeeded":
        figures.unfinished += 1
        figures.problems.append(f"run {run.id[:8]} ended {final.status}: {final.error}")
    elif expected is not None and final.final_answer != expected:
        figures.answers_differ += 1
        figures.problems.append(f"run {run.id[:8]} answered {final.final_answer!r}, not {expected!r}")
