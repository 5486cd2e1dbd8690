"""Calibrate `call_margin` for a scoring provider: the relevance margin (logP(yes) - logP(no),
best tool) on a tuning split of BFCL (even-numbered cases), and the threshold that maximises
balanced accuracy between "keep quiet" (irrelevance) and "call" (the other categories).
The odd-numbered cases are left for the evaluation. Prints figures; changes nothing.

    .venv/bin/python benchmarks/calibrate_call_margin.py [--per-category 25] [--irrelevance 100]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tqdm import tqdm  # noqa: E402

from flowcall.calling.relevance import last_user_text, margin, relevance_request  # noqa: E402
from flowcall.eval import load_cases  # noqa: E402
from flowcall.providers.local import LocalProvider  # noqa: E402


def best_margin(provider: LocalProvider, case) -> float:
    text = last_user_text(case.messages)
    return max(margin(provider.complete(relevance_request(tool, text)).scores) for tool in case.tools)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-category", type=int, default=25)
    parser.add_argument("--irrelevance", type=int, default=100)
    args = parser.parse_args()
    provider = LocalProvider.shared()
    tuning = {name: load_cases(name)[::2][: (args.irrelevance if name == "irrelevance" else args.per_category)]
              for name in ("irrelevance", "simple", "multiple", "parallel", "parallel_multiple")}
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
    best = max(candidates, key=lambda t: (sum(m <= t for m in quiet) / len(quiet) + sum(m > t for m in call) / len(call)))
    print(f"irrelevance margins: median {statistics.median(quiet):.2f}; relevant: median {statistics.median(call):.2f}")
    for t in sorted(set([best] + [x / 10 for x in range(0, 25, 2)])):
        print(f"  threshold {t:5.2f}: keeps quiet on {sum(m <= t for m in quiet) / len(quiet):.1%} of irrelevance, "
              f"calls on {sum(m > t for m in call) / len(call):.1%} of relevant"
              + ("   <- best balanced accuracy" if t == best else ""))
    for name, values in margins.items():
        print(f"  {name}: calls at best threshold {sum(m > best for m in values) / len(values):.1%}")


if __name__ == "__main__":
    main()
