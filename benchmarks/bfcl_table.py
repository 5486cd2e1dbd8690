"""Turn saved `flowcall eval bfcl --json` reports into one markdown table (way x category),
plus where the model's time went. Reads the files named on the command line.

    flowcall eval bfcl --way schema --split odd --json > schema.json   # ...one file per way
    .venv/bin/python benchmarks/bfcl_table.py schema.json native.json ...

With --same-cases every report is cut to the cases all of them ran, so a full run and a
shorter one compare on the same questions.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

CATEGORIES = ["simple", "multiple", "parallel", "parallel_multiple", "irrelevance"]


def row(report: dict, keep: set[str] | None) -> str:
    cases = [c for c in report["cases"] if keep is None or c["id"] in keep]
    cells = []
    for category in CATEGORIES:
        mine = [c for c in cases if c["category"] == category]
        cells.append(f"{sum(c['valid'] for c in mine) / len(mine):.1%} ({len(mine)})" if mine else "-")
    produced = sum(c["calls_produced"] for c in cases)
    valid = sum(c["calls_schema_valid"] for c in cases)
    median = statistics.median(c["latency_ms"] for c in cases) / 1000
    timed = [c for c in cases if c.get("prompt_eval_ms") is not None]
    total = sum(c["latency_ms"] for c in timed)
    split = (
        f"{sum(c['prompt_eval_ms'] for c in timed) / total:.0%} / "
        f"{sum(c['generation_ms'] for c in timed) / total:.0%}"
        if timed and total
        else "-"
    )
    return f"| {report['way']} | " + " | ".join(cells) + f" | {valid}/{produced} | {median:.1f} | {split} |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("reports", nargs="+")
    parser.add_argument("--same-cases", action="store_true", help="only the cases every report ran")
    args = parser.parse_args()
    reports = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.reports]
    keep = set.intersection(*({c["id"] for c in r["cases"]} for r in reports)) if args.same_cases else None
    print(
        "| way | "
        + " | ".join(CATEGORIES)
        + " | schema-valid calls | median s/case | prompt / generation time |"
    )
    print("|---" * (len(CATEGORIES) + 4) + "|")
    for report in reports:
        print(row(report, keep))


if __name__ == "__main__":
    main()
