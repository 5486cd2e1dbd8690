"""Calibrate `more_calls_margin` for a scoring provider (calling/schema.py, call_by_call).

For BFCL cases on the tuning split (even-numbered), the calls are written one at a time, as
the schema way does, up to one more than the answer needs; after each call the margin
logP(",") - logP("]") is recorded, labelled "go on" while the answer needs more calls and
"stop" once it has them all. The same for the real-world calibration half's items that expect
calls (benchmarks/data/realworld/calibration.jsonl; never the report half). Prints the margins,
the threshold that best separates them (each source weighing the same: the mean of the two
sources' balanced accuracies) and, at each threshold, how many cases would get exactly the
right number of calls. Changes nothing.

    .venv/bin/python benchmarks/calibrate/calibrate_more_calls.py [--per-category 30] [--no-realworld]
    # the margins a run printed:
    .venv/bin/python benchmarks/calibrate/calibrate_more_calls.py --from-log RESULTS.txt

With real-world items, the bar is also fitted with one real-world family left out (and every
BFCL case kept) and scored on that family, for every family in turn: the cross-validated
figure of how the fitted bar does on tools it never saw.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tqdm import tqdm  # noqa: E402

from flowcall.calling.schema import OPEN_CALLS, SchemaWay, decision_schema  # noqa: E402
from flowcall.core.messages import Message, ModelRequest, ResponseFormat  # noqa: E402
from flowcall.eval import load_cases  # noqa: E402
from flowcall.providers.local import LocalProvider  # noqa: E402


def margins_for(provider: LocalProvider, case) -> list[float]:
    """The margin after each call, for want+1 calls (want = calls the answer needs)."""
    request = ModelRequest(
        messages=case.messages,
        tools=case.tools,
        tool_choice="required",
        parallel_tool_calls=True,
        max_tokens=512,
    )
    sent = SchemaWay().prepare(request, provider.capabilities)
    item = decision_schema(case.tools, "required", True)["properties"]["tool_calls"]["items"]
    one_call = sent.model_copy(update={"response_format": ResponseFormat(name="call", json_schema=item)})
    prefix, margins = OPEN_CALLS, []
    for index in range(len(case.ground_truth) + 1):
        if index:
            scored = provider.complete(
                sent.model_copy(
                    update={
                        "assistant_prefix": prefix,
                        "response_format": None,
                        "score_options": [",", "]"],
                        "max_tokens": 1,
                    }
                )
            )
            margins.append(scored.scores[","] - scored.scores["]"])
            if index == len(case.ground_truth):
                break
            prefix += ", "
        prefix = provider.complete(one_call.model_copy(update={"assistant_prefix": prefix})).content or prefix
    return margins


def realworld_cases() -> dict[str, list[SimpleNamespace]]:
    """The calibration half's items that expect calls, by category, shaped like BFCL cases."""
    from flowcall.core.datasets import parse_jsonl

    path = Path(__file__).resolve().parents[2] / "benchmarks/data/realworld/calibration.jsonl"
    items, problems = parse_jsonl(path.read_text(encoding="utf-8"))
    assert not problems, problems[:3]
    cases: dict[str, list[SimpleNamespace]] = {}
    for item in items:
        if item.expect_calls:
            category = "real-" + item.id.split("/", 1)[1].rsplit("-", 1)[0]
            cases.setdefault(category, []).append(
                SimpleNamespace(
                    id=item.id,
                    messages=[Message(role="user", content=item.question)],
                    tools=[t.spec() for t in item.tools or []],
                    ground_truth=item.expect_calls,
                )
            )
    return cases


def balanced(t: float, go_on: list[float], stop: list[float]) -> float:
    return (sum(m > t for m in go_on) / len(go_on) + sum(m <= t for m in stop) / len(stop)) / 2


def fit(sources: dict[str, tuple[list[float], list[float]]]) -> float:
    """The bar with the best mean of the sources' balanced accuracies."""
    candidates = sorted({round(m, 1) for go_on, stop in sources.values() for m in go_on + stop})
    return max(candidates, key=lambda t: sum(balanced(t, *pair) for pair in sources.values()))


def split(
    per_case: dict[str, list[tuple[str, list[float]]]], keep=lambda case_id: True
) -> dict[str, tuple[list[float], list[float]]]:
    """(margins while calls remain, margins after the last needed call) per source."""
    sources: dict[str, tuple[list[float], list[float]]] = {}
    for source in ("bfcl", "real"):
        chosen = [
            ms
            for name, cases in per_case.items()
            if name.startswith("real-") == (source == "real")
            for case_id, ms in cases
            if keep(case_id)
        ]
        if chosen and any(len(ms) > 1 for ms in chosen):
            sources[source] = ([m for ms in chosen for m in ms[:-1]], [ms[-1] for ms in chosen])
    return sources


def exact(t: float, cases: list[list[float]]) -> float:
    """The share of cases that stop exactly after the last needed call."""
    return sum(all(m > t for m in ms[:-1]) and ms[-1] <= t for ms in cases) / len(cases)


def measure(args: argparse.Namespace) -> dict[str, list[tuple[str, list[float]]]]:
    provider = LocalProvider.shared()
    tuning = {
        name: load_cases(name)[::2][: args.per_category]
        for name in ("simple", "multiple", "parallel", "parallel_multiple")
    }
    if not args.no_realworld:
        tuning.update(realworld_cases())
    per_case: dict[str, list[tuple[str, list[float]]]] = {}
    with tqdm(total=sum(map(len, tuning.values())), unit="case") as bar:
        for name, cases in tuning.items():
            per_case[name] = []
            for case in cases:
                margins = margins_for(provider, case)
                per_case[name].append((case.id, margins))
                bar.write(
                    f"{case.id}: needs {len(case.ground_truth)}, margins "
                    + " ".join(f"{m:.1f}" for m in margins)
                )
                bar.update(1)
    return per_case


def from_log(path: Path) -> dict[str, list[tuple[str, list[float]]]]:
    """The margins an earlier run printed, one "ID: needs N, margins a b c" line per case."""
    per_case: dict[str, list[tuple[str, list[float]]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        found = re.match(r"\s*(\S+): needs \d+, margins ([-\d. ]+)$", line)
        if found:
            case_id = found.group(1)
            name = (
                "real-" + case_id.split("/", 1)[1].rsplit("-", 1)[0]
                if "/" in case_id
                else re.sub(r"_(python_)?\d+$", "", case_id)
            )
            per_case.setdefault(name, []).append((case_id, [float(m) for m in found.group(2).split()]))
    return per_case


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-category", type=int, default=30)
    parser.add_argument("--no-realworld", action="store_true", help="BFCL's even split only")
    parser.add_argument(
        "--from-log", type=Path, help="read the margins from a run's printed lines, run no model"
    )
    args = parser.parse_args()
    per_case = from_log(args.from_log) if args.from_log else measure(args)
    sources = split(per_case)
    for source, (go_on, stop) in sources.items():
        print(
            f"{source}: margin while calls remain: median {statistics.median(go_on):.2f} (n={len(go_on)}); "
            f"after the last needed call: median {statistics.median(stop):.2f} (n={len(stop)})"
        )
    best = fit(sources)
    for t in sorted({best, -10.0, -9.0, -8.0, -7.0, -6.0, -5.0}):
        print(
            f"  threshold {t:6.1f}: "
            + ", ".join(f"{name} {exact(t, [ms for _, ms in cases]):.0%}" for name, cases in per_case.items())
            + "; balanced "
            + ", ".join(f"{source} {balanced(t, *pair):.0%}" for source, pair in sources.items())
            + ("   <- best separation" if t == best else "")
        )
    families = sorted(
        {case_id.split("/", 1)[0] for cases in per_case.values() for case_id, _ in cases if "/" in case_id}
    )
    if len(families) > 1:
        print("one real-world family left out (the bar fitted on the rest, scored on it):")
        right = total = 0
        for family in families:
            ours = lambda case_id, family=family: case_id.startswith(family + "/")  # noqa: E731
            bar = fit(split(per_case, lambda case_id: not ours(case_id)))
            held = [ms for cases in per_case.values() for case_id, ms in cases if ours(case_id)]
            stopped = sum(all(m > bar for m in ms[:-1]) and ms[-1] <= bar for ms in held)
            right, total = right + stopped, total + len(held)
            print(f"  {family}: bar {bar:.1f}, the right number of calls on {stopped}/{len(held)}")
        print(f"  all families: the right number of calls on {right}/{total} ({right / total:.0%})")


if __name__ == "__main__":
    main()
