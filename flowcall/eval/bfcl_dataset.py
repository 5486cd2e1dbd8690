"""BFCL cases as dataset items, so that a flow's decision model can be measured on them as an
experiment (`flowcall datasets import-bfcl`, then `flowcall experiments run`).

Each item brings the case's functions as its own tools (definitions only: the experiment asks
the decision model once and runs nothing, as `eval bfcl` does) and expects what BFCL's ground
truth says: the calls, with each parameter's allowed values as `{"any_of": [...]}` (with
`"optional": true` where BFCL allows leaving it out: its `""` marker, on a parameter the
function doc does not require); `expect_no_call` for
the irrelevance category. Expected names are the tool names the model sees (`math_factorial`
for BFCL's `math.factorial`).

What BFCL's checker (bfcl_check.py) expresses that expectations cannot, so an experiment on an
imported category can pass answers `eval bfcl` fails, and fail a few it passes:

- strings: BFCL compares them after `standardize` (no spaces or `,./-_*^`, lower case), so
  "April 1, 2024" equals "april 1 2024"; expectations compare values exactly;
- types: BFCL wants exact Python types per the function doc and takes an int for a float;
  expectations compare JSON values (1 equals 1.0, true never equals 1), whatever the doc says;
- extra arguments: BFCL fails a call with a parameter its answer does not list; an expectation
  is a subset, so other arguments are free;
- extra calls: BFCL wants exactly as many calls as its answer has; expectations only require
  that each expected call is matched by a distinct call made;
- nested allowed values: a dict parameter whose keys each have their own allowed values (and
  lists of such dicts) cannot be written as one `any_of` list; such a parameter is left out of
  the expectation and listed in the import's notes, as is a parameter BFCL wants left out.
"""

from __future__ import annotations

from typing import Any

from flowcall.core.datasets import ANY_OF, OPTIONAL, DatasetItem, ExpectedCall, ItemTool
from flowcall.eval.bfcl_data import UNANSWERED, BfclCase

OMIT = ""  # BFCL's "this parameter may be left out"


def _expected_value(allowed: list[Any], required: bool = False) -> tuple[Any, str | None]:
    """One parameter's allowed values as an expectation value, or (None, why it cannot be one).
    A parameter the function doc requires is never optional, whatever the answer says (as BFCL)."""
    values = [v for v in allowed if v != OMIT]
    if not values:
        return None, "BFCL wants it left out, which an expectation cannot say"
    if any(
        isinstance(v, dict) or (isinstance(v, list) and any(isinstance(x, dict) for x in v)) for v in values
    ):
        return None, "its allowed values are per-key lists inside a dict"
    optional = len(values) < len(allowed) and not required
    if len(values) == 1 and not optional:
        return values[0], None
    return {ANY_OF: values, **({OPTIONAL: True} if optional else {})}, None


def expected_calls(case: BfclCase) -> tuple[list[ExpectedCall], list[str]]:
    """The case's ground truth as expected calls, and a note per parameter left out."""
    by_original = {original: tool for tool, original in case.name_map.items()}
    calls, notes = [], []
    for answer in case.ground_truth:
        original, params = next(iter(answer.items()))
        doc = next((f for f in case.functions if f["name"] == original), {})
        required = set((doc.get("parameters") or {}).get("required") or [])
        arguments = {}
        for param, allowed in params.items():
            value, problem = _expected_value(allowed, param in required)
            if problem:
                notes.append(f"{case.id}: {original}.{param} is not checked: {problem}")
            else:
                arguments[param] = value
        calls.append(ExpectedCall(name=by_original.get(original, original), arguments=arguments))
    return calls, notes


def items_from_cases(cases: list[BfclCase]) -> tuple[list[DatasetItem], list[str]]:
    """Dataset items for BFCL cases (one user message each, as every bundled case has), and notes
    on what of the ground truth could not be expressed."""
    items, notes = [], []
    for case in cases:
        tools = [
            ItemTool(name=t.name, description=t.description, parameters=t.parameters) for t in case.tools
        ]
        if case.category in UNANSWERED:
            items.append(DatasetItem(id=case.id, question=case.question, tools=tools, expect_no_call=True))
            continue
        calls, found = expected_calls(case)
        notes += found
        items.append(DatasetItem(id=case.id, question=case.question, tools=tools, expect_calls=calls))
    return items, notes
