"""Turn saved `flowcall eval bfcl --json` reports into one markdown table (way x category),
plus where the model's time went. Reads the files named on the command line.

    flowcall eval bfcl --way schema --json > schema.json   # ...one file per way
    .venv/bin/python benchmarks/bfcl_table.py schema.json native.json ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CATEGORIES = ["simple", "multiple", "parallel", "parallel_multiple", "irrelevance"]


def main(paths: list[str]) -> None:
    print("| way | " + " | ".join(CATEGORIES) + " | schema-valid calls | median s/case | prompt / generation time |")
    print("|---" * (len(CATEGORIES) + 4) + "|")
    for path in paths:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        rows = {row["category"]: row for row in report["summary"]}
        cells = [f"{rows[c]['accuracy']:.1%} ({rows[c]['cases']})" if c in rows else "-" for c in CATEGORIES]
        produced = sum(case["calls_produced"] for case in report["cases"])
        valid = sum(case["calls_schema_valid"] for case in report["cases"])
        latencies = sorted(case["latency_ms"] for case in report["cases"])
        median = latencies[len(latencies) // 2] / 1000
        timed = [c for c in report["cases"] if c.get("prompt_eval_ms") is not None]
        total = sum(c["latency_ms"] for c in timed)
        split = (f"{sum(c['prompt_eval_ms'] for c in timed) / total:.0%} / {sum(c['generation_ms'] for c in timed) / total:.0%}"
                 if timed and total else "-")
        print(f"| {report['way']} | " + " | ".join(cells) + f" | {valid}/{produced} | {median:.1f} | {split} |")


if __name__ == "__main__":
    main(sys.argv[1:])
