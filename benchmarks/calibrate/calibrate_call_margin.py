"""Calibrate `call_margin` for a scoring provider: the relevance margin (logP(yes) - logP(no),
best tool) on a tuning split of BFCL (even-numbered cases), and the threshold that maximises
balanced accuracy between "keep quiet" (irrelevance) and "call" (the other categories).
The odd-numbered cases are left for the evaluation. Prints figures; changes nothing.

    .venv/bin/python benchmarks/calibrate/calibrate_call_margin.py [--per-category 25] [--irrelevance 100]

BFCL is all English and has no system prompts; `--product` instead scores the questions in
benchmarks/data/product_questions.json (Chinese and English) against the example flows' tools
and shows where the provider's call_margin falls for them.

    .venv/bin/python benchmarks/calibrate/calibrate_call_margin.py --product

`--realworld` adds the calibration half of benchmarks/data/realworld (never the report half):
real users' requests against real tool docs. It prints both sources' separation side by side,
and the threshold that maximises the mean of the two balanced accuracies, so that neither
source outweighs the other (issue 14, point 2).

    .venv/bin/python benchmarks/calibrate/calibrate_call_margin.py --realworld \\
        [--per-category 12 --irrelevance 48]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tqdm import tqdm  # noqa: E402

from flowcall.calling.relevance import last_user_text, tool_margin  # noqa: E402
from flowcall.core import config  # noqa: E402
from flowcall.core.spec import load_flow  # noqa: E402
from flowcall.eval import load_cases  # noqa: E402
from flowcall.providers.local import LocalProvider  # noqa: E402
from flowcall.tools.registry import ToolRegistry  # noqa: E402


def fit(provider: LocalProvider, tool, text: str) -> float:
    """The margin the provider's gate reads (relevance.tool_margin, with its own settings)."""
    return tool_margin(
        lambda asked, _label, _interpret=None: provider.complete(asked),
        tool,
        text,
        provider.tuning.relevance_with_examples,
    )


def best_margin(provider: LocalProvider, case) -> float:
    text = last_user_text(case.messages)
    return max(fit(provider, tool, text) for tool in case.tools)


def product(provider: LocalProvider) -> None:
    questions = json.loads((ROOT / "benchmarks/data/product_questions.json").read_text(encoding="utf-8"))[
        "flows"
    ]
    threshold = provider.tuning.call_margin
    rows = []  # (flow, kind, language, margin, question)
    for file, sets in questions.items():
        flow = load_flow(ROOT / "flows" / file)
        tools = [t.spec() for t in ToolRegistry.from_plugin_dirs(config.plugin_dirs()).resolve(flow.tools)]
        for kind, texts in sets.items():
            for text in texts:
                value = max(fit(provider, t, text) for t in tools)
                rows.append((file, kind, "zh" if re.search(r"[\u3400-\u9fff]", text) else "en", value, text))
    for file, kind, language, value, text in rows:
        wrong = (value > threshold) != (kind == "call")
        print(f"{'WRONG' if wrong else 'ok':5} {file:22} {kind:5} {language} {value:6.2f}  {text}")
    for language in ("zh", "en"):
        mine = [r for r in rows if r[2] == language]
        calls = [r[3] for r in mine if r[1] == "call"]
        quiet = [r[3] for r in mine if r[1] == "quiet"]
        print(
            f"{language}: at call_margin {threshold}: calls on "
            f"{sum(m > threshold for m in calls)}/{len(calls)} that need a tool, keeps quiet on "
            f"{sum(m <= threshold for m in quiet)}/{len(quiet)} that do not"
        )


def realworld_margins(provider: LocalProvider) -> tuple[list[float], list[float]]:
    """(quiet, call) best margins on the calibration half: no-fit items, and items that expect calls."""
    from flowcall.core.datasets import parse_jsonl

    items, problems = parse_jsonl(
        (ROOT / "benchmarks/data/realworld/calibration.jsonl").read_text(encoding="utf-8")
    )
    assert not problems, problems[:3]
    quiet, call = [], []
    for item in tqdm(items, unit="item", desc="real-world calibration half"):
        value = max(fit(provider, t.spec(), item.question) for t in item.tools)
        (quiet if item.expect_no_call else call).append(value)
    return quiet, call


def balanced(quiet: list[float], call: list[float], t: float) -> float:
    return (sum(m <= t for m in quiet) / len(quiet) + sum(m > t for m in call) / len(call)) / 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-category", type=int, default=25)
    parser.add_argument("--irrelevance", type=int, default=100)
    parser.add_argument("--product", action="store_true", help="the example flows' questions instead of BFCL")
    parser.add_argument("--realworld", action="store_true", help="also the real-world calibration half")
    args = parser.parse_args()
    provider = LocalProvider.shared()
    if args.product:
        product(provider)
        return
    tuning = {
        name: load_cases(name)[::2][: (args.irrelevance if name == "irrelevance" else args.per_category)]
        for name in ("irrelevance", "simple", "multiple", "parallel", "parallel_multiple")
    }
    margins = {}
    with tqdm(total=sum(map(len, tuning.values())), unit="case") as bar:
        for name, cases in tuning.items():
            margins[name] = []
            for case in cases:
                margins[name].append(best_margin(provider, case))
                bar.update(1)
    quiet = margins.pop("irrelevance")
    call = [m for values in margins.values() for m in values]
    candidates = sorted(set(round(m, 2) for m in quiet + call))
    best = max(
        candidates,
        key=lambda t: sum(m <= t for m in quiet) / len(quiet) + sum(m > t for m in call) / len(call),
    )
    print(
        f"irrelevance margins: median {statistics.median(quiet):.2f}; "
        f"relevant: median {statistics.median(call):.2f}"
    )
    for t in sorted(set([best] + [x / 10 for x in range(0, 25, 2)])):
        print(
            f"  threshold {t:5.2f}: keeps quiet on {sum(m <= t for m in quiet) / len(quiet):.1%} of "
            f"irrelevance, calls on {sum(m > t for m in call) / len(call):.1%} of relevant"
            + ("   <- best balanced accuracy" if t == best else "")
        )
    for name, values in margins.items():
        print(f"  {name}: calls at best threshold {sum(m > best for m in values) / len(values):.1%}")
    if args.realworld:
        rw_quiet, rw_call = realworld_margins(provider)
        mixed = max(
            candidates + sorted(set(round(m, 2) for m in rw_quiet + rw_call)),
            key=lambda t: balanced(quiet, call, t) + balanced(rw_quiet, rw_call, t),
        )
        print(
            f"real-world calibration half: {len(rw_quiet)} no-fit, {len(rw_call)} calling; margins median "
            f"{statistics.median(rw_quiet):.2f} / {statistics.median(rw_call):.2f}"
        )
        print(f"{'threshold':>9}  {'BFCL quiet/call/balanced':>26}  {'real-world quiet/call/balanced':>32}")
        for t in sorted(
            set([best, mixed, provider.tuning.call_margin] + [x / 10 for x in range(-10, 31, 5)])
        ):
            row = [
                f"{sum(m <= t for m in q) / len(q):.0%} / "
                f"{sum(m > t for m in c) / len(c):.0%} / {balanced(q, c, t):.1%}"
                for q, c in ((quiet, call), (rw_quiet, rw_call))
            ]
            mark = (
                ("  <- best on the mix" if t == mixed else "")
                + ("  <- BFCL's best" if t == best else "")
                + ("  <- the provider's now" if t == provider.tuning.call_margin else "")
            )
            print(f"{t:9.2f}  {row[0]:>26}  {row[1]:>32}{mark}")


if __name__ == "__main__":
    main()
