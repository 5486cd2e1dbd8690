"""Scoring a run against an item: each expectation's verdict and reason, pure functions; the
argument subset, any_of and the call matching as hypothesis properties."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from flowcall.core.datasets import DatasetItem, ExpectedCall
from flowcall.core.steps import Run, RunStatus, Step, StepKind, utcnow
from flowcall.eval.scoring import (
    Observed,
    argument_mismatch,
    calls_verdict,
    matching,
    observe,
    passed,
    same_value,
    score,
)


def seen(calls=(), answer="ok", status="succeeded", latency_s=1.0, error=None) -> Observed:
    return Observed(status=status, error=error, calls=list(calls), answer=answer, latency_s=latency_s)


def verdicts(item: dict, observed: Observed) -> dict[str, tuple[bool, str]]:
    return {v.expectation: (v.passed, v.reason) for v in score(DatasetItem.model_validate(item), observed)}


# --- values and arguments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (0, False, False),
        (True, True, True),
        ("1", 1, False),
        (None, None, True),
        ({"a": [1, 2]}, {"a": [1.0, 2]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([1, 2], [2, 1], False),
        ([True], [1], False),
        ("成都", "成都", True),
        ("a", "A", False),
    ],
)
def test_same_value_compares_json_values(a, b, equal):
    assert same_value(a, b) is equal and same_value(b, a) is equal


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
arguments = st.dictionaries(st.text(min_size=1, max_size=4), json_values, max_size=5)


@given(arguments, st.data())
def test_any_subset_of_the_arguments_made_matches(actual, data):
    subset = {k: v for k, v in actual.items() if data.draw(st.booleans())}
    assert argument_mismatch(subset, actual) is None


@given(arguments, arguments)
def test_extra_arguments_never_matter(expected, extra):
    assert argument_mismatch(expected, {**extra, **expected}) is None


@given(arguments, st.data())
def test_a_changed_or_missing_argument_is_named(actual, data):
    assume(actual)
    name = data.draw(st.sampled_from(sorted(actual)))
    other = data.draw(json_values.filter(lambda v: not same_value(v, actual[name])))
    reason = argument_mismatch({name: other}, actual)
    assert reason is not None and repr(name) in reason
    missing = {k: v for k, v in actual.items() if k != name}
    assert argument_mismatch({name: actual[name]}, missing) == f"argument {name!r} is missing"


@given(json_values, st.lists(json_values, max_size=3), st.booleans())
def test_any_of_matches_exactly_its_values_and_optional_allows_absence(value, others, optional):
    matcher = {"any_of": [*others, value], "optional": optional}
    assert argument_mismatch({"x": matcher}, {"x": value}) is None
    assert (argument_mismatch({"x": matcher}, {}) is None) is optional
    outsider = "not-among-them-" + str(len(others))
    assume(not any(same_value(v, outsider) for v in [*others, value]))
    assert "one of" in (argument_mismatch({"x": matcher}, {"x": outsider}) or "") or len(others) == 0


def test_unreadable_arguments_never_match():
    assert argument_mismatch({}, None) == "its arguments could not be read"


# --- calls ----------------------------------------------------------------------------------------


def test_unordered_calls_need_a_distinct_call_each_in_any_order():
    expected = [ExpectedCall(name="f", arguments={"a": 1}), ExpectedCall(name="f")]
    assert calls_verdict(expected, [("f", {"a": 2}), ("f", {"a": 1})], ordered=False).passed
    # the one call that fits both cannot serve both
    one = calls_verdict(expected, [("f", {"a": 1})], ordered=False)
    assert not one.passed and "taken by other expected calls" in one.reason
    # a greedy pass would give the first call to the looser expectation and fail; a matching passes
    loose_first = [ExpectedCall(name="f"), ExpectedCall(name="f", arguments={"a": 1})]
    assert calls_verdict(loose_first, [("f", {"a": 1}), ("f", {"a": 2})], ordered=False).passed


def test_ordered_calls_must_come_in_that_order_with_others_between_allowed():
    expected = [ExpectedCall(name="read_csv"), ExpectedCall(name="drop_missing")]
    assert calls_verdict(
        expected, [("read_csv", {}), ("describe", {}), ("drop_missing", {})], ordered=True
    ).passed
    wrong = calls_verdict(expected, [("drop_missing", {}), ("read_csv", {})], ordered=True)
    assert not wrong.passed and wrong.reason.startswith("expected call 2 in order")


def test_a_failed_call_expectation_says_what_was_called_instead():
    expected = [ExpectedCall(name="weather/v1/get_weather", arguments={"location": "成都"})]
    v = calls_verdict(expected, [("get_weather", {"location": "北京"}), ("get_time", {})], ordered=False)
    assert (
        not v.passed
        and 'get_weather({"location": "北京"}): argument \'location\' is "北京", not "成都"' in v.reason
    )
    v = calls_verdict(expected, [("get_time", {})], ordered=False)
    assert v.reason == "expected call 1: no call of weather/v1/get_weather (calls made: get_time)"


@settings(max_examples=200)
@given(st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=0, max_size=4))
def test_matching_finds_one_whenever_some_assignment_exists(grid):
    from itertools import permutations

    rows, columns = len(grid), 4
    exists = any(all(grid[r][perm[r]] for r in range(rows)) for perm in permutations(range(columns), rows))
    found = matching(rows, columns, lambda r, c: grid[r][c])
    assert (found is not None) is exists
    if found is not None:
        assert sorted(found.values()) == list(range(rows)) and all(grid[r][c] for c, r in found.items())


# --- the whole item ---------------------------------------------------------------------------------


def test_an_item_without_expectations_only_needs_the_run_to_succeed():
    assert verdicts({"question": "q"}, seen()) == {"succeeded": (True, "the run succeeded")}
    failed = verdicts({"question": "q"}, seen(status="failed", answer=None, error="MAX_ROUNDS: no answer"))
    assert failed == {"succeeded": (False, "the run failed: MAX_ROUNDS: no answer")}


def test_expect_no_call():
    assert verdicts({"question": "q", "expect_no_call": True}, seen())["expect_no_call"] == (
        True,
        "no call was made",
    )
    called = verdicts({"question": "q", "expect_no_call": True}, seen(calls=[("f", {"a": 1})]))
    assert called["expect_no_call"] == (False, 'called f({"a": 1})')
    crashed = verdicts(
        {"question": "q", "expect_no_call": True}, seen(status="failed", error="context too long")
    )
    assert crashed["expect_no_call"] == (False, "no call was made, but the run failed: it never decided")


def test_answer_expectations_on_a_text_answer():
    item = {
        "question": "q",
        "answer_contains": "雨",
        "answer_regex": r"\d+%",
        "answer_equals": "明天有雨, 70%",
    }
    good = verdicts(item, seen(answer="明天有雨, 70%\n"))
    assert all(ok for ok, _ in good.values()), good
    bad = verdicts(item, seen(answer="晴"))
    assert bad["answer_contains"] == (False, "not found: 雨")
    assert bad["answer_regex"] == (False, r"does not match \d+%")
    assert bad["answer_equals"] == (False, "the answer is 晴, not 明天有雨, 70%")


def test_answer_expectations_on_a_structured_answer_and_its_text():
    schema = {"type": "object", "required": ["rain"], "properties": {"rain": {"type": "boolean"}}}
    item = {
        "question": "q",
        "answer_schema": schema,
        "answer_equals": {"rain": True},
        "answer_contains": '"rain": true',
    }
    for answer in ({"rain": True}, '{"rain": true}'):
        assert all(ok for ok, _ in verdicts(item, seen(answer=answer)).values())
    bad = verdicts(item, seen(answer={"rain": "yes"}))
    assert (
        bad["answer_schema"][0] is False and "rain: 'yes' is not of type 'boolean'" in bad["answer_schema"][1]
    )
    assert bad["answer_equals"][0] is False
    number = verdicts({"question": "q", "answer_equals": 42}, seen(answer="42"))
    assert number["answer_equals"] == (True, "the answer equals it")


def test_answer_expectations_fail_with_the_runs_reason_when_there_is_no_answer():
    item = {"question": "q", "answer_contains": "x", "answer_schema": {"type": "object"}}
    got = verdicts(item, seen(answer=None, status="failed", error="PROVIDER_ERROR: down"))
    assert got["answer_contains"] == (False, "no answer: the run failed (PROVIDER_ERROR: down)")
    assert got["answer_schema"][0] is False


def test_max_latency():
    item = {"question": "q", "max_latency_s": 2}
    assert verdicts(item, seen(latency_s=1.5))["max_latency_s"] == (True, "took 1.50 s; at most 2 s")
    assert verdicts(item, seen(latency_s=2.5))["max_latency_s"] == (False, "took 2.50 s; at most 2 s")
    assert verdicts(item, seen(latency_s=None))["max_latency_s"] == (False, "never ended; at most 2 s")


def test_a_catastrophic_answer_regex_fails_within_its_time_bound():
    item = {"question": "q", "answer_regex": "(a|aa)+$"}
    started = time.monotonic()
    ok, reason = verdicts(item, seen(answer="a" * 60 + "!"))["answer_regex"]
    assert time.monotonic() - started < 5
    assert ok is False and "still matching after 0.5 s" in reason


def test_passed_needs_every_verdict():
    item = DatasetItem(question="q", answer_contains="a")
    assert passed(score(item, seen(answer="abc"))) and not passed(score(item, seen(answer="xyz")))


# --- what a run showed -------------------------------------------------------------------------------


def _run(steps: list[Step], answer, status=RunStatus.SUCCEEDED) -> Run:
    start = utcnow()
    return Run(
        id="r",
        flow_name="f",
        question="q",
        trace_id="t",
        status=status,
        final_answer=answer,
        started_at=start,
        ended_at=start + timedelta(seconds=3),
        steps=steps,
    )


def test_observe_takes_the_tool_call_steps_of_a_full_run():
    steps = [
        Step(run_id="r", seq=1, kind=StepKind.MODEL_CALL, tool_calls=[{"name": "f", "arguments": {"a": 1}}]),
        Step(run_id="r", seq=2, kind=StepKind.TOOL_CALL, name="f", arguments={"a": 1}),
        Step(run_id="r", seq=3, kind=StepKind.TOOL_CALL, name="g", arguments=None, error_code="UNKNOWN_TOOL"),
    ]
    got = observe(_run(steps, "done"))
    assert got.calls == [("f", {"a": 1}), ("g", None)] and got.answer == "done" and got.latency_s == 3.0


def test_observe_takes_the_decision_a_decide_only_run_ended_with():
    written = {"name": "f", "arguments": {"a": 1}}
    steps = [
        Step(
            run_id="r",
            seq=1,
            kind=StepKind.MODEL_CALL,
            tool_calls=[{"name": "f", "arguments": {"a": "e.g."}}],
            note="call 1",
        ),  # refused: a value copied from the docs, asked again
        Step(run_id="r", seq=2, kind=StepKind.MODEL_CALL, tool_calls=[written], note="call 1"),
        Step(
            run_id="r",
            seq=3,
            kind=StepKind.MODEL_CALL,
            tool_calls=[written, {"name": "g", "arguments": {}}],
            note="call 2",
        ),
    ]  # call by call: each step holds the list so far
    got = observe(
        _run(steps, {"tool_calls": [written, {"name": "g", "arguments": {}}], "answer": None}),
        decision_only=True,
    )
    assert got.calls == [("f", {"a": 1}), ("g", {})] and got.answer is None
    quiet = observe(_run(steps[:1], {"tool_calls": [], "answer": "text"}), decision_only=True)
    assert quiet.calls == [] and quiet.answer == "text"
    failed = observe(_run(steps[:1], None, status=RunStatus.FAILED), decision_only=True)
    assert failed.calls == [] and failed.answer is None


def test_grounded_needs_every_value_traced_and_a_tool_result():
    from flowcall.eval.scoring import Observed, grounded_verdict

    traced = [
        {"path": "/t", "value": 16, "source": "tool"},
        {"path": "/city", "value": "成都", "source": "question"},
    ]
    seen = Observed(
        status="succeeded", error=None, calls=[], answer={"t": 16}, latency_s=1.0, provenance=traced
    )
    assert grounded_verdict(seen).passed and grounded_verdict(seen).reason == "2 of 2 values traced"
    invented = [*traced, {"path": "/wind", "value": 9, "source": "model"}]
    verdict = grounded_verdict(
        Observed(status="succeeded", error=None, calls=[], answer={}, latency_s=1.0, provenance=invented)
    )
    assert not verdict.passed and verdict.reason == "2 of 3 values traced; from the model: /wind"
    unbacked = Observed(
        status="succeeded",
        error=None,
        calls=[],
        answer="晴",
        latency_s=1.0,
        outcome="answered_without_tools",
        provenance=[],
    )
    assert not grounded_verdict(unbacked).passed
