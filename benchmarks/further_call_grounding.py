"""Should a list of calls end at a further call whose required value nobody said? No model run.

Written call by call, the 0.5B in the router way, asked "明天成都会下雨吗?", writes 成都 and
then 广州, 深圳, 杭州, 武汉: the continuation bar lets the list go on, and nothing in the
conversation names those cities. A rule without a threshold would end the list at the first
further call (the second or later) with a required string argument that the conversation
never mentions (grounding.Grounds; enum members and translations count as said). This script
reads recorded BFCL eval results (`flowcall eval bfcl --json`), where each case holds the
calls as made, and prints how many multi-call cases the rule would cut, and how many of those
had passed:

    .venv/bin/python benchmarks/further_call_grounding.py benchmarks/results/*bfcl*.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flowcall.calling.grounding import enum_choice
from flowcall.calling.said import Said as Grounds, conversation_text  # noqa: E402
from flowcall.eval.bfcl_data import BfclCase, load_cases  # noqa: E402
from flowcall.messages import ToolSpec  # noqa: E402


def unsaid_required(call: dict[str, Any], tools: list[ToolSpec], grounds: Grounds) -> list[tuple[str, str]]:
    tool = next((t for t in tools if t.name == call["name"]), None)
    if tool is None or not isinstance(call.get("arguments"), dict):
        return []
    required = set(tool.parameters.get("required", []))
    properties = tool.parameters.get("properties", {})
    return [(key, value) for key, value in call["arguments"].items()
            if key in required and isinstance(value, str) and value.strip() and not grounds.says(value, properties.get(key) or {})
            and not enum_choice(properties.get(key) or {}, value)]


def main(paths: list[str]) -> None:
    cases: dict[str, BfclCase] = {}
    for category in ("simple", "multiple", "parallel", "parallel_multiple"):
        cases.update({case.id: case for case in load_cases(category)})
    for path in paths:
        report = json.loads(Path(path).read_text())
        multi, cut = 0, []
        for row in report.get("cases", []):
            case = cases.get(row["id"])
            if case is None or len(row.get("calls") or []) < 2:
                continue
            multi += 1
            grounds = Grounds(conversation_text(case.messages))
            for index, call in enumerate(row["calls"][1:], start=2):
                if unsaid := unsaid_required(call, case.tools, grounds):
                    cut.append((row["id"], bool(row.get("valid")), index, unsaid))
                    break
        print(f"{Path(path).name}: multi-call cases {multi}, cut {len(cut)}, of them passing {sum(c[1] for c in cut)}")
        for case_id, passed, index, unsaid in cut:
            print(f"   {case_id} ({'passed' if passed else 'failed'}): call {index} {unsaid}")


if __name__ == "__main__":
    main(sys.argv[1:])
