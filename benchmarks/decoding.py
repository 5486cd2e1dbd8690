"""Plain and fast decoding of the embedded model, side by side (issue 49).

One process, one model, nothing else running. Each case is run in three ways, in turn:
plain (one token per forward pass, llama.cpp's grammar: FLOWCALL_DECODING=plain), fast
(the schema's forced tokens appended in one pass: the default) and draft (fast, and
prompt-lookup drafts checked in the same pass). Cases: the commute card (the commute flow, --runs times),
the create-task flow, and the first --bfcl BFCL simple cases of the odd split (schema way).

- time: the commute flow's wall time, median of --runs, plain against fast;
- first text: from the start of the card's polish step to the first piece of its text a
  watcher is shown, against that step's whole time (fast decoding);
- same answers: a case's answers are the same when every model step of it wrote the same
  tokens with drafts (draft) as without (fast): drafts are checked by the model's own greedy
  picks, so they may only change what is written where batching turns a near tie;
- plain against fast: the same calls and verdicts (BFCL), the same card (as JSON values);
- the cost of one pass over k tokens against k single passes, which bounds what any way of
  reading several tokens per pass can save on this machine.

    .venv/bin/python benchmarks/decoding.py [--runs 3] [--bfcl 20]

Its last line is exactly `decoding: commute plain P s, fast F s (ratio R), first text T s; same answers N/M`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowcall.core import progress  # noqa: E402
from flowcall.core.spec import load_flow  # noqa: E402
from flowcall.core.steps import StepKind  # noqa: E402
from flowcall.providers.local import LocalProvider  # noqa: E402
from flowcall.service.front import FlowCall  # noqa: E402
from tests.support.example_checks import users_clock  # noqa: E402

WAYS = ("plain", "fast", "draft")
FLOWS = {
    "commute_weather": "我明天要在成都上下班通勤,会下雨吗?",
    "create_task": "添加任务:写周报,优先级高,截止 2026-11-27",
}


class FirstText:
    """A watcher that notes when the polish step starts and when its first text arrives."""

    def __init__(self) -> None:
        self.kind = ""
        self.began = self.first = self.over = 0.0

    def started(self, kind: str, label: str) -> None:
        self.kind = kind
        if kind == "polish":
            self.began = time.perf_counter()

    def text(self, piece: str) -> None:
        if self.kind == "polish" and not self.first:
            self.first = time.perf_counter()

    def ended(self) -> None:
        if self.kind == "polish" and not self.over:
            self.over = time.perf_counter()


def set_way(provider: LocalProvider, way: str) -> None:
    os.environ["FLOWCALL_DECODING"] = way


def written(steps: list[Any]) -> list[str]:
    """What each model step wrote, exactly."""
    out = []
    for step in steps:
        if step.kind in (StepKind.MODEL_CALL, StepKind.POLISH) and step.response:
            out.append(((step.response.get("choices") or [{}])[0]).get("text") or "")
    return out


def counts(steps: list[Any]) -> dict[str, int]:
    total: dict[str, int] = {}
    for step in steps:
        for key, value in ((step.response or {}).get("decoding") or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[key] = total.get(key, 0) + value
    return total


def flow_case(service: FlowCall, provider: LocalProvider, key: str, way: str) -> dict[str, Any]:
    flow = load_flow(ROOT / "flows" / f"{key}.json")
    question = FLOWS[key]
    set_way(provider, way)
    watcher = FirstText()
    started = time.perf_counter()
    with progress.watching(watcher):
        run = service.run(flow, question)
    wall = time.perf_counter() - started
    if run.status != "succeeded":
        raise SystemExit(f"{key} ({way}) did not succeed: {run.error}")
    answer = run.final_answer
    try:
        value = json.loads(answer) if isinstance(answer, str) else answer
    except ValueError:
        value = answer
    return {
        "wall": wall,
        "written": written(run.steps),
        "answer": value,
        "counts": counts(run.steps),
        "first": (watcher.first - watcher.began) if watcher.first else None,
        "polish": (watcher.over - watcher.began) if watcher.over else None,
    }


def bfcl_case(provider: LocalProvider, case: Any, way: str) -> dict[str, Any]:
    from flowcall.core.spec import DecisionConfig, Flow
    from flowcall.core.steps import MemorySink
    from flowcall.engine.loop import Engine
    from flowcall.eval.bfcl_check import check
    from flowcall.tools.registry import ToolRegistry

    set_way(provider, way)
    engine = Engine(ToolRegistry(), lambda cfg: provider, MemorySink())
    decision = DecisionConfig(provider="local", model=provider.model, calling_way="schema", max_tokens=512)
    flow = Flow(name="bfcl-simple", decision=decision, parallel_tool_calls=True, max_rounds=1)
    started = time.perf_counter()
    run, turn = engine.decide_only(flow, case.messages, case.tools, label=f"bfcl-{case.id}")
    calls = [(case.original_name(c.name), c.arguments) for c in (turn.tool_calls if turn else [])]
    judged = check(case, calls) if turn else None
    return {
        "wall": time.perf_counter() - started,
        "written": written(run.steps),
        "answer": (bool(judged and judged.valid), calls),
        "counts": counts(run.steps),
    }


def summary(name: str, results: dict[str, list[dict[str, Any]]]) -> tuple[str, int, int]:
    """One line per case family; returns it with (same with and without drafts, cases)."""
    n = len(results["fast"])
    same_draft = sum(a["written"] == b["written"] for a, b in zip(results["draft"], results["fast"]))
    same_plain = sum(a["answer"] == b["answer"] for a, b in zip(results["fast"], results["plain"]))
    medians = {w: statistics.median(r["wall"] for r in results[w]) for w in WAYS}
    fast, draft = counts_total(results["fast"]), counts_total(results["draft"])
    line = (
        f"{name:<16} {n:>3} cases: plain {medians['plain']:6.2f} s, fast {medians['fast']:6.2f} s "
        f"({medians['fast'] / medians['plain']:.2f}x), draft {medians['draft']:6.2f} s "
        f"({medians['draft'] / medians['plain']:.2f}x); fast: {fast.get('passes', 0)} passes for "
        f"{fast.get('picked', 0) + fast.get('forced', 0)} tokens ({fast.get('forced', 0)} forced); draft: "
        f"{draft.get('accepted', 0)}/{draft.get('drafted', 0)} guessed tokens kept; fast answered as plain "
        f"{same_plain}/{n}; same tokens with drafts as without {same_draft}/{n}"
    )
    return line, same_draft, n


def pass_costs(provider: LocalProvider, sizes: tuple[int, ...] = (1, 4, 8, 16)) -> str:
    """What one forward pass over k new tokens costs against k single passes: the floor of any
    way that reads several tokens per pass (median of 3 each)."""
    from flowcall.providers.fast_decoding import FastDecoder

    llm = provider.llm
    prompt = provider.prefix.tokens("<|im_start|>user\nWrite a long story about a cat.<|im_end|>\n")
    provider.prefix.prepare(prompt)
    reader = FastDecoder(llm, constraint=None)
    reader._read(prompt[llm.n_tokens :], len(prompt) - llm.n_tokens - 1)
    base, costs = llm.n_tokens, {}
    for k in sizes:
        times = []
        for _ in range(3):
            llm.n_tokens = base
            started = time.perf_counter()
            reader._read([1000 + i for i in range(k)], k - 1)
            times.append(time.perf_counter() - started)
        costs[k] = statistics.median(times)
    llm.n_tokens = base
    return "one pass over k tokens, as single passes: " + ", ".join(
        f"k={k} {costs[k] * 1000:.0f} ms ({costs[k] / (k * costs[1]):.2f})" for k in sizes
    )


def counts_total(results: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for r in results:
        for key, value in r["counts"].items():
            total[key] = total.get(key, 0) + value
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="commute runs per way (median)")
    parser.add_argument("--bfcl", type=int, default=20, help="BFCL simple cases, odd split (0: skip)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="flowcall-decoding-"))
    os.environ.setdefault("FLOWCALL_DATABASE_URL", f"sqlite:///{scratch}/d.db")
    provider = LocalProvider.shared()
    service = FlowCall.open()
    service.provider_factory = lambda cfg: provider
    lines, same, total = [], 0, 0
    with users_clock():
        for way in WAYS:  # warm: every prompt prefix read once, so no way pays the first reading
            flow_case(service, provider, "commute_weather", way)
        for key, repeats in (("commute_weather", args.runs), ("create_task", 1)):
            results: dict[str, list[dict[str, Any]]] = {w: [] for w in WAYS}
            for n in range(repeats):
                for way in WAYS:
                    results[way].append(flow_case(service, provider, key, way))
                print(f"  {key} {n + 1}/{repeats}", file=sys.stderr, end="\r")
            line, s, t = summary(key, results)
            lines.append(line)
            same, total = same + (s == t), total + 1
            if key == "commute_weather":
                commute = results
        if args.bfcl:
            from flowcall.eval import load_cases

            results = {w: [] for w in WAYS}
            for n, case in enumerate(load_cases("simple")[1::2][: args.bfcl], 1):
                for way in WAYS:
                    results[way].append(bfcl_case(provider, case, way))
                print(f"  bfcl simple {n}/{args.bfcl}", file=sys.stderr, end="\r")
            line, s, t = summary("bfcl odd simple", results)
            lines.append(line)
            same, total = same + s, total + t
    lines.append(pass_costs(provider))
    for line in lines:
        print(line)
    plain = statistics.median(r["wall"] for r in commute["plain"])
    fast = statistics.median(r["wall"] for r in commute["fast"])
    firsts = [r["first"] for r in commute["fast"] if r["first"] is not None]
    polish = [r["polish"] for r in commute["fast"] if r["polish"]]
    first = statistics.median(firsts) if firsts else float("nan")
    if polish:
        print(
            f"the card's first text after {first:.2f} s of its {statistics.median(polish):.2f} s polish step"
        )
    print(
        f"decoding: commute plain {plain:.2f} s, fast {fast:.2f} s (ratio {fast / plain:.2f}), "
        f"first text {first:.2f} s; same answers {same}/{total}"
    )


if __name__ == "__main__":
    main()
