"""The relevance gate's two readings for tools that change something (issue 46: unrequested
actions), on one half of FlowCall's own question set.

The 1.5B's gate reads the mean of its question asked plainly and after worked examples. For a
tool that is not read-only, a wrong "yes" does something nobody asked for, while a wrong "no"
only leaves a part undone and said so. This prints, for every item that attaches such a tool,
both readings, and what two rules would decide: the mean over the bar (today), and both
readings over the bar (the lower of the two): which correct action calls each keeps and which
unrequested ones each lets through. No threshold is fitted: the bar is the model's own.

    FLOWCALL_MODEL=qwen2.5-coder-1.5b \\
        .venv/bin/python benchmarks/calibrate/action_readings.py --half calibration
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from flowcall.calling.parts import request_parts  # noqa: E402
from flowcall.calling.relevance import last_user_text, margin, tool_margin  # noqa: E402
from tests.support.product_questions import load_items, registry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=["calibration", "report"], default="calibration")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from tqdm import tqdm

    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared()
    bar = provider.tuning.call_margin
    acting = {t.spec().name for t in registry().all() if not t.annotations.read_only}
    items = [i for i in load_items() if i.half == args.half and any(t.name in acting for t in i.tools)]
    rows = []
    for item in tqdm(items, desc=f"readings on {provider.model}", file=sys.stderr):
        text = last_user_text(item.messages)
        texts = [text] + (request_parts(text) if len(request_parts(text)) > 1 else [])
        wanted = {c.name for calls in item.correct[:1] for c in calls}
        for tool in (t for t in item.tools if t.name in acting):
            best = None
            for asked in texts:
                readings = []
                ask = lambda request, _label, _interpret=None: (  # noqa: E731
                    readings.append(margin((turn := provider.complete(request)).scores)) or turn
                )
                tool_margin(ask, tool, asked, True)
                if best is None or sum(readings) > sum(best):
                    best = readings
            rows.append(
                {
                    "id": item.id,
                    "tool": tool.name,
                    "wanted": tool.name in wanted,
                    "plain": round(best[0], 3),
                    "examples": round(best[1], 3),
                }
            )
    if args.json:
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    for rule, value in (
        ("mean", lambda r: (r["plain"] + r["examples"]) / 2),
        ("both", lambda r: min(r["plain"], r["examples"])),
    ):
        kept = sum(1 for r in rows if r["wanted"] and value(r) > bar)
        loose = [r["id"] for r in rows if not r["wanted"] and value(r) > bar]
        print(
            f"{rule:>5}: wanted action calls passing {kept}/{sum(r['wanted'] for r in rows)}, "
            f"unwanted passing {len(loose)}/{sum(not r['wanted'] for r in rows)} {loose}"
        )


if __name__ == "__main__":
    main()
