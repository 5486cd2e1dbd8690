"""Calibrate `more_calls_margin` for a scoring provider (calling/schema.py, call_by_call).

For BFCL cases on the tuning split (even-numbered), the calls are written one at a time, as
the schema way does, up to one more than the answer needs; after each call the margin
logP(",") - logP("]") is recorded, labelled "go on" while the answer needs more calls and
"stop" once it has them all. The same for the real-world calibration half's items that expect
calls (benchmarks/data/realworld/calibration.jsonl; never the report half). Prints the margins,
the threshold that best separates them (each source weighing the same: the mean of the two
sources' balanced accuracies) and, at each threshold, how many cases would get exactly the
right number of calls. Changes nothing.

    .venv/bin/python benchmarks/calibrate_more_calls.py [--per-category 30] [--no-realworld]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm  # noqa: E402

from flowcall.calling.schema import OPEN_CALLS, SchemaWay, decision_schema  # noqa: E402
from flowcall.eval import load_cases  # noqa: E402
from flowcall.messages import Message, ModelRequest, ResponseFormat  # noqa: E402
from flowcall.providers.local import LocalProvider  # noqa: E402


def margins_for(provider: LocalProvider, case) -> list[float]:
    """The margin after each call, for want+1 calls (want = calls the answer needs)."""
    request = ModelRequest(messages=case.messages, tools=case.tools, tool_choice="required",
                           parallel_tool_calls=True, max_tokens=512)
    sent = SchemaWay().prepare(request, provider.capabilities)
    item = decision_schema(case.tools, "required", True)["properties"]["tool_calls"]["items"]
    one_call = sent.model_copy(update={"response_format": ResponseFormat(name="call", json_schema=item)})
    prefix, margins = OPEN_CALLS, []
    for index in range(len(case.ground_truth) + 1):
        if index:
            scored = provider.complete(sent.model_copy(update={"assistant_prefix": prefix, "response_format": None,
                                                               "score_options": [",", "]"], "max_tokens": 1}))
            margins.append(scored.scores[","] - scored.scores["]"])
            if index == len(case.ground_truth):
                break
            prefix += ", "
        prefix = provider.complete(one_call.model_copy(update={"assistant_prefix": prefix})).content or prefix
    return margins


def realworld_cases() -> dict[str, list[SimpleNamespace]]:
    """The calibration half's items that expect calls, by category, shaped like BFCL cases."""
    from flowcall.datasets import parse_jsonl

    path = Path(__file__).resolve().parents[1] / "benchmarks/data/realworld/calibration.jsonl"
    items, problems = parse_jsonl(path.read_text(encoding="utf-8"))
    assert not problems, problems[:3]
    cases: dict[str, list[SimpleNamespace]] = {}
    for item in items:
        if item.expect_calls:
            category = "real-" + item.id.split("/", 1)[1].rsplit("-", 1)[0]
            cases.setdefault(category, []).append(SimpleNamespace(
                id=item.id, messages=[Message(role="user", content=item.question)],
                tools=[t.spec() for t in item.tools or []], ground_truth=item.expect_calls))
    return cases


def balanced(t: float, go_on: list[float], stop: list[float]) -> float:
    return (sum(m > t for m in go_on) / len(go_on) + sum(m <= t for m in stop) / len(stop)) / 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-category", type=int, default=30)
    parser.add_argument("--no-realworld", action="store_true", help="BFCL's even split only")
    args = parser.parse_args()
    provider = LocalProvider.shared()
    tuning = {name: load_cases(name)[::2][: args.per_category]
              for name in ("simple", "multiple", "parallel", "parallel_multiple")}
    if not args.no_realworld:
        tuning.update(realworld_cases())
    per_case: dict[str, list[list[float]]] = {}
    with tqdm(total=sum(map(len, tuning.values())), unit="case") as bar:
        for name, cases in tuning.items():
            per_case[name] = []
            for case in cases:
                per_case[name].append(margins_for(provider, case))
                bar.write(f"{case.id}: needs {len(case.ground_truth)}, margins " + " ".join(f"{m:.1f}" for m in per_case[name][-1]))
                bar.update(1)
    sources: dict[str, tuple[list[float], list[float]]] = {}
    for source in ("bfcl", "real"):
        chosen = [ms for name, cases in per_case.items() if name.startswith("real-") == (source == "real") for ms in cases]
        if chosen and any(len(ms) > 1 for ms in chosen):
            sources[source] = ([m for ms in chosen for m in ms[:-1]], [ms[-1] for ms in chosen])
    for source, (go_on, stop) in sources.items():
        print(f"{source}: margin while calls remain: median {statistics.median(go_on):.2f} (n={len(go_on)}); "
              f"after the last needed call: median {statistics.median(stop):.2f} (n={len(stop)})")
    candidates = sorted({round(m, 1) for go_on, stop in sources.values() for m in go_on + stop})
    best = max(candidates, key=lambda t: sum(balanced(t, *pair) for pair in sources.values()))

    def exact(t: float, cases: list[list[float]]) -> float:  # stops exactly after the last needed call
        return sum(all(m > t for m in ms[:-1]) and ms[-1] <= t for ms in cases) / len(cases)

    for t in sorted({best, -10.0, -9.0, -8.0, -7.0, -6.0, -5.0}):
        print(f"  threshold {t:6.1f}: " + ", ".join(f"{name} {exact(t, cases):.0%}" for name, cases in per_case.items())
              + "; balanced " + ", ".join(f"{source} {balanced(t, *pair):.0%}" for source, pair in sources.items())
              + ("   <- best separation" if t == best else ""))


if __name__ == "__main__":
    main()
