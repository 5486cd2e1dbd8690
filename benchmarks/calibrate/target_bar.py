"""Where should the gate's bar sit for the issue's targets? Reads an experiment run with the
gate open (`benchmarks/calibrate/with_margins.py --call -100 -- experiments run FLOW DATASET`) on the
single-call and no-fit items of the TUNING data (the real-world calibration half), and
replays every bar on it without running a model:

- a single-call item passes at bar b when its gate reading is above b and its open run passed
  (one tool offered: above the bar the decision is the one recorded, greedy and deterministic);
- a no-fit item passes when its reading is at most b (nothing is called), or when its open run
  passed anyway (the decision itself answered without a call).

The gate reading is the shipped one, recorded in the run's steps: per tool the mean of the
question asked plainly and after worked examples ("relevance of X" and "..., after worked
examples"), the item's best tool. It prints single and no-fit against the bar, the bar with the
most room under both targets (the largest smaller slack: no balance between the two is fitted),
and that bar with each family left out.

    FLOWCALL_HOME=... .venv/bin/python benchmarks/calibrate/target_bar.py ID \\
        [--targets 65,75] [--current 1.35]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from flowcall.calling.relevance import AFTER_EXAMPLES as AFTER  # noqa: E402
from flowcall.calling.relevance import margin
from flowcall.service.front import FlowCall  # noqa: E402
from flowcall.store.experiments import get_experiment  # noqa: E402


def reading(run) -> float:
    """The gate's reading of the run's best tool: the mean of its two recorded readings."""
    per_tool: dict[str, list[float]] = defaultdict(list)
    for step in run.steps:
        note = step.note or ""
        if step.kind == "model_call" and note.startswith("checked whether "):
            label = note.split(":", 1)[0].removeprefix("checked whether ")
            name = label.removesuffix(AFTER).removesuffix(" fits")
            per_tool[name].append(margin((step.response or {}).get("scores")))
    return max(sum(values) / len(values) for values in per_tool.values()) if per_tool else float("-inf")


def rates(items: list[tuple[str, str, float, bool]], bar: float) -> tuple[float, float]:
    single = [value > bar and ok for _, kind, value, ok in items if kind == "single"]
    nofit = [value <= bar or ok for _, kind, value, ok in items if kind == "nofit"]
    return 100 * sum(single) / len(single), 100 * sum(nofit) / len(nofit)


def best_bar(items, targets: tuple[float, float]) -> float:
    """The bar with the largest smaller slack under the two targets; of a plateau of such bars,
    the middle one."""
    bars = sorted({round(value, 2) for *_, value, _ in items if value > float("-inf")})
    room = [min(r - t for r, t in zip(rates(items, b), targets)) for b in bars]
    plateau = [b for b, r in zip(bars, room) if r >= max(room) - 1e-9]
    return plateau[len(plateau) // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("experiment")
    parser.add_argument("--targets", default="65,75", help="single-call and no-fit targets, in percent")
    parser.add_argument("--current", type=float, default=1.35, help="the bar shipped now, for comparison")
    args = parser.parse_args()
    targets = tuple(float(t) for t in args.targets.split(","))
    service = FlowCall.open()
    experiment = get_experiment(service.store, args.experiment)
    items = []
    for row in experiment.items:
        family, rest = row.item_key.split("/", 1)
        kind = rest.rsplit("-", 1)[0]
        if kind in ("single", "nofit") and row.passed is not None:
            items.append((family, kind, reading(service.store.get_run(row.run_id)), row.passed))
    singles = sum(kind == "single" for _, kind, *_ in items)
    print(
        f"experiment {args.experiment}: {singles} single-call "
        f"and {len(items) - singles} no-fit items, gate open"
    )
    print(
        f"  gate open: single {rates(items, float('-inf'))[0]:.1f}%, no fit "
        f"{rates(items, float('-inf'))[1]:.1f}%"
    )
    for bar in (0.0, 0.5, 0.8, 1.0, 1.1, 1.2, 1.3, args.current, 1.5, 1.7, 2.0):
        single, nofit = rates(items, bar)
        print(f"  bar {bar:5.2f}: single {single:5.1f}%  no fit {nofit:5.1f}%")
    bar = best_bar(items, targets)
    single, nofit = rates(items, bar)
    print(
        f"most room under both targets ({args.targets}): bar "
        f"{bar:.2f}, single {single:.1f}%, no fit {nofit:.1f}%"
    )
    for family in sorted({f for f, *_ in items}):
        rest = [i for i in items if i[0] != family]
        held = [i for i in items if i[0] == family]
        if {k for _, k, *_ in rest} != {"single", "nofit"}:
            continue
        b = best_bar(rest, targets)
        s = [v > b and ok for _, k, v, ok in held if k == "single"]
        n = [v <= b or ok for _, k, v, ok in held if k == "nofit"]
        print(
            f"  without {family:12} bar {b:.2f}: on {family}: "
            f"single {sum(s)}/{len(s)}, no fit {sum(n)}/{len(n)}"
        )


if __name__ == "__main__":
    main()
