"""How a decision's time grows with the tools attached (issue 12, point 2).

Real function docs from BFCL (simple and multiple, both splits): for each question (odd-split
simple cases), the function it needs plus distractors up to N tools, N = 1, 4, 16, 64. Each
tool list is used three times on the embedded model, schema way, as a flow's runs would:
cold (the first run with these tools, another question), warm (the next run: this question,
new to the process), and again (the same question once more). Printed: median seconds, model
calls, prompt tokens read and evaluated when warm, and whether the right function was called;
then the warm ratio of 64 tools to 4.

    .venv/bin/python benchmarks/tool_count.py [--questions 5] [--counts 1,4,16,64]

The last line is `tools 64/4 warm ratio R`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowcall.calling import shortlist  # noqa: E402
from flowcall.core.messages import ToolSpec  # noqa: E402
from flowcall.core.spec import DecisionConfig, Flow  # noqa: E402
from flowcall.core.steps import MemorySink, StepKind  # noqa: E402
from flowcall.engine.loop import Engine  # noqa: E402
from flowcall.eval import load_cases  # noqa: E402
from flowcall.providers.local import LocalProvider  # noqa: E402
from flowcall.tools.registry import ToolRegistry  # noqa: E402


def tool_pool() -> list[ToolSpec]:
    """Every distinct BFCL function (by name), in a fixed order."""
    pool: dict[str, ToolSpec] = {}
    for category in ("simple", "multiple"):
        for case in load_cases(category):
            for tool in case.tools:
                pool.setdefault(tool.name, tool)
    return [pool[name] for name in sorted(pool)]


def decide(engine: Engine, flow: Flow, case, tools: list[ToolSpec]) -> dict:
    started = time.perf_counter()
    run, turn = engine.decide_only(flow, case.messages, tools, label="tool-count")
    wall = time.perf_counter() - started
    steps = [s for s in run.steps if s.kind == StepKind.MODEL_CALL]
    evaluated = sum(
        ((s.response or {}).get("timings") or {}).get("prompt_tokens_evaluated", 0) for s in steps
    )
    called = [c.name for c in turn.tool_calls] if turn else []
    return {
        "wall": wall,
        "calls": len(steps),
        "read": sum(s.tokens_in for s in steps),
        "evaluated": evaluated,
        "right": called[:1] == [case.tools[0].name],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--counts", default="1,4,16,64")
    parser.add_argument(
        "--every-tool",
        action="store_true",
        help="score every tool, as before the shortlist (flowcall/calling/shortlist.py)",
    )
    args = parser.parse_args()
    if args.every_tool:
        shortlist.SHORTLIST = 10**6
    counts = [int(c) for c in args.counts.split(",")]
    provider = LocalProvider.shared()
    provider.prefix.disk = None  # cold means cold: nothing from an earlier process
    engine = Engine(ToolRegistry(), lambda cfg: provider, MemorySink())
    flow = Flow(
        name="tool-count",
        parallel_tool_calls=False,
        max_rounds=1,
        decision=DecisionConfig(provider="local", model=provider.model, calling_way="schema", max_tokens=256),
    )
    pool = tool_pool()
    cases = load_cases("simple")[1::2][: args.questions]
    how = (
        "every tool scored"
        if args.every_tool
        else f"a shortlist of {shortlist.SHORTLIST} above {shortlist.SHORTLIST} tools"
    )
    print(
        f"decision time against tools attached: {len(cases)} questions, schema way, {provider.model}, {how}"
    )
    print(
        f"{'tools':>5} {'cold s':>7} {'warm s':>7} {'again s':>7} {'model calls':>11} {'tokens read':>11} "
        f"{'evaluated':>9} {'right':>6}"
    )
    warm_at: dict[int, float] = {}
    for count in counts:
        cold, warm, again = [], [], []
        for n, case in enumerate(cases, 1):
            needed = case.tools[0]
            others = [t for t in pool if t.name != needed.name]
            step = max(1, len(others) // max(1, count - 1))
            tools = [needed, *others[::step][: count - 1]]
            provider.prefix.states.clear()
            other = cases[n % len(cases)] if len(cases) > 1 else case
            cold.append(decide(engine, flow, other, tools))
            warm.append(decide(engine, flow, case, tools))
            again.append(decide(engine, flow, case, tools))
            print(f"  {count} tools: {n}/{len(cases)}", file=sys.stderr, end="\r")
        warm_at[count] = statistics.median(w["wall"] for w in warm)
        print(
            f"{count:>5} {statistics.median(c['wall'] for c in cold):>7.2f} {warm_at[count]:>7.2f} "
            f"{statistics.median(a['wall'] for a in again):>7.2f} "
            f"{statistics.median(w['calls'] for w in warm):>11.0f} "
            f"{statistics.median(w['read'] for w in warm):>11.0f} "
            f"{statistics.median(w['evaluated'] for w in warm):>9.0f} "
            f"{sum(w['right'] for w in warm):>3}/{len(warm)}"
        )
    if 4 in warm_at and 64 in warm_at:
        print(f"tools 64/4 warm ratio {warm_at[64] / warm_at[4]:.1f}")


if __name__ == "__main__":
    main()
