"""Judge one recorded run against one dataset item: a verdict per expectation, pure functions.

What a run showed (`Observed`) is read from its record: its status, the calls its decision
model made (every tool_call step, in order, whether the tool succeeded or the call was refused;
a decide-only run, which executes nothing, has its model steps' parsed calls instead), its final
answer and its time from start to end. Each expectation the item has gives one Verdict; so does
`succeeded` (the run must have succeeded), which every item has. An item passes when all its
verdicts pass.

Values are compared as JSON values: 1 equals 1.0, true equals only true, objects and lists
equal when all they hold is equal. An expected call's arguments are a subset: the arguments
named must be there with these values (or one of an `any_of` list; an `optional` one may be
absent), others are free. Unordered, each expected call needs its own call made (a matching,
so the order never matters); ordered, the expected calls must be made in that order, with any
other calls between them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowcall.core.datasets import ANY_OF, OPTIONAL, DatasetItem, ExpectedCall, is_matcher
from flowcall.core.experiment_record import Verdict
from flowcall.core.schemas import RegexTimeout, schema_errors, search
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, Run, RunStatus, StepKind
from flowcall.engine.provenance import traced_share, unbacked_value

Call = tuple[str, Mapping[str, Any] | None]  # (tool name, arguments; None when they could not be read)
SUCCEEDED = "succeeded"
_SHOWN = 80  # characters of a value quoted in a reason


@dataclass(frozen=True)
class Observed:
    status: str
    error: str | None
    calls: list[Call]
    answer: Any
    latency_s: float | None
    outcome: str | None = None  # steps.ANSWERED_WITHOUT_TOOLS when no tool result backs the answer
    provenance: list[dict[str, Any]] | None = None


def observe(run: Run, *, decision_only: bool = False) -> Observed:
    """What `run` showed. A decide-only run's answer is its model's text (it makes no other)."""
    if decision_only:
        # the decision is the one the run ended with: the model steps before it hold attempts
        # the engine refused (a doc value, an invalid call) and, written call by call, each
        # step the list so far; counting those would pass a run on calls it never settled on
        decision = run.final_answer if isinstance(run.final_answer, dict) else {}
        calls = [
            (c.get("name", ""), c.get("arguments"))
            for c in decision.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        answer = decision.get("answer")
    else:
        calls = [(s.name or "", s.arguments) for s in run.steps if s.kind == StepKind.TOOL_CALL]
        answer = run.final_answer
    latency = (run.ended_at - run.started_at).total_seconds() if run.ended_at else None
    return Observed(
        status=str(run.status),
        error=run.error,
        calls=calls,
        answer=answer,
        latency_s=latency,
        outcome=run.outcome,
        provenance=run.provenance,
    )


def _show(value: Any, *, as_json: bool = False) -> str:
    """A value quoted in a reason; as JSON (a string in quotes) where "1" and 1 must differ."""
    text = (
        value
        if isinstance(value, str) and not as_json
        else json.dumps(value, ensure_ascii=False, default=str)
    )
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _call_text(call: Call) -> str:
    return f"{call[0]}({_show(call[1]) if call[1] is not None else 'unreadable arguments'})"


def same_value(expected: Any, actual: Any) -> bool:
    """Equal as JSON values: numbers by value (1 == 1.0), booleans only to booleans."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(same_value(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(same_value(a, b) for a, b in zip(expected, actual))
    return type(expected) is type(actual) and expected == actual


def argument_mismatch(expected: Mapping[str, Any], actual: Mapping[str, Any] | None) -> str | None:
    """Why `actual` does not hold the `expected` subset of arguments, or None when it does."""
    if actual is None:
        return "its arguments could not be read"
    for name, want in expected.items():
        matcher = want if is_matcher(want) else {ANY_OF: [want]}
        if name not in actual:
            if matcher.get(OPTIONAL, False):
                continue
            return f"argument {name!r} is missing"
        if not any(same_value(option, actual[name]) for option in matcher[ANY_OF]):
            options = matcher[ANY_OF]
            wanted = _show(options[0], as_json=True) if len(options) == 1 else f"one of {_show(options)}"
            return f"argument {name!r} is {_show(actual[name], as_json=True)}, not {wanted}"
    return None


def name_matches(expected: str, actual: str) -> bool:
    """A tool named by its name (get_weather) or its version (weather/v1/get_weather)."""
    return expected == actual or expected.rsplit("/", 1)[-1] == actual


def call_mismatch(expected: ExpectedCall, call: Call) -> str | None:
    if not name_matches(expected.name, call[0]):
        return f"it calls {call[0]!r}"
    return argument_mismatch(expected.arguments, call[1])


def matching(rows: int, columns: int, fits: Callable[[int, int], bool]) -> dict[int, int] | None:
    """A distinct column for every row where fits(row, column), as {column: row}; None if none
    exists (Kuhn's augmenting paths: a greedy pass misses some that exist)."""
    owner: dict[int, int] = {}

    def assign(row: int, seen: set[int]) -> bool:
        for column in range(columns):
            if column not in seen and fits(row, column):
                seen.add(column)
                if column not in owner or assign(owner[column], seen):
                    owner[column] = row
                    return True
        return False

    return owner if all(assign(row, set()) for row in range(rows)) else None


def _closest(expected: ExpectedCall, calls: Sequence[Call]) -> str:
    """Why no call made fits `expected`: about the calls of its tool if there are any."""
    same_tool = [c for c in calls if name_matches(expected.name, c[0])]
    if not same_tool:
        made = ", ".join(sorted({c[0] for c in calls})) or "none"
        return f"no call of {expected.name} (calls made: {made})"
    reasons = "; ".join(f"{_call_text(c)}: {call_mismatch(expected, c)}" for c in same_tool[:3])
    return f"no call of {expected.name} fits: {reasons}"


def calls_verdict(expected: list[ExpectedCall], calls: Sequence[Call], ordered: bool) -> Verdict:
    if ordered:
        position = 0
        for index, want in enumerate(expected):
            while position < len(calls) and call_mismatch(want, calls[position]) is not None:
                position += 1
            if position == len(calls):
                return Verdict(
                    expectation="expect_calls",
                    passed=False,
                    reason=f"expected call {index + 1} in order: {_closest(want, calls[:])}",
                )
            position += 1
        return Verdict(
            expectation="expect_calls", passed=True, reason=f"{len(expected)} call(s) made in order"
        )
    fits = [[call_mismatch(want, call) is None for call in calls] for want in expected]
    if matching(len(expected), len(calls), lambda row, column: fits[row][column]) is not None:
        return Verdict(
            expectation="expect_calls", passed=True, reason=f"{len(expected)} expected call(s) made"
        )
    missing = next(
        i
        for i, want in enumerate(expected)
        if matching(i + 1, len(calls), lambda row, column: fits[row][column]) is None
    )
    want = expected[missing]
    why = (
        _closest(want, calls)
        if not any(fits[missing])
        else "the calls that fit it are taken by other expected calls"
    )
    return Verdict(expectation="expect_calls", passed=False, reason=f"expected call {missing + 1}: {why}")


def answer_text(answer: Any) -> str:
    return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)


def answer_value(answer: Any) -> Any:
    """A text answer that is JSON, as its value (a structured answer may come back as text)."""
    if isinstance(answer, str):
        try:
            return json.loads(answer)
        except (ValueError, RecursionError):
            return answer
    return answer


def equals_verdict(expected: Any, answer: Any) -> Verdict:
    """The answer equals `expected`: as a value, as the value of its JSON text, or, for an
    expected string, as text with the whitespace around it left out."""
    text = answer_text(answer)
    passed = (
        same_value(expected, answer)
        or same_value(expected, answer_value(answer))
        or (isinstance(expected, str) and text.strip() == expected.strip())
    )
    reason = "the answer equals it" if passed else f"the answer is {_show(text)}, not {_show(expected)}"
    return Verdict(expectation="answer_equals", passed=passed, reason=reason)


def _answer_verdicts(item: DatasetItem, seen: Observed) -> list[Verdict]:
    wanted = [
        name
        for name in ("answer_schema", "answer_contains", "answer_regex")
        if getattr(item, name) is not None
    ]
    wanted += ["answer_equals"] if item.answer_equals is not None else []
    if seen.answer is None:
        why = f"no answer: the run {seen.status}" + (f" ({_show(seen.error)})" if seen.error else "")
        return [Verdict(expectation=name, passed=False, reason=why) for name in wanted]
    verdicts, text = [], answer_text(seen.answer)
    if item.answer_schema is not None:
        errors = schema_errors(item.answer_schema, answer_value(seen.answer))
        verdicts.append(
            Verdict(
                expectation="answer_schema",
                passed=not errors,
                reason="; ".join(errors) if errors else "the answer is valid against the schema",
            )
        )
    if item.answer_contains is not None:
        found = item.answer_contains in text
        verdicts.append(
            Verdict(
                expectation="answer_contains",
                passed=found,
                reason=f"{'found' if found else 'not found'}: {_show(item.answer_contains)}",
            )
        )
    if item.answer_regex is not None:
        try:
            found, why = search(item.answer_regex, text), ""
        except RegexTimeout as exc:
            found, why = False, str(exc)
        verdicts.append(
            Verdict(
                expectation="answer_regex",
                passed=found,
                reason=why or (f"{'matches' if found else 'does not match'} {_show(item.answer_regex)}"),
            )
        )
    if item.answer_equals is not None:
        verdicts.append(equals_verdict(item.answer_equals, seen.answer))
    return verdicts


def grounded_verdict(seen: Observed) -> Verdict:
    """Tool results back the answer: it was not answered without tools, and every value of it
    is traced to a tool result or the question."""
    if seen.outcome == ANSWERED_WITHOUT_TOOLS:
        return Verdict(
            expectation="grounded", passed=False, reason="answered without tools: no tool result backs it"
        )
    traced, values = traced_share(seen.provenance)
    if not values:
        why = "no answer" if seen.answer is None else "no value in the answer to trace"
        return Verdict(expectation="grounded", passed=seen.answer is not None, reason=why)
    untraced = [e.get("path") or _show(e.get("value")) for e in seen.provenance or [] if unbacked_value(e)]
    return Verdict(
        expectation="grounded",
        passed=traced == values,
        reason=f"{traced} of {values} values traced"
        + (f"; from the model: {', '.join(untraced[:5])}" if untraced else ""),
    )


def score(item: DatasetItem, seen: Observed) -> list[Verdict]:
    """A verdict for `succeeded` and for each expectation of `item`, in the item's field order."""
    ok = seen.status == str(RunStatus.SUCCEEDED)
    verdicts = [
        Verdict(
            expectation=SUCCEEDED,
            passed=ok,
            reason="the run succeeded"
            if ok
            else f"the run {seen.status}" + (f": {_show(seen.error)}" if seen.error else ""),
        )
    ]
    if item.expect_calls:
        verdicts.append(calls_verdict(item.expect_calls, seen.calls, item.ordered))
    if item.expect_no_call:
        made = ", ".join(_call_text(c) for c in seen.calls[:3])
        # a run that failed before deciding made no call, but it did not keep quiet either: a crash
        # must not count as a right "no tool fits" in the per-expectation rates
        verdicts.append(
            Verdict(
                expectation="expect_no_call",
                passed=ok and not seen.calls,
                reason=f"called {made}"
                if seen.calls
                else "no call was made"
                if ok
                else f"no call was made, but the run {seen.status}: it never decided",
            )
        )
    verdicts += _answer_verdicts(item, seen)
    if item.grounded:
        verdicts.append(grounded_verdict(seen))
    if item.max_latency_s is not None:
        fast = seen.latency_s is not None and seen.latency_s <= item.max_latency_s
        took = f"took {seen.latency_s:.2f} s" if seen.latency_s is not None else "never ended"
        verdicts.append(
            Verdict(
                expectation="max_latency_s", passed=fast, reason=f"{took}; at most {item.max_latency_s:g} s"
            )
        )
    return verdicts


def passed(verdicts: list[Verdict]) -> bool:
    return all(v.passed for v in verdicts)
