"""Which optional arguments should grounding drop? Rules compared on recorded decisions, no model run.

Grounding (flowcall/calling/grounding.py) drops an optional argument whose value the
conversation never mentions. A value chosen from a closed set (an enum member, a boolean)
is said in the user's own words ("only the ones I can edit" -> minAccessRole "writer"), so a
literal look-up cannot tell whether the user asked for it. This script takes experiments of
decision-only runs on tuning data (BFCL's even split and the real-world calibration half,
never the report half), grounds each final call's raw arguments (as the model wrote them)
again under each rule, scores the result against the item, and prints passes per source.

An expectation leaves arguments it does not list free, so a rule that keeps more can only
gain passes there, even when what it keeps is invented. So each value a rule keeps that
grounding drops today is also judged on its own, for a call of the expected tool: "right"
(the expectation lists it with that value), "wrong" (listed with another value) or
"unlisted" (the item does not ask for it: an invented filter or option, which a real API
would act on):

    FLOWCALL_HOME=... .venv/bin/python benchmarks/calibrate/grounding_rules.py ID [ID ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recorded_decisions import recorded  # noqa: E402

from flowcall.calling.grounding import enum_choice, ground_optional  # noqa: E402
from flowcall.calling.said import Said as Grounds  # noqa: E402
from flowcall.calling.said import conversation_text
from flowcall.core.messages import Message, ToolCall, ToolSpec  # noqa: E402
from flowcall.eval.scoring import Observed, argument_mismatch, name_matches, passed, score  # noqa: E402
from flowcall.service.front import FlowCall  # noqa: E402


def now(call: ToolCall, tool: ToolSpec, grounds: Grounds) -> ToolCall:
    return ground_optional(call, tool, grounds)


def keep_closed_sets(call: ToolCall, tool: ToolSpec, grounds: Grounds) -> ToolCall:
    """As now, but an optional value from the parameter's enum is kept (unless it is the default):
    the product's keep_enum_choices (a boolean is never dropped unless it is the default)."""
    return ground_optional(call, tool, grounds, keep_enum=True)


def nothing_dropped(call: ToolCall, tool: ToolSpec, grounds: Grounds) -> ToolCall:
    return call


def drop_translations(call: ToolCall, tool: ToolSpec, grounds: Grounds) -> ToolCall:
    """As 'keep closed sets', but a value in a script the conversation does not use ("Shanghai,China"
    for 上海) is dropped too, as grounding did until it kept translations."""
    grounded = keep_closed_sets(call, tool, grounds)
    gone = {
        k: v
        for k, v in grounded.arguments.items()
        if k not in set(tool.parameters.get("required", []))
        and grounds.in_other_script(v)
        and not grounds.literally(v)
        and not enum_choice((tool.parameters.get("properties") or {}).get(k) or {}, v)
    }
    if not gone:
        return grounded
    return grounded.model_copy(
        update={
            "arguments": {k: v for k, v in grounded.arguments.items() if k not in gone},
            "dropped_arguments": {**grounded.dropped_arguments, **gone},
        }
    )


RULES: dict[str, Callable[[ToolCall, ToolSpec, Grounds], ToolCall]] = {
    "now": now,
    "keep closed sets": keep_closed_sets,
    "keep closed sets, drop translations": drop_translations,
    "drop nothing": nothing_dropped,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("experiments", nargs="+")
    args = parser.parse_args()
    tally: Counter[tuple[str, str, str]] = Counter()
    for found in recorded(FlowCall.open(None), args.experiments):
        item, run, decision, source = found.item, found.run, found.decision, found.source
        raw = [
            ToolCall(id=c["id"], name=c["name"], arguments=json.loads(c["raw_arguments"]))
            for c in decision.get("tool_calls") or []
            if c.get("raw_arguments")
        ]
        tools = {t.name: t.spec() for t in item.tools or []}
        grounds = Grounds(conversation_text([Message(role="user", content=item.question)]))
        for name, rule in RULES.items():
            calls = [rule(c, tools[c.name], grounds) if c.name in tools else c for c in raw]
            for before, after in zip(
                [now(c, tools[c.name], grounds) if c.name in tools else c for c in raw], calls
            ):
                expected = next(
                    (e for e in item.expect_calls or [] if name_matches(e.name, after.name)), None
                )
                for key, value in (after.arguments or {}).items():
                    if expected is None or key in (before.arguments or {}):
                        continue
                    verdict = (
                        "unlisted"
                        if key not in expected.arguments
                        else "right"
                        if argument_mismatch({key: expected.arguments[key]}, {key: value}) is None
                        else "wrong"
                    )
                    tally[(found.model, source, f"{name}: kept {verdict}")] += 1
            seen = Observed(
                status=str(run.status),
                error=run.error,
                calls=[(c.name, c.arguments) for c in calls],
                answer=decision.get("answer"),
                latency_s=None,
            )
            tally[(found.model, source, name)] += passed(score(item, seen))
        tally[(found.model, source, "items")] += 1
    for model in sorted({m for m, _, _ in tally}):
        for source in ("bfcl", "real-world"):
            n = tally[(model, source, "items")]
            if n:
                print(
                    f"{model} {source} ({n} items), passed: "
                    + ", ".join(f"{name} {tally[(model, source, name)]}" for name in RULES)
                )
                for name in list(RULES)[1:]:
                    print(
                        f"    values {name!r} keeps that grounding drops now: "
                        + ", ".join(
                            f"{verdict} {tally[(model, source, f'{name}: kept {verdict}')]}"
                            for verdict in ("right", "wrong", "unlisted")
                        )
                    )


if __name__ == "__main__":
    main()
