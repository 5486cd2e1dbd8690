"""Engine figures, printed (never asserted):

1. overhead per loop iteration with the scripted model (no model time at all): median µs
   per decide -> check -> run -> record round, with the in-memory sink and with SQLite, and
   beside them openai-agents' `Runner.run` in memory on the same work (a fake model, tracing
   off, 3 tool rounds and an answer), measured in the same process, one after the other;
2. the commute flow on the embedded model: total wall time against time inside the model.

    .venv/bin/pip install -r benchmarks/requirements.txt    # openai-agents, for the comparison
    .venv/bin/python benchmarks/engine_overhead.py [--iterations 200] [--commute-runs 3]

The last line is `engine per round: memory M µs, sqlite S µs, openai-agents A µs`.
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

from flowcall.core.spec import DecisionConfig, Flow, load_flow  # noqa: E402
from flowcall.core.steps import MemorySink, StepKind  # noqa: E402
from flowcall.engine.loop import Engine  # noqa: E402
from flowcall.providers.scripted import ScriptedProvider  # noqa: E402
from flowcall.tools.python_plugins import build_tool  # noqa: E402
from flowcall.tools.registry import ToolRegistry  # noqa: E402


def echo(text: str) -> str:
    """Returns its input."""
    return text


def overhead(iterations: int, rounds: int, sink) -> list[float]:
    """µs per round: a run of `rounds` tool rounds plus one answer, divided by rounds. The answer
    is the model's own next turn, as in agents_overhead: with max_rounds at `rounds` the engine
    would record a MAX_ROUNDS error first and ask again without tools."""
    registry = ToolRegistry([build_tool(echo, "bench/v1/echo")])
    flow = Flow(
        name="bench",
        tools=["bench/v1/echo"],
        max_rounds=rounds + 1,
        decision=DecisionConfig(provider="scripted"),
    )
    samples = []
    for i in range(iterations):
        script = [[("echo", {"text": f"{i}-{r}"})] for r in range(rounds)] + ["done"]
        provider = ScriptedProvider(script)
        engine = Engine(registry, lambda cfg: provider, sink)
        started = time.perf_counter()
        engine.run(flow, "go")
        samples.append((time.perf_counter() - started) / rounds * 1e6)
    return samples


def agents_overhead(iterations: int, rounds: int) -> list[float] | None:
    """µs per round of openai-agents' Runner.run on the same work: a fake model that calls the
    echo tool `rounds` times, then answers; tracing off; nothing stored. None when the package
    is not installed."""
    try:
        from agents import Agent, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    except ImportError:
        return None
    import asyncio
    import json

    set_tracing_disabled(True)

    @function_tool
    def echo_tool(text: str) -> str:
        """Returns its input."""
        return text

    class Scripted(Model):
        def __init__(self, run_no: int) -> None:
            self.run_no, self.turn = run_no, 0

        async def get_response(self, *args, **kwargs) -> ModelResponse:  # noqa: ANN002, ANN003
            r, self.turn = self.turn, self.turn + 1
            if r < rounds:
                output = [
                    ResponseFunctionToolCall(
                        type="function_call",
                        id=f"fc_{r}",
                        call_id=f"call_{r}",
                        name="echo_tool",
                        arguments=json.dumps({"text": f"{self.run_no}-{r}"}),
                    )
                ]
            else:
                output = [
                    ResponseOutputMessage(
                        id="msg",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
            raise NotImplementedError

    async def measure() -> list[float]:
        samples = []
        for i in range(iterations):
            agent = Agent(name="bench", tools=[echo_tool], model=Scripted(i))
            started = time.perf_counter()
            result = await Runner.run(agent, "go")
            samples.append((time.perf_counter() - started) / rounds * 1e6)
            assert result.final_output == "done"
        return samples

    return asyncio.run(measure())


def commute(runs: int) -> None:
    from flowcall.service.front import FlowCall

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
        print(
            f"  run {run.id[:8]} {run.status.value}: wall {walls[-1]:.2f}s, in model {inside[-1]:.2f}s, "
            f"{prompt_tok[-1]} prompt + {gen_tok[-1]} generated tokens",
            flush=True,
        )
    wall, model = statistics.median(walls), statistics.median(inside)
    print(
        f"commute flow, embedded model, median of {runs}: wall {wall:.2f}s, inside the model {model:.2f}s "
        f"({model / wall:.1%}), outside {1000 * (wall - model):.0f} ms; "
        f"tokens {statistics.median(prompt_tok):.0f} prompt / {statistics.median(gen_tok):.0f} generated"
    )
    p, g = statistics.median(prompt_ms) / 1000, statistics.median(gen_ms) / 1000
    print(
        f"  inside the model: reading prompts {p:.2f}s ({p / model:.0%}), generating {g:.2f}s "
        f"({g / model:.0%}), sampling/grammar and the rest {model - p - g:.2f}s "
        f"({(model - p - g) / model:.0%})"
    )


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
        others = agents_overhead(args.iterations, args.rounds)
        m, q = statistics.median(memory), statistics.median(sqlite)
        print(
            "engine overhead per loop iteration (scripted model, "
            f"{args.iterations} runs x {args.rounds} rounds):"
        )
        print(f"  in-memory sink: median {m:.0f} µs")
        print(f"  SQLite store:   median {q:.0f} µs ({q / m:.1f}x; each step is committed as it ends)")
        if others is not None:
            a = statistics.median(others)
            print(
                f"  openai-agents Runner.run, in memory: median {a:.0f} µs (SQLite store {q / a:.2f}x of it)"
            )
        if args.commute_runs:
            commute(args.commute_runs)
        agents = f"{statistics.median(others):.0f}" if others is not None else "(not installed)"
        print(f"engine per round: memory {m:.0f} µs, sqlite {q:.0f} µs, openai-agents {agents} µs")


if __name__ == "__main__":
    main()
