"""A relevance gate with no threshold: score, beside each tool, a rival "function" that stands
for answering without tools, and call only when some tool fits the request better than the
rival does (issue 14, point 2: "compare tools against each other", "let the decision carry a
no-call option"). Changes nothing; collects margins, then compares rules offline.

    .venv/bin/python benchmarks/no_tool_rival.py collect FEATURES.jsonl OUT.jsonl
    .venv/bin/python benchmarks/no_tool_rival.py analyze OUT.jsonl

FEATURES.jsonl is benchmarks/relevance_features.py's record (BFCL's even split, 20 per category
and 80 irrelevance, then the real-world CALIBRATION half; never the report half), whose `fr`
and `lead` margins give the shipped gate's margin per tool ("now": the description as written
when it fits in 300 characters, else its leading sentences). To those rows this adds each
rival's margin for the request, and rows for the example flows' own questions
(benchmarks/data/product_questions.json) with both.
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

from flowcall.calling import relevance  # noqa: E402
from flowcall.messages import ToolSpec  # noqa: E402

RIVALS = {
    "direct": ToolSpec(name="answer_directly", description=(
        "Reply to the user in words, without calling any function: greetings, chit-chat, general knowledge, "
        "writing, math, advice, or any request that the other functions cannot carry out."),
        parameters={"type": "object", "properties": {"reply": {"type": "string"}}}),
    "none": ToolSpec(name="no_suitable_function", description=(
        "Use when none of the available functions can do what the user asks."),
        parameters={"type": "object", "properties": {}}),
}


def now_margin(tool: ToolSpec, scored: dict) -> float:
    """The shipped gate's margin, from the recorded variants (relevance.purpose picks by length)."""
    return scored["fr"] if len(tool.description or "") <= relevance.PURPOSE_MAX else scored["lead"]


def product_rows():
    from flowcall import config
    from flowcall.spec import load_flow
    from flowcall.tools.registry import ToolRegistry

    questions = json.loads((ROOT / "benchmarks/data/product_questions.json").read_text(encoding="utf-8"))["flows"]
    registry = ToolRegistry.from_plugin_dirs(config.plugin_dirs())
    for file, sets in questions.items():
        tools = [t.spec() for t in registry.resolve(load_flow(ROOT / "flows" / file).tools)]
        for kind, texts in sets.items():
            for text in texts:
                yield file, kind, text, tools


def collect(features: Path, out: Path) -> None:
    from flowcall.providers.local import LocalProvider

    sys.argv = [sys.argv[0]]
    import benchmarks.relevance_features as features_mod  # noqa: PLC0415

    features_mod.rows.args = argparse.Namespace(per_category=20, irrelevance=80)
    provider = LocalProvider.shared()

    def score(tool: ToolSpec, text: str) -> float:
        return relevance.margin(provider.complete(relevance.relevance_request(tool, text)).scores)

    done = [json.loads(line) for line in features.read_text(encoding="utf-8").splitlines() if line.strip()]
    todo = list(features_mod.rows())
    assert len(done) == len(todo), (len(done), len(todo))
    product = list(product_rows())
    with out.open("w", encoding="utf-8") as sink, tqdm(total=len(todo) + len(product), unit="item") as bar:
        for row, (_s, _f, _c, _k, text, _m, tools, _e) in zip(done, todo):
            kept = {"source": row["source"], "family": row["family"], "category": row["category"],
                    "kind": row["kind"], "question": row["question"], "expected": row["expected"],
                    "now": [now_margin(t, s) for t, s in zip(tools, row["tools"])],
                    "rivals": {name: score(rival, text) for name, rival in RIVALS.items()}}
            sink.write(json.dumps(kept, ensure_ascii=False) + "\n")
            sink.flush()
            bar.update(1)
        for file, kind, text, tools in product:
            kept = {"source": "product", "family": file, "category": kind, "kind": kind, "question": text,
                    "expected": [], "now": [score(t, text) for t in tools],
                    "rivals": {name: score(rival, text) for name, rival in RIVALS.items()}}
            sink.write(json.dumps(kept, ensure_ascii=False) + "\n")
            sink.flush()
            bar.update(1)


def rates(rows: list[dict], calls) -> str:
    quiet = [not calls(r) for r in rows if r["kind"] == "quiet"]
    call = [calls(r) for r in rows if r["kind"] == "call"]
    q, c = sum(quiet) / len(quiet), sum(call) / len(call)
    return f"{q:4.0%}/{c:4.0%}/{(q + c) / 2:6.1%}"


def analyze(path: Path) -> None:
    data = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    sources = {name: [r for r in data if r["source"] == name] for name in ("bfcl", "realworld", "product")}
    print(" | ".join(f"{name}: {sum(r['kind'] == 'quiet' for r in rows)} quiet, "
                     f"{sum(r['kind'] == 'call' for r in rows)} call" for name, rows in sources.items()))
    print(f"{'rule':44} " + " ".join(f"{name + ' q/c/bal':>22}" for name in sources))
    rules = {"bar 0.77 (shipped)": lambda r: max(r["now"]) > 0.77}
    for name in RIVALS:
        rules[f"best tool > rival '{name}' (no threshold)"] = lambda r, n=name: max(r["now"]) > r["rivals"][n]
    rules["best tool > both rivals (no threshold)"] = lambda r: max(r["now"]) > max(r["rivals"].values())
    for label, rule in rules.items():
        print(f"{label:44} " + " ".join(f"{rates(rows, rule):>22}" for rows in sources.values()))
    for name in RIVALS:
        for source, rows in sources.items():
            gap_q = [max(r["now"]) - r["rivals"][name] for r in rows if r["kind"] == "quiet"]
            gap_c = [max(r["now"]) - r["rivals"][name] for r in rows if r["kind"] == "call"]
            print(f"  best tool - rival '{name}', {source}: median quiet {statistics.median(gap_q):+.2f}, "
                  f"call {statistics.median(gap_c):+.2f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["collect", "analyze"])
    parser.add_argument("path", type=Path)
    parser.add_argument("out", type=Path, nargs="?")
    args = parser.parse_args()
    if args.command == "collect":
        collect(args.path, args.out)
    else:
        analyze(args.path)


if __name__ == "__main__":
    main()
