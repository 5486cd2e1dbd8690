"""Per-category table of experiments on the real-world set, on the same cases, side by side.

    flowcall experiments show ID --json > A.json     (one file per experiment)
    .venv/bin/python benchmarks/realworld_table.py A.json B.json ... [--names schema,auto]

The category is in each item's id (`gcal/nofit-004` -> nofit). For each experiment: right of
all, per category, and, among the items that expect calls and failed, how many failed with no
call at all (the gate kept quiet) against a wrong call (wrong tool, arguments or count).
Scored items present in every file only, so the columns compare the same cases.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

ORDER = ["single", "nofit", "multiple", "parallel"]
NAMES = {"single": "single call", "nofit": "no fit", "multiple": "pick one", "parallel": "parallel"}


def category(key: str) -> str:
    return key.split("/", 1)[1].rsplit("-", 1)[0]


def load(path: Path) -> dict[str, dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {item["item_key"]: item for item in data["items"] if item["passed"] is not None}  # scored ones


def quiet_failure(item: dict) -> bool:
    """Failed an expected call because no call was made at all."""
    return any(
        v["expectation"] == "expect_calls" and not v["passed"] and "calls made: none" in v["reason"]
        for v in item["verdicts"]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--names", help="column names, comma-separated (default: the file names)")
    args = parser.parse_args()
    runs = [load(f) for f in args.files]
    names = args.names.split(",") if args.names else [f.stem for f in args.files]
    keys = sorted(set.intersection(*(set(r) for r in runs)))
    print(f"{len(keys)} items in every experiment")
    print("| category | items | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    totals = [0] * len(runs)
    for cat in ORDER:
        mine = [k for k in keys if category(k) == cat]
        if not mine:
            continue
        cells = []
        for i, run in enumerate(runs):
            right = sum(run[k]["passed"] for k in mine)
            totals[i] += right
            cell = f"{right}/{len(mine)} ({100 * right / len(mine):.1f})"
            if cat != "nofit":
                quiet = sum(quiet_failure(run[k]) for k in mine if not run[k]["passed"])
                cell += f", failed: {quiet} quiet / {len(mine) - right - quiet} wrong"
            cells.append(cell)
        print(f"| {NAMES[cat]} | {len(mine)} | " + " | ".join(cells) + " |")
    print(
        "| all | "
        + str(len(keys))
        + " | "
        + " | ".join(f"{t}/{len(keys)} ({100 * t / len(keys):.1f})" for t in totals)
        + " |"
    )
    latency = defaultdict(list)
    for name, run in zip(names, runs):
        latency[name] = sorted(run[k]["latency_ms"] / 1000 for k in keys)
    print("median s/item: " + ", ".join(f"{n} {v[len(v) // 2]:.2f}" for n, v in latency.items()))
    if len(runs) > 1:
        a, b = runs[0], runs[1]
        print(
            f"{names[0]} -> {names[1]}: pass->fail "
            f"{sum(a[k]['passed'] and not b[k]['passed'] for k in keys)}, fail->pass "
            f"{sum(not a[k]['passed'] and b[k]['passed'] for k in keys)}"
        )


if __name__ == "__main__":
    main()
