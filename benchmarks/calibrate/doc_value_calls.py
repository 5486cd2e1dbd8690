"""What if a call that still carries the tool's own example in a required argument, after the
model was told once, were not made? Compared on recorded decisions, no model run.

The engine asks the model once more when a call's values come from the tool's docs rather
than the conversation (calling/doc_values.py), and the second decision stands. A required
argument that is *still* the docs' example means the conversation never gave that value:
"thanks, that's all" answered with get_file_contents(owner="octocat", repo="Hello-World").
This script takes experiments of decision-only runs on tuning data (BFCL's even split and the
real-world calibration half, never the report half), applies doc_values() to each final
call as the engine would, and scores the decision again without the calls whose required
arguments are flagged. It prints passes per source and every item whose verdict changes:

    FLOWCALL_HOME=... .venv/bin/python benchmarks/calibrate/doc_value_calls.py ID [ID ...]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recorded_decisions import recorded  # noqa: E402

from flowcall.calling.doc_values import doc_values, required_doc_values  # noqa: E402
from flowcall.core.messages import Message, ToolCall  # noqa: E402
from flowcall.eval.scoring import Observed, passed, score  # noqa: E402
from flowcall.service.front import FlowCall  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("experiments", nargs="+")
    args = parser.parse_args()
    tally: Counter[tuple[str, str]] = Counter()
    for found in recorded(FlowCall.open(None), args.experiments):
        item, run, decision, source = found.item, found.run, found.decision, found.source
        calls = [
            ToolCall(id=c["id"], name=c["name"], arguments=c.get("arguments"))
            for c in decision.get("tool_calls") or []
        ]
        tools = [t.spec() for t in item.tools or []]
        messages = [Message(role="user", content=item.question)]
        unsaid = [
            required_doc_values(doc_values([c], tools, messages), tools) for c in calls
        ]  # as the engine
        flagged = [f for per_call in unsaid for f in per_call]
        kept = [c for c, per_call in zip(calls, unsaid) if not per_call]
        retried = any(s.name == "doc_values" for s in run.steps)

        def verdict(made: list[ToolCall]) -> bool:
            seen = Observed(
                status=str(run.status),
                error=run.error,
                calls=[(c.name, c.arguments) for c in made],
                answer=decision.get("answer"),
                latency_s=None,
            )
            return passed(score(item, seen))

        before, after = verdict(calls), verdict(kept)
        tally[(source, "items")] += 1
        tally[(source, "retried")] += retried
        tally[(source, "before")] += before
        tally[(source, "after")] += after
        tally[(source, "calls dropped")] += len(calls) - len(kept)
        if before != after or flagged:
            print(
                f"{item.id}: {'pass' if before else 'fail'} -> {'pass' if after else 'fail'}; "
                + "; ".join(f.line() for f in flagged)
            )
    for source in ("bfcl", "real-world"):
        if tally[(source, "items")]:
            print(
                f"{source}: {tally[(source, 'items')]} items, {tally[(source, 'retried')]} asked once more; "
                f"passed: the second decision stands {tally[(source, 'before')]}, calls with a required doc "
                f"value not made {tally[(source, 'after')]} ({tally[(source, 'calls dropped')]} calls)"
            )


if __name__ == "__main__":
    main()
