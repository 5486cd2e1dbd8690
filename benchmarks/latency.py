"""How far the embedded model's runs are from the machine's limit (issue 12, point 7).

Side by side, in one process:

1. raw speed of this model through llama-cpp-python, with the threads and build the product
   uses: prompt tokens/s (a 512-token prompt read from scratch) and generated tokens/s (128
   tokens), medians of 3;
2. for the commute flow and the employee flow: cold (the first run in this process, the model
   loaded before it) and warm (median of --warm runs) wall time, tokens read and written, and
   the *floor*: the time the tokens that no cache could hold would take at the raw speed. A
   prompt token can be cached when an earlier prompt of any run (or its answer) began with the
   same tokens; every generated token costs its time;
3. the ratio of warm time to floor;
4. BFCL `--split odd`, simple and irrelevance, the first --bfcl cases of each (schema way):
   median seconds per case with the prompt cache off (before) and on (after), the two run case
   by case in turn on the same cases, and whether every verdict stayed the same.

    .venv/bin/python benchmarks/latency.py [--warm 5] [--flows commute_weather,employee_lookup] [--bfcl 40]

The last line is exactly `commute warm median S s, floor F s, ratio R`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowcall.core import config  # noqa: E402
from flowcall.core.spec import load_flow  # noqa: E402
from flowcall.core.steps import StepKind  # noqa: E402
from flowcall.providers.local import LocalProvider  # noqa: E402
from flowcall.providers.prefix_cache import DiskStates, common_prefix  # noqa: E402
from flowcall.service.front import FlowCall  # noqa: E402
from tests.support.example_checks import users_clock  # noqa: E402

QUESTIONS = {
    "commute_weather": "我明天要在成都上下班通勤,会下雨吗?",
    "employee_lookup": "张三今年多大了?",
}


def cpu_name() -> str:
    """The CPU's name and its widest vector unit: "AMD EPYC" alone names both an AVX2-only and an
    AVX-512 machine, 3x apart in prompt speed."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    name = next(
        (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
        "unknown CPU",
    )
    flags = next(
        (line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []
    )
    widest = "AVX-512" if "avx512f" in flags else "AVX2 only" if "avx2" in flags else "no AVX2"
    return f"{name} ({widest})"


def raw_speed(provider: LocalProvider, repeats: int = 3) -> tuple[float, float]:
    """(prompt tokens/s, generated tokens/s) from scratch: reset() makes eval read every token."""
    llm = provider.llm
    prompt = llm.tokenize(("The weather in Chengdu is mild. " * 80).encode(), add_bos=False)[:512]
    read, written = [], []
    for _ in range(repeats):
        llm.reset()
        started = time.perf_counter()
        llm.eval(prompt)
        read.append(len(prompt) / (time.perf_counter() - started))
        llm.reset()
        llm.eval(prompt[:16])
        started, made = time.perf_counter(), 0
        for token in llm.generate(prompt[:16], temp=0.0, reset=False):
            made += 1
            if made >= 128:
                break
        written.append(made / (time.perf_counter() - started))
    llm.reset()
    return statistics.median(read), statistics.median(written)


class Floor:
    """Tokens no cache could hold, across every model call seen so far (this process)."""

    def __init__(self, provider: LocalProvider):
        self.provider = provider
        self.seen: list[list[int]] = []

    def uncachable(self, prompt: str, answer: str) -> int:
        tokens = self.provider.llm.tokenize(prompt.encode(), add_bos=False, special=True)
        best = max((common_prefix(tokens, s) for s in self.seen), default=0)
        self.seen.append(tokens + self.provider.llm.tokenize(answer.encode(), add_bos=False, special=True))
        return len(tokens) - best


def run_once(service: FlowCall, flow: Any, question: str, floor: Floor) -> dict[str, float]:
    started = time.perf_counter()
    run = service.run(flow, question)
    wall = time.perf_counter() - started
    read = written = new = 0
    for step in run.steps:
        if step.kind not in (StepKind.MODEL_CALL, StepKind.POLISH) or not step.rendered_prompt:
            continue
        read += step.tokens_in
        written += step.tokens_out
        text = ((step.response or {}).get("choices") or [{}])[0].get("text") or ""
        new += floor.uncachable(step.rendered_prompt, text)
    return {"wall": wall, "read": read, "written": written, "new": new, "status": str(run.status)}


def bfcl_before_after(cached: LocalProvider, limit: int) -> list[str]:
    """Per category: median s/case with the cache off and on, same cases, alternating."""
    from flowcall.core.spec import DecisionConfig, Flow
    from flowcall.core.steps import MemorySink
    from flowcall.engine.loop import Engine
    from flowcall.eval import load_cases
    from flowcall.eval.runner import evaluate_case
    from flowcall.tools.registry import ToolRegistry

    plain = LocalProvider(cached.path)
    plain.prefix.capacity = 0  # before: every prompt read from scratch
    decision = DecisionConfig(provider="local", model=cached.model, calling_way="schema", max_tokens=512)
    lines = []
    for category in ("simple", "irrelevance"):
        cases = load_cases(category)[1::2][:limit]
        seconds: dict[str, list[float]] = {"before": [], "after": []}
        same = 0
        for n, case in enumerate(cases, 1):
            verdicts = []
            for label, provider in (("before", plain), ("after", cached)):
                engine = Engine(ToolRegistry(), lambda cfg, p=provider: p, MemorySink())
                flow = Flow(
                    name=f"bfcl-{category}", decision=decision, parallel_tool_calls=True, max_rounds=1
                )
                started = time.perf_counter()
                outcome = evaluate_case(engine, flow, case)
                seconds[label].append(time.perf_counter() - started)
                verdicts.append((outcome.valid, outcome.calls))
            same += verdicts[0] == verdicts[1]
            print(f"  bfcl {category} {n}/{len(cases)}", file=sys.stderr, end="\r")
        before, after = statistics.median(seconds["before"]), statistics.median(seconds["after"])
        lines.append(
            f"bfcl odd {category:<12} {len(cases):>3} cases: {before:6.2f} s/case before, {after:6.2f} after "
            f"({before / after:.2f}x); same calls and verdicts in {same}/{len(cases)}"
        )
    plain.llm.close()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", type=int, default=5, help="warm runs per flow (median)")
    parser.add_argument("--flows", default="commute_weather,employee_lookup")
    parser.add_argument("--bfcl", type=int, default=40, help="BFCL odd-split cases per category (0: skip)")
    args = parser.parse_args()
    threads = config.model_threads()
    scratch = Path(tempfile.mkdtemp(prefix="flowcall-latency-"))
    os.environ.setdefault("FLOWCALL_DATABASE_URL", f"sqlite:///{scratch}/l.db")
    os.environ["FLOWCALL_PROMPT_CACHE_DISK_MB"] = "0"  # the disk tier is given a folder of its own below
    provider = LocalProvider.shared()
    provider.prefix.disk = DiskStates(scratch / "states", 2048 * 2**20, "latency")
    pp, tg = raw_speed(provider)
    print(f"latency on {cpu_name()}, {os.cpu_count()} CPUs, {threads} threads, model {provider.path.name}")
    print(f"raw speed: prompt {pp:.1f} tokens/s, generation {tg:.1f} tokens/s")
    print(
        "cold: first run in a process with empty caches; warm: median of the next runs; next process: a new "
        "model instance with an empty memory that finds the states on disk (a one-shot `flowcall run`)"
    )
    print(
        f"{'flow':<16} {'cold s':>7} {'warm s':>7} {'next process s':>15} {'read':>6} {'written':>8} "
        f"{'uncachable':>11} {'floor s':>8} {'warm/floor':>10}"
    )
    commute: tuple[float, float] | None = None
    with users_clock():
        service = FlowCall.open()
        for key in [f.strip() for f in args.flows.split(",") if f.strip()]:
            flow = load_flow(ROOT / "flows" / f"{key}.json")
            floor = Floor(provider)
            cold = run_once(service, flow, QUESTIONS[key], floor)
            warm = [run_once(service, flow, QUESTIONS[key], floor) for _ in range(args.warm)]
            fresh = LocalProvider(provider.path)
            fresh.prefix.disk = DiskStates(scratch / "states", 2048 * 2**20, "latency")
            next_process = run_once(
                FlowCall(store=service.store, provider_factory=lambda cfg: fresh),
                flow,
                QUESTIONS[key],
                Floor(fresh),
            )
            fresh.llm.close()
            median = statistics.median(w["wall"] for w in warm)
            last = warm[-1]
            floor_s = last["new"] / pp + last["written"] / tg
            print(
                f"{key:<16} {cold['wall']:>7.2f} {median:>7.2f} {next_process['wall']:>15.2f} "
                f"{last['read']:>6} {last['written']:>8} {last['new']:>11} "
                f"{floor_s:>8.2f} {median / floor_s:>10.1f}"
            )
            if key == "commute_weather":
                commute = (median, floor_s)
    if args.bfcl:
        for line in bfcl_before_after(provider, args.bfcl):
            print(line)
    if commute:
        print(
            f"commute warm median {commute[0]:.2f} s, floor "
            f"{commute[1]:.2f} s, ratio {commute[0] / commute[1]:.1f}"
        )


if __name__ == "__main__":
    main()
