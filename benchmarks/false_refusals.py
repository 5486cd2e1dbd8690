"""How often FlowCall's argument checks refuse a call that is right (issue 34, point 1).

Grounding (calling/grounding.py) drops optional arguments the conversation "never mentions",
doc values (calling/doc_values.py) flags values that are the tool's own examples, and the
relevance gate (calling/relevance.py) withholds the tools when none seems to fit. Each was
built against copied or invented values; this script feeds them only *correct* calls, the
ones in tests/support/product_questions/questions.jsonl (every way a correct model may write the
call: the user's spelling, the other script, the canonical form), so whatever they refuse
there is a false refusal. No model is run unless --gate is given.

    .venv/bin/python benchmarks/false_refusals.py [--json PATH] [--limit N]
    FLOWCALL_MODEL=qwen2.5-coder-0.5b .venv/bin/python benchmarks/false_refusals.py --gate

Counts are per item (an item counts when any of its correct call lists is refused) and per
correct call list. Grounding harms a call when what it leaves is no longer one of the item's
correct calls (dropping a default, or "all" from "today's weather", leaves a correct call; the
--json details list every drop, with `harmful`). The last line is
`false refusals: grounding N, doc values N, gate N` in items: grounding, doc values flagged at
all, the gate's veto (<= veto_margin).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flowcall.calling.relevance import last_user_text, tool_margin  # noqa: E402
from tests.support.product_questions import (  # noqa: E402
    QUESTIONS,
    Item,
    doc_value_refusals,
    grounding_refusals,
    load_items,
)


def gate_margins(items: list[Item]) -> dict[str, dict[str, Any]]:
    """Each item's relevance margins on the embedded model (FLOWCALL_MODEL), as the gate reads
    them: tool_margin with the provider's own relevance_with_examples, on the user's request."""
    from tqdm import tqdm

    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared()
    ask = lambda asked, _label, _interpret=None: provider.complete(asked)  # noqa: E731
    out = {}
    for item in tqdm(items, desc=f"gate on {provider.model}", file=sys.stderr):
        text = last_user_text(item.messages)
        margins = {
            t.name: tool_margin(ask, t, text, provider.tuning.relevance_with_examples) for t in item.tools
        }
        best = max(margins, key=lambda name: margins[name])
        out[item.id] = {"best_tool": best, "best_margin": margins[best], "margins": margins}
    return out


# --- the report -------------------------------------------------------------------------------


def groups(items: list[Item]) -> list[tuple[str, list[Item]]]:
    """The whole set, each half, each language."""
    out = [("all", items)]
    out += [(half, [i for i in items if i.half == half]) for half in ("calibration", "report")]
    out += [(lang, [i for i in items if i.lang == lang]) for lang in ("en", "zh", "mixed")]
    return out


def table(
    title: str,
    items: list[Item],
    refused: dict[str, list[dict[str, Any]]],
    keep: Callable[[dict[str, Any]], bool] = lambda _: True,
) -> int:
    """Per group: items with a refused correct call list, and the refused lists themselves.
    Returns the count over the whole set."""
    print(f"\n{title}")
    print(f"  {'':12} {'items':>12} {'call lists':>14}")
    total = 0
    for name, members in groups(items):
        members = [i for i in members if i.needs_tool]
        hit_items = variants = hit_variants = 0
        for item in members:
            bad = {r["variant"] for r in refused[item.id] if keep(r)}
            hit_items += bool(bad)
            variants += len(item.correct)
            hit_variants += len(bad)
        total = hit_items if name == "all" else total
        print(f"  {name:12} {hit_items:>5}/{len(members):<6} {hit_variants:>6}/{variants:<7}")
    return total


def gate_table(items: list[Item], gate: dict[str, dict[str, Any]], veto: float | None, call: float) -> int:
    print(f"\nthe gate: best relevance margin per item (veto_margin {veto}, call_margin {call})")
    print(
        f"  {'':12} {'needs a tool: <= veto':>22} {'<= call':>10} {'no tool: > veto':>16} {'> call':>9}"
        f"   (where tool_choice is auto: <= veto)"
    )
    total = 0
    veto_bar = float("-inf") if veto is None else veto
    for name, members in groups(items):
        need = [i for i in members if i.needs_tool]
        free = [i for i in members if not i.needs_tool]
        auto = [i for i in need if i.tool_choice == "auto"]
        m = lambda i: gate[i.id]["best_margin"]  # noqa: E731
        vetoed = sum(m(i) <= veto_bar for i in need)
        total = vetoed if name == "all" else total
        print(
            f"  {name:12} {vetoed:>12}/{len(need):<9} {sum(m(i) <= call for i in need):>4}/{len(need):<5} "
            f"{sum(m(i) > veto_bar for i in free):>9}/{len(free):<6} "
            f"{sum(m(i) > call for i in free):>3}/{len(free):<5}   "
            f"{sum(m(i) <= veto_bar for i in auto)}/{len(auto)}"
        )
    return total


def listing(
    title: str,
    items: list[Item],
    refused: dict[str, list[dict[str, Any]]],
    keep: Callable[[dict[str, Any]], bool] = lambda _: True,
) -> None:
    """Each refused value once per item: what to fix."""
    rows = []
    for item in items:
        seen = set()
        for r in filter(keep, refused[item.id]):
            key = (
                r["tool"],
                r["argument"],
                json.dumps(r["value"], ensure_ascii=False),
                r.get("required", False),
            )
            if key not in seen:
                seen.add(key)
                note = (
                    "  (required: call not made)"
                    if r.get("not_made")
                    else "  (required; tool_choice names the tool: made after the retry)"
                    if key[3]
                    else ""
                )
                rows.append(
                    f"  {item.id:18} {r['tool']}.{r['argument']} = {key[2]}{note}   | {item.question}"
                )
    if rows:
        print(f"\n{title}")
        print("\n".join(rows))


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument(
        "--gate", action="store_true", help="also score the relevance gate on the embedded model"
    )
    parser.add_argument("--json", type=Path, help="write per-item details here")
    parser.add_argument("--quiet", action="store_true", help="no per-value listing")
    args = parser.parse_args(list(argv) if argv is not None else None)

    items = load_items(args.questions)[: args.limit]
    print(
        f"{len(items)} items ({sum(i.needs_tool for i in items)} need a tool, "
        f"{sum(len(i.correct) for i in items)} correct call lists) from {args.questions}"
    )
    grounding = {i.id: grounding_refusals(i) for i in items}
    docs = {i.id: doc_value_refusals(i) for i in items}

    harmful = lambda r: r["harmful"]  # noqa: E731
    grounded = table(
        "grounding: correct calls left incorrect by a dropped argument", items, grounding, harmful
    )
    flagged = table("doc values: correct calls with a value flagged (asked once more)", items, docs)
    table(
        "doc values in required arguments (the docs' example still there after the retry: not made)",
        items,
        docs,
        lambda r: r["required"],
    )
    table(
        "...of which not made (tool_choice auto; a flow naming the tool makes it)",
        items,
        docs,
        lambda r: r["not_made"],
    )

    gate: dict[str, dict[str, Any]] = {}
    vetoed: int | None = None
    if args.gate:
        from flowcall.providers.local import LocalProvider

        gate = gate_margins(items)
        tuning = LocalProvider.shared().tuning
        vetoed = gate_table(items, gate, tuning.veto_margin, tuning.call_margin)

    if not args.quiet:
        listing("grounding drops:", items, grounding, harmful)
        listing("doc values flags:", items, docs)
        if gate:
            low = sorted((gate[i.id]["best_margin"], i.id, i.question) for i in items if i.needs_tool)[:25]
            print("\nthe gate's lowest margins on items that need a tool:")
            print("\n".join(f"  {m:6.2f} {item_id:18} {q}" for m, item_id, q in low))

    if args.json:
        details = [
            {
                "id": i.id,
                "lang": i.lang,
                "half": i.half,
                "question": i.question,
                "needs_tool": i.needs_tool,
                "grounding": grounding[i.id],
                "doc_values": docs[i.id],
                **({"gate": gate[i.id]} if gate else {}),
            }
            for i in items
        ]
        args.json.write_text(json.dumps(details, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"\nper-item details: {args.json}")
    gate_text = "not run" if vetoed is None else str(vetoed)
    print(f"false refusals: grounding {grounded}, doc values {flagged}, gate {gate_text}")


if __name__ == "__main__":
    main()
