"""Engine figures, printed (never asserted):

1. overhead per loop iteration with the scripted model (no model time at all): median µs
   per decide -> check -> run -> record round, with the in-memory sink and with SQLite;
2. the commute flow on the embedded model: total wall time against time inside the model.

    .venv/bin/python benchmarks/engine_overhead.py [--iterations 200] [--commute-runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowcall.engine import Engine  # noqa: E402
from flowcall.providers.scripted import ScriptedProvider  # noqa: E402
from flowcall.spec import DecisionConfig, Flow, load_flow  # noqa: E402
from flowcall.steps import MemorySink, StepKind  # noqa: E402
from flowcall.tools.python_plugins import build_tool  # noqa: E402
from flowcall.tools.registry import ToolRegistry  # noqa: E402


def echo(text: str) -> str:
    """Returns its input."""
    return text


def overhead(iterations: int, rounds: int, sink) -> list[float]:
    """µs per round: a run of `rounds` tool rounds plus one answer, divided by rounds."""
    registry = ToolRegistry([build_tool(echo, "bench/v1/echo")])
    flow = Flow(name="bench", tools=["bench/v1/echo"], max_rounds=rounds, decision=DecisionConfig(provider="scripted"))
    samples = []
    for i in range(iterations):
        script = [[("echo", {"text": f"{i}-{r}"})] for r in range(rounds)] + ["done"]
        provider = ScriptedProvider(script)
        engine = Engine(registry, lambda cfg: provider, sink)
        started = time.perf_counter()
        engine.run(flow, "go")
        samples.append((time.perf_counter() - started) / rounds * 1e6)
    return samples


def commute(runs: int) -> None:
    from flowcall.service import FlowCall

    flow = load_flow(ROOT / "flows" / "commute_weather.json")
    service = FlowCall.open()
    service.provider_factory(flow.decision)  # load the model before timing
    walls, inside, prompt_tok, gen_tok, prompt_ms, gen_ms = [], [], [], [], [], []
    for _ in range(runs):
        started = time.perf_counter()
        run = service.run(flow, "我明天要在成都上下班通勤,会下雨吗?")
        walls.append(time.perf_counter() - started)
        model_steps = [s for s in run.steps if s.kind in (StepKind.MODEL_CALL, StepKind.POLISH)]
        inside.append(sum(s.latency_ms for s in model_steps) / 1000)
        prompt_tok.append(sum(s.tokens_in for s in model_steps))
        gen_tok.append(sum(s.tokens_out for s in model_steps))
        timings = [s.response["timings"] for s in model_steps if s.response and "timings" in s.response]
        prompt_ms.append(sum(t["prompt_eval_ms"] for t in timings))
        gen_ms.append(sum(t["generation_ms"] for t in timings))
        print(f"  run {run.id[:8]} {run.status.value}: wall {walls[-1]:.2f}s, in model {inside[-1]:.2f}s, "
              f"{prompt_tok[-1]} prompt + {gen_tok[-1]} generated tokens", flush=True)
    wall, model = statistics.median(walls), statistics.median(inside)
    print(f"commute flow, embedded model, median of {runs}: wall {wall:.2f}s, inside the model {model:.2f}s "
          f"({model / wall:.1%}), outside {1000 * (wall - model):.0f} ms; "
          f"tokens {statistics.median(prompt_tok):.0f} prompt / {statistics.median(gen_tok):.0f} generated")
    p, g = statistics.median(prompt_ms) / 1000, statistics.median(gen_ms) / 1000
    print(f"  inside the model: reading prompts {p:.2f}s ({p / model:.0%}), generating {g:.2f}s ({g / model:.0%}), "
          f"sampling/grammar and the rest {model - p - g:.2f}s ({(model - p - g) / model:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commute-runs", type=int, default=3, help="0 to skip the model part")
    args = parser.parse_args()

    from flowcall.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FLOWCALL_DATABASE_URL"] = f"sqlite:///{tmp}/bench.db"
        store = Store.open()
        memory = overhead(args.iterations, args.rounds, MemorySink())
        sqlite = overhead(args.iterations, args.rounds, store)  # side by side, same process
        print(f"engine overhead per loop iteration (scripted model, {args.iterations} runs x {args.rounds} rounds):")
        print(f"  in-memory sink: median {statistics.median(memory):.0f} µs")
        print(f"  SQLite store:   median {statistics.median(sqlite):.0f} µs "
              f"({statistics.median(sqlite) / statistics.median(memory):.1f}x; each step is committed as it ends)")
        if args.commute_runs:
            commute(args.commute_runs)


if __name__ == "__main__":
    main()
