"""How often a model and calling way make the right calls on FlowCall's own questions (issue 35).

Runs the decision of every item in tests/support/product_questions/questions.jsonl through the
engine (`Engine.decide_only`: the calling way, the gate, grounding and doc values, nothing
executed) and compares its calls with the item's correct call lists. The embedded model is
the one FLOWCALL_MODEL names.

    FLOWCALL_MODEL=qwen2.5-coder-1.5b .venv/bin/python benchmarks/product_calls.py --half report --way schema

Each item falls in one category, as the real-world set's do:
  single     one tool attached (or an example flow's), one call expected
  nofit      no tool is needed: right when no call is made
  pick-one   several tools attached, one call expected
  several    two or more calls expected (one decision round: parallel calls)
  multi-part a request with two or three needs (the mp- items): right when every needed call
             is made (other calls may come with them); "unrequested actions" counts the items
             where a tool that changes something was called and no correct list has that call
`--way` sets every item's calling way; without it each example flow keeps its own and the
other items use `auto`, as a new flow does. Calls match a correct list as a multiset of
(name, arguments); strings compare case-insensitively and trimmed, numbers as numbers, and an
argument equal to the tool's schema default counts as left out. A task's title is the model's
own summary of the request (FREE_TEXT): any non-empty title counts; its priority and due date
must be right. `--rescore FILE` scores a saved --json file again, running no model.

Each row also says how many model calls the decision made (the gate's, the calls', the checks'),
per item. The last line is `product questions: single S%, no tool fits N%, pick one P%, several V%,
multi-part M%, unrequested actions U, median s per item T` for the items run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowcall.core.messages import ToolCall, ToolSpec  # noqa: E402
from flowcall.core.spec import DecisionConfig, Flow, load_flow  # noqa: E402
from flowcall.core.steps import MemorySink, StepKind  # noqa: E402
from flowcall.engine.loop import Engine  # noqa: E402
from flowcall.providers import provider_for  # noqa: E402
from flowcall.tools.registry import ToolRegistry  # noqa: E402
from tests.support.product_questions import FLOWS, QUESTIONS, Item, load_items, load_raw  # noqa: E402

CATEGORIES = ("single", "nofit", "pick-one", "several", "multi-part")
# arguments a model writes in its own words (a task's title): any non-empty text is right
FREE_TEXT = {"add_task": {"title"}, "create_task": {"title"}}
TITLES = {
    "single": "single",
    "nofit": "no tool fits",
    "pick-one": "pick one",
    "several": "several",
    "multi-part": "multi-part",
}
# tools that change something: a call of one that no correct list holds is an unrequested action
ACTIONS = {"add_task", "create_task", "drop_missing"}


def category(item: Item) -> str:
    if item.id.startswith("mp-"):
        return "multi-part"
    if not item.correct:
        return "nofit"
    if min(len(calls) for calls in item.correct) > 1:
        return "several"
    return "single" if len(item.tools) == 1 else "pick-one"


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in sorted(value.items())}
    return value


def shape(call: ToolCall, tools: dict[str, ToolSpec]) -> str:
    """One call as a comparable string: defaults left out, values normalised."""
    properties = (tools[call.name].parameters.get("properties") or {}) if call.name in tools else {}
    arguments = {
        k: v
        for k, v in (call.arguments or {}).items()
        if not (
            isinstance(properties.get(k), dict)
            and "default" in properties[k]
            and _norm(properties[k]["default"]) == _norm(v)
        )
    }
    for name in FREE_TEXT.get(call.name, ()):
        if isinstance(arguments.get(name), str) and arguments[name].strip():
            arguments[name] = "(text)"
    return json.dumps([call.name, _norm(arguments)], sort_keys=True, ensure_ascii=False)


def right(item: Item, made: list[ToolCall]) -> bool:
    """The calls made are a correct list; for a multi-part item, they include one."""
    tools = {t.name: t for t in item.tools}
    if not item.correct:
        return not made
    got = sorted(shape(c, tools) for c in made)
    if category(item) == "multi-part":
        return any(_includes(got, sorted(shape(c, tools) for c in calls)) for calls in item.correct)
    return any(got == sorted(shape(c, tools) for c in calls) for calls in item.correct)


def _includes(got: list[str], needed: list[str]) -> bool:
    left = list(got)
    for call in needed:
        if call not in left:
            return False
        left.remove(call)
    return True


def unrequested_action(item: Item, made: list[ToolCall]) -> bool:
    """A call of a tool that changes something, which no correct list of the item holds."""
    tools = {t.name: t for t in item.tools}
    wanted = {shape(c, tools) for calls in item.correct for c in calls}
    return any(c.name in ACTIONS and shape(c, tools) not in wanted for c in made)


def flow_for(item: Item, raw: dict[str, Any], way: str | None, max_tokens: int) -> Flow:
    """The decision as the product makes it: an example flow's way, tool_choice and parallel
    setting, or a new flow's (auto); `way` overrides the calling way."""
    shipped = load_flow(FLOWS / f"{raw['flow']}.json") if raw.get("flow") else None
    chosen = way or (shipped.decision.calling_way if shipped else "auto")
    decision = DecisionConfig(provider="local", calling_way=chosen, max_tokens=max_tokens)
    return Flow(
        name=f"product-{item.id}",
        decision=decision,
        tool_choice=item.tool_choice,
        tools=shipped.tools if shipped else list(raw["tools"]),
        parallel_tool_calls=shipped.parallel_tool_calls if shipped else True,
        max_rounds=1,
    )


def main(argv: list[str] | None = None) -> None:
    from tqdm import tqdm

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--half", choices=["calibration", "report", "all"], default="report")
    parser.add_argument(
        "--way",
        choices=["auto", "native", "schema", "prompt"],
        help="every item's calling way (default: each example flow's own, auto elsewhere)",
    )
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument(
        "--only", help="only items whose id starts with one of these, comma-separated (wx-,ct-)"
    )
    parser.add_argument(
        "--category", help="only items of these categories, comma-separated (pick-one,multi-part)"
    )
    parser.add_argument("--json", type=Path, help="write per-item results here")
    parser.add_argument("--rescore", type=Path, help="score a saved --json file again (no model is run)")
    args = parser.parse_args(argv)

    raws = {r["id"]: r for r in load_raw(args.questions)}
    items = [i for i in load_items(args.questions) if args.half == "all" or i.half == args.half][: args.limit]
    if args.only:
        items = [i for i in items if i.id.startswith(tuple(args.only.split(",")))]
    if args.category:
        items = [i for i in items if category(i) in args.category.split(",")]
    if args.rescore:
        saved = json.loads(args.rescore.read_text(encoding="utf-8"))
        by_id = {i.id: i for i in load_items(args.questions)}
        model, args.way, args.half, rows = saved["model"], saved["way"], saved["half"], saved["items"]
        for r in rows:
            made = [
                ToolCall(id=f"c{n}", name=c["name"], arguments=c["arguments"])
                for n, c in enumerate(r["calls"])
            ]
            r["category"] = category(by_id[r["id"]])
            r["right"] = r["error"] is None and right(by_id[r["id"]], made)
            r["unrequested"] = unrequested_action(by_id[r["id"]], made)
        return report(rows, model, args)
    engine = Engine(ToolRegistry(), provider_for, MemorySink())
    model = provider_for(DecisionConfig(provider="local")).model
    rows = []
    with tqdm(items, desc=f"{model} [{args.way or 'as shipped'}]", unit="item", file=sys.stderr) as bar:
        for item in bar:
            flow = flow_for(item, raws[item.id], args.way, args.max_tokens)
            started = time.perf_counter()
            run, turn = engine.decide_only(flow, item.messages, item.tools, label=flow.name)
            seconds = time.perf_counter() - started
            made = turn.tool_calls if turn else []
            ok = run.error is None and right(item, made)
            rows.append(
                {
                    "id": item.id,
                    "lang": item.lang,
                    "category": category(item),
                    "way": flow.decision.calling_way,
                    "question": item.question,
                    "right": ok,
                    "seconds": round(seconds, 3),
                    "error": run.error,
                    "unrequested": unrequested_action(item, made),
                    "model_calls": sum(s.kind == StepKind.MODEL_CALL for s in run.steps),
                    # why it decided so: each model call's note
                    "checks": [s.note for s in run.steps if s.kind == StepKind.MODEL_CALL],
                    "calls": [{"name": c.name, "arguments": c.arguments} for c in made],
                }
            )
            bar.set_postfix_str(f"{rows[-1]['category']} {'ok' if ok else 'WRONG'}")
    report(rows, model, args)


def report(rows: list[dict[str, Any]], model: str, args: argparse.Namespace) -> None:
    print(f"{model}, way {args.way or 'as shipped'}, {args.half} half: {len(rows)} items")
    print(f"  {'':10} {'all':>14} {'en':>12} {'zh':>12} {'mixed':>12} {'model calls':>12}")
    share = {}
    for name in CATEGORIES:
        mine = [r for r in rows if r["category"] == name]
        if not mine:
            continue
        share[name] = 100 * sum(r["right"] for r in mine) / len(mine)
        cells = []
        for lang in ("en", "zh", "mixed"):
            part = [r for r in mine if r["lang"] == lang]
            cells.append(f"{sum(r['right'] for r in part)}/{len(part)}" if part else "-")
        counted = [r["model_calls"] for r in mine if "model_calls" in r]
        per_item = f"{statistics.mean(counted):.1f}" if counted else "-"
        print(
            f"  {TITLES[name]:10} {sum(r['right'] for r in mine):>5}/{len(mine):<3} {share[name]:5.1f}%"
            + "".join(f" {c:>12}" for c in cells)
            + f" {per_item:>12}"
        )
    print(f"  {'all':10} {sum(r['right'] for r in rows):>5}/{len(rows):<3}")
    wrong = [r for r in rows if not r["right"]]
    for r in wrong:
        calls = (
            "; ".join(f"{c['name']}({json.dumps(c['arguments'], ensure_ascii=False)})" for c in r["calls"])
            or "no call"
        )
        print(
            f"  WRONG {r['id']:16} {r['category']:8} {calls[:110]}  | "
            f"{r['question'][:60]}{'  ' + r['error'][:80] if r['error'] else ''}"
        )
    if args.json and not args.rescore:
        args.json.write_text(
            json.dumps(
                {"model": model, "way": args.way, "half": args.half, "items": rows},
                ensure_ascii=False,
                indent=1,
            ),
            encoding="utf-8",
        )
    median = statistics.median(r["seconds"] for r in rows) if rows else 0.0
    unrequested = sum(bool(r.get("unrequested")) for r in rows)
    print(
        "product questions: "
        + ", ".join(f"{TITLES[n]} {share[n]:.1f}%" for n in CATEGORIES if n in share)
        + f", unrequested actions {unrequested}, median s per item {median:.2f}"
    )


if __name__ == "__main__":
    main()
