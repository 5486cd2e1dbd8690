"""Compare two runs step by step: which steps correspond, and what differs between them.

Steps are aligned on what they are, not on their numbers: a model step by its kind and
round, a tool call by its round and tool. So a run with one extra call still lines up with the other
around that call (difflib's longest matching blocks), as a code diff lines up around an
inserted line.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flowcall.core.steps import Run, Step, StepKind, is_reused


@dataclass
class StepPair:
    left: Step | None
    right: Step | None
    differences: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return self.left is not None and self.right is not None and not self.differences


def _keys(steps: list[Step]) -> list[str]:
    """A step's identity: its kind and round, plus, for a tool, its name and how many calls of
    that tool came before it in the round (so the first call pairs with the first)."""
    keys, seen = [], Counter()
    for step in steps:
        key = f"{step.kind}:{step.round}"
        if step.kind in (StepKind.TOOL_CALL, StepKind.APPROVAL, StepKind.WARNING):
            seen[(key, step.name)] += 1
            key += f":{step.name}#{seen[(key, step.name)]}"
        keys.append(key)
    return keys


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _argument_changes(left: dict | None, right: dict | None) -> list[str]:
    left, right = left or {}, right or {}
    changes = []
    for key in sorted(set(left) | set(right), key=str):
        if key not in right:
            changes.append(f"argument {key} only left ({_short(left[key], 40)})")
        elif key not in left:
            changes.append(f"argument {key} only right ({_short(right[key], 40)})")
        elif left[key] != right[key]:
            changes.append(f"argument {key}: {_short(left[key], 40)} → {_short(right[key], 40)}")
    return changes


def step_differences(left: Step, right: Step) -> list[str]:
    """What a person comparing the two steps wants to know first."""
    found = []
    if left.name != right.name:
        found.append(f"name: {left.name} → {right.name}")
    if left.calling_way != right.calling_way:
        found.append(f"calling way: {left.calling_way} → {right.calling_way}")
    found += _argument_changes(left.arguments, right.arguments)
    left_calls = [(c.get("name"), c.get("arguments")) for c in left.tool_calls or []]
    right_calls = [(c.get("name"), c.get("arguments")) for c in right.tool_calls or []]
    if left_calls != right_calls:
        found.append(f"tool calls: {_short(left_calls)} → {_short(right_calls)}")
    if left.result != right.result:
        found.append(f"result: {_short(left.result)} → {_short(right.result)}")
    if left.error_code != right.error_code:
        found.append(f"error: {left.error_code or 'none'} → {right.error_code or 'none'}")
    if (left.tokens_in, left.tokens_out) != (right.tokens_in, right.tokens_out):
        found.append(f"tokens: {left.tokens_in}+{left.tokens_out} → {right.tokens_in}+{right.tokens_out}")
    return found


def align(left: Run, right: Run) -> list[StepPair]:
    """Every step of both runs, in order, paired where they correspond."""
    a, b = left.steps, right.steps
    matcher = difflib.SequenceMatcher(None, _keys(a), _keys(b), autojunk=False)
    pairs: list[StepPair] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pairs += [StepPair(x, y, step_differences(x, y)) for x, y in zip(a[i1:i2], b[j1:j2])]
            continue
        pairs += [StepPair(x, None, ["only in the left run"]) for x in a[i1:i2]]
        pairs += [StepPair(None, y, ["only in the right run"]) for y in b[j1:j2]]
    return pairs


def latency_ms(step: Step | None) -> float | None:
    return None if step is None else round(step.latency_ms, 1)


def summary(left: Run, right: Run) -> dict[str, tuple[Any, Any]]:
    """Run-level figures side by side."""

    def seconds(run: Run) -> float:  # a step a re-run reused took its time in the run it re-ran
        return round(sum(s.latency_ms for s in run.steps if not is_reused(s)) / 1000, 2)

    return {
        "status": (str(left.status), str(right.status)),
        "steps": (len(left.steps), len(right.steps)),
        "tool calls": (
            sum(s.kind == StepKind.TOOL_CALL for s in left.steps),
            sum(s.kind == StepKind.TOOL_CALL for s in right.steps),
        ),
        "tokens in": (left.tokens_in, right.tokens_in),
        "tokens out": (left.tokens_out, right.tokens_out),
        "step time (s)": (seconds(left), seconds(right)),
        "answer": (_short(left.final_answer), _short(right.final_answer)),
    }
