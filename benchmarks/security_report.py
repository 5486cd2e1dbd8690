"""The attack catalogue, run for real and reported as a table.

Every test in tests/security/ tries one attack (a hostile flow file, MCP server, OpenAPI
document, run export, web page or caller) and proves it had no effect. This runs them all and
prints, per attack, what FlowCall must do and what was observed. A test that fails or errors is
an escape. The last line is `attacks N, escapes E`.

    .venv/bin/python benchmarks/security_report.py [--no-model] [extra pytest args]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_catalogue(extra: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "attacks.jsonl"
        env = {**os.environ, "FLOWCALL_ATTACK_REPORT": str(report)}
        command = [sys.executable, "-m", "pytest", "tests/security", "-q", "-p", "no:cacheprovider", *extra]
        print("$ " + " ".join(command[2:]), flush=True)
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        print((done.stdout.strip().splitlines() or ["(no pytest output)"])[-1], flush=True)
        if not report.exists():
            sys.exit(f"no attack was recorded; pytest said:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        return [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines() if line.strip()]


def cell(text: str, width: int) -> list[str]:
    return textwrap.wrap(text or "-", width) or ["-"]


def print_table(rows: list[dict]) -> None:
    widths = (4, 46, 40, 44, 7)
    head = ("#", "attack", "expected", "observed", "result")
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    print("  ".join("-" * w for w in widths))
    for n, row in enumerate(rows, 1):
        # a skipped attack proves nothing, so it counts against us like a failed one
        result = {"passed": "blocked", "skipped": "SKIPPED"}.get(row["outcome"], "ESCAPED")
        observed = "; ".join(row["seen"]) or row.get("error") or "-"
        if result != "blocked" and row.get("error"):
            observed += f" [{row['error']}]"
        columns = [
            cell(str(n), widths[0]),
            cell(row["attack"] or row["test"], widths[1]),
            cell(row["expected"], widths[2]),
            cell(observed, widths[3]),
            cell(result, widths[4]),
        ]
        for i in range(max(len(c) for c in columns)):
            print("  ".join((c[i] if i < len(c) else "").ljust(w) for c, w in zip(columns, widths)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-model", action="store_true", help="Skip attacks that need the embedded model.")
    args, extra = parser.parse_known_args()
    if args.no_model:
        extra = ["-m", "not model", *extra]
    rows = run_catalogue(extra)
    print()
    print_table(rows)
    escapes = sum(row["outcome"] != "passed" for row in rows)
    print()
    print(f"attacks {len(rows)}, escapes {escapes}")


if __name__ == "__main__":
    main()
