"""Does asking the model about the call it would write separate "call" from "keep quiet" where
the relevance gate is unsure? Tuning data only; changes nothing.

The gate (calling/relevance.py) asks "can this function handle the request?" of each tool and
calls when the best margin is above `call_margin`. On real docs the 1.5B's gate keeps quiet on
about a quarter of the requests that need a tool at the bar that keeps it quiet on 92% of near
misses. A second signal, asked only in the band between `veto_margin` and `call_margin`: let
the schema way write the call it would make there, then ask

    User request / the function / the call written -> "Does this call do what the user asked?"

and call when yes is likelier than no (no threshold to tune). A concrete call is easier to
judge than a function in the abstract: a near miss has to invent the values it needs.

    .venv/bin/python benchmarks/verify_call.py collect OUT.jsonl [--per-category 12 --irrelevance 48]
    .venv/bin/python benchmarks/verify_call.py analyze OUT.jsonl

Rows: BFCL's even split and the real-world CALIBRATION half (never the report half); per item
the gate's best margin, and for items above the veto the call written, whether it passes the
item, its verification margin, and how many of its required values the conversation holds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tqdm import tqdm  # noqa: E402

from flowcall.calling.said import Said as Grounds, conversation_text  # noqa: E402
from flowcall.calling.relevance import margin, purpose, score_tools  # noqa: E402
from flowcall.calling.schema import SchemaWay  # noqa: E402
from flowcall.datasets import DatasetItem, parse_jsonl  # noqa: E402
from flowcall.messages import Message, ModelRequest, ToolCall, ToolSpec  # noqa: E402
from flowcall.scoring import Observed, passed, score  # noqa: E402

SYSTEM = "You check whether a function call does what a user asked."
QUESTION = ("User request: {request}\n\nFunction: {name}\nDescription: {description}\n\n"
            "Call: {name}({arguments})\n\nDoes this call do what the user asked? Answer yes or no.")


def verify_request(call: ToolCall, tool: ToolSpec, text: str) -> ModelRequest:
    question = QUESTION.format(request=text, name=tool.name, description=purpose(tool),
                               arguments=json.dumps(call.arguments or {}, ensure_ascii=False))
    return ModelRequest(messages=[Message(role="system", content=SYSTEM), Message(role="user", content=question)],
                        score_options=["yes", "no"], max_tokens=1)


def required_grounded(call: ToolCall, tool: ToolSpec, grounds: Grounds) -> tuple[int, int]:
    """(said, required): how many of the call's required string/number values the conversation holds."""
    required = [k for k in tool.parameters.get("required", []) if k in (call.arguments or {})]
    values = [(call.arguments or {})[k] for k in required]
    checkable = [v for v in values if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
    return sum(grounds.literally(v) for v in checkable), len(checkable)


def tuning_items(per_category: int, irrelevance: int) -> list[tuple[str, DatasetItem]]:
    from flowcall.eval import load_cases
    from flowcall.eval.bfcl_dataset import items_from_cases

    rows: list[tuple[str, DatasetItem]] = []
    for name in ("irrelevance", "simple", "multiple", "parallel", "parallel_multiple"):
        cases = load_cases(name)[::2][: (irrelevance if name == "irrelevance" else per_category)]
        items, _ = items_from_cases(cases)
        rows += [("bfcl", item) for item in items]
    real, problems = parse_jsonl((ROOT / "benchmarks/data/realworld/calibration.jsonl").read_text(encoding="utf-8"))
    assert not problems, problems[:3]
    return rows + [("real", item) for item in real]


def collect(out: Path, per_category: int, irrelevance: int) -> None:
    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared()
    capabilities = provider.capabilities

    def call(way, sent, interpret=None, note=None):
        turn = provider.complete(sent)
        return interpret(turn) if interpret else turn

    done = set()
    if out.exists():
        done = {json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()}
    items = [(s, i) for s, i in tuning_items(per_category, irrelevance) if i.id not in done]
    with out.open("a") as sink:
        for source, item in tqdm(items, unit="item"):
            tools = [t.spec() for t in item.tools or []]
            messages = [Message(role="user", content=item.question)]
            request = ModelRequest(messages=messages, tools=tools, tool_choice="auto", parallel_tool_calls=True)
            scored = score_tools(request, call, "research")
            row = {"id": item.id, "source": source, "quiet": item.expect_no_call,
                   "gate": scored[0][0] if scored else None}
            fitting = [tool for value, tool in scored if value > (capabilities.veto_margin or 0.0)][:8]
            if fitting:
                forced = request.model_copy(update={"tool_choice": "required", "tools": fitting})
                turn = SchemaWay().decide(forced, capabilities, call)
                row["calls"] = [{"name": c.name, "arguments": c.arguments} for c in turn.tool_calls]
                seen = Observed(status="succeeded", error=None,
                                calls=[(c.name, c.arguments) for c in turn.tool_calls], answer=None, latency_s=None)
                row["passes"] = passed(score(item, seen))
                if turn.tool_calls:
                    first = turn.tool_calls[0]
                    tool = next(t for t in fitting if t.name == first.name)
                    row["verify"] = margin(provider.complete(verify_request(first, tool, item.question)).scores)
                    row["said"], row["required"] = required_grounded(first, tool, Grounds(conversation_text(messages)))
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            sink.flush()


def auc(low: list[float], high: list[float]) -> float:
    """P(a "call" row scores above a "quiet" row), ties half."""
    if not low or not high:
        return float("nan")
    wins = sum((h > q) + 0.5 * (h == q) for h in high for q in low)
    return wins / (len(low) * len(high))


def analyze(path: Path, bar: float, veto: float) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for source in ("bfcl", "real"):
        mine = [r for r in rows if r["source"] == source]
        quiet = [r for r in mine if r["quiet"]]
        call = [r for r in mine if not r["quiet"]]
        band = [r for r in mine if r["gate"] is not None and veto < r["gate"] <= bar]
        print(f"{source}: {len(quiet)} quiet, {len(call)} call; in the band ({veto}, {bar}]: "
              f"{sum(r['quiet'] for r in band)} quiet, {sum(not r['quiet'] for r in band)} call")
        verified = [r for r in band if "verify" in r]
        print(f"  verify AUC in the band {auc([r['verify'] for r in verified if r['quiet']], [r['verify'] for r in verified if not r['quiet']]):.3f}"
              f"; gate AUC in the band {auc([r['gate'] for r in band if r['quiet']], [r['gate'] for r in band if not r['quiet']]):.3f}"
              f"; gate AUC overall {auc([r['gate'] for r in quiet if r['gate'] is not None], [r['gate'] for r in call if r['gate'] is not None]):.3f}")
        for name, rule in (("bar alone", lambda r: r["gate"] is not None and r["gate"] > bar),
                           ("bar, or band and verify > 0", lambda r: r["gate"] is not None and (
                               r["gate"] > bar or (r["gate"] > veto and r.get("verify", float("-inf")) > 0))),
                           ("veto and verify > 0", lambda r: r["gate"] is not None and r["gate"] > veto
                            and r.get("verify", float("-inf")) > 0),
                           ("veto alone", lambda r: r["gate"] is not None and r["gate"] > veto)):
            q = sum(not rule(r) for r in quiet) / max(len(quiet), 1)
            c = sum(rule(r) for r in call) / max(len(call), 1)
            right = sum(rule(r) and r.get("passes", False) for r in call)
            print(f"  {name:30} quiet {q:4.0%}  calls {c:4.0%}  balanced {(q + c) / 2:5.1%}  calls that pass {right}/{len(call)}")
        for kind in ("quiet", "call"):
            values = [r["verify"] for r in verified if r["quiet"] == (kind == "quiet")]
            if values:
                print(f"  band {kind}: verify median {statistics.median(values):.2f} (n={len(values)}), "
                      f"required values said {sum(r['said'] for r in verified if r['quiet'] == (kind == 'quiet'))}"
                      f"/{sum(r['required'] for r in verified if r['quiet'] == (kind == 'quiet'))}")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("out", type=Path)
    c.add_argument("--per-category", type=int, default=12)
    c.add_argument("--irrelevance", type=int, default=48)
    a = sub.add_parser("analyze")
    a.add_argument("path", type=Path)
    a.add_argument("--bar", type=float, default=1.70)
    a.add_argument("--veto", type=float, default=0.0)
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.out, args.per_category, args.irrelevance)
    else:
        analyze(args.path, args.bar, args.veto)


if __name__ == "__main__":
    main()
