"""BFCL cases as dataset items: each parameter's allowed values become an expectation (any_of,
optional), what cannot be said is noted, and the expectations agree with BFCL's own checker on
BFCL's answers and on answers with one value changed."""

from __future__ import annotations

import pytest

from flowcall.core.datasets import parse_jsonl, to_jsonl
from flowcall.eval.bfcl_check import check
from flowcall.eval.bfcl_dataset import _expected_value, expected_calls, items_from_cases
from flowcall.eval.scoring import calls_verdict

WRONG = {str: "zz-not-an-answer", int: 987654321, float: 9876.54321, bool: None, list: ["zz-not-an-answer"]}


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        ([10], 10),
        (["units", ""], {"any_of": ["units"], "optional": True}),
        (["inches", "in"], {"any_of": ["inches", "in"]}),
        ([[1, 2, 3]], [1, 2, 3]),
        ([[1, 2], [2, 1], ""], {"any_of": [[1, 2], [2, 1]], "optional": True}),
    ],
)
def test_allowed_values_become_an_expectation(allowed, expected):
    assert _expected_value(allowed) == (expected, None)


@pytest.mark.parametrize(
    ("allowed", "why"),
    [
        ([""], "left out"),
        ([{"city": ["Paris"], "days": [3, ""]}], "per-key lists"),
        ([[{"a": [1]}]], "per-key lists"),
    ],
)
def test_what_an_expectation_cannot_say_is_given_a_reason(allowed, why):
    value, problem = _expected_value(allowed)
    assert value is None and why in problem


def test_a_parameter_the_doc_requires_is_never_optional():
    assert _expected_value([0, ""], required=True) == (0, None)
    assert _expected_value([0, 1, ""], required=True) == ({"any_of": [0, 1]}, None)


def test_every_bundled_case_becomes_a_valid_item_that_reads_back(bfcl_cases):
    for category, cases in bfcl_cases.items():
        items, notes = items_from_cases(cases)
        back, problems = parse_jsonl(to_jsonl(items))
        assert problems == [] and [i.dump() for i in back] == [i.dump() for i in items], category
        assert [i.id for i in items] == [c.id for c in cases]
        assert all(i.tools and i.question == c.question for i, c in zip(items, cases))
        if category == "irrelevance":
            assert all(i.expect_no_call and not i.expect_calls for i in items) and notes == []
        else:
            assert all(len(i.expect_calls) == len(c.ground_truth) for i, c in zip(items, cases))
            assert all(note.split(":")[0] in {c.id for c in cases} for note in notes)
    simple = items_from_cases(bfcl_cases["simple"][1:2])[0][0]  # math.factorial, as the model sees it
    assert simple.expect_calls[0].name == "math_factorial" and simple.tools[0].name == "math_factorial"
    assert simple.expect_calls[0].arguments == {"number": 5}


def _answer(case, pick_wrong: str | None = None) -> list[tuple[str, dict]]:
    """BFCL's answer as calls: each parameter's first allowed value (left out where it may be),
    with `pick_wrong` (a parameter of the first call) given a value no answer allows."""
    calls = []
    for index, answer in enumerate(case.ground_truth):
        name, params = next(iter(answer.items()))
        args = {p: next(v for v in allowed if v != "") for p, allowed in params.items() if "" not in allowed}
        if index == 0 and pick_wrong is not None:
            args[pick_wrong] = WRONG[type(args[pick_wrong])]
        calls.append((name, args))
    return calls


def test_expectations_agree_with_bfcls_checker(bfcl_cases, bfcl_summary):
    agreed = compared = 0
    for category in ("simple", "multiple", "parallel", "parallel_multiple"):
        for case in bfcl_cases[category]:
            expected, notes = expected_calls(case)
            if notes:
                continue  # a parameter left out of the expectation: the two may differ, by design
            to_tool = {original: tool for tool, original in case.name_map.items()}
            first = _answer(case)
            scalar = [p for p, v in first[0][1].items() if type(v) in WRONG and WRONG[type(v)] is not None]
            tries = [first] + ([_answer(case, scalar[0])] if scalar else [])
            for calls in tries:
                bfcl = check(case, calls).valid
                ours = calls_verdict(expected, [(to_tool[n], a) for n, a in calls], ordered=False).passed
                compared += 1
                agreed += bfcl == ours
                assert bfcl == ours or not bfcl, (case.id, calls)  # ours may be looser, never stricter
    bfcl_summary.append(f"expectations vs BFCL's checker: {agreed}/{compared} answers judged alike")
    assert compared > 1500 and agreed == compared
