"""Conformance of the BFCL checker on every vendored case.

For each answered case the canonical answer (first allowed value of each param) must pass, in
any order for parallel cases, and five mutations of it must each fail with the right label.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from flowcall.eval.bfcl_check import check, check_call, standardize
from flowcall.eval.bfcl_data import BfclCase, load_cases

ANSWERED = ("simple", "multiple", "parallel", "parallel_multiple")
Calls = list[tuple[str, dict[str, Any]]]
PY = {
    "string": str,
    "any": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
}
MIN_COVERAGE = 0.8


def _first(options: list) -> Any:
    return next(v for v in options if v != "")


def _has_value(options: list) -> bool:
    return any(v != "" for v in options)


def _doc(case: BfclCase, name: str) -> dict:
    return next(f for f in case.functions if f["name"] == name)


def _props(case: BfclCase, name: str) -> dict:
    return _doc(case, name)["parameters"]["properties"]


def _canonical_value(doc: dict, options: list) -> Any:
    """First allowed value; dicts (and lists of dicts) hold allowed values per key, so pick
    the first of each key as well."""
    value = _first(options)
    pick = lambda d: {k: _first(v) for k, v in d.items() if _has_value(v)}  # noqa: E731
    if doc["type"] == "dict" and isinstance(value, dict):
        return pick(value)
    if doc.get("items", {}).get("type") == "dict" and isinstance(value, list):
        return [pick(d) for d in value]
    return value


def canonical(case: BfclCase) -> Calls:
    calls = []
    for expected in case.ground_truth:
        ((name, params),) = expected.items()
        props = _props(case, name)
        # A param the doc does not declare can only be omitted (parallel_multiple_12 lists
        # `permeability` under the wrong function, with "" allowed).
        calls.append(
            (
                name,
                {p: _canonical_value(props[p], o) for p, o in params.items() if _has_value(o) and p in props},
            )
        )
    return calls


def _typed(case: BfclCase, name: str, args: dict) -> list[str]:
    """Params whose value has the doc's type (not a BFCL "variable" of another type)."""
    props = _props(case, name)
    return [
        p
        for p, v in args.items()
        if type(v) is PY[props[p]["type"]] or (props[p]["type"] == "float" and type(v) is int)
    ]


def _not_allowed(doc: dict, value: Any, options: list) -> Any | None:
    """A value of the doc's type that the answer does not allow, or None."""
    items = {"string": "flowcall not allowed", "integer": 987654321, "float": 987654.25}
    candidate: Any = None
    if doc["type"] in ("string", "any"):
        candidate = "flowcall not allowed"
        taken = [standardize(o) for o in options if type(o) is str]
        return None if standardize(candidate) in taken else candidate
    if doc["type"] == "boolean":
        candidate = not value
    elif doc["type"] in items:
        candidate = items[doc["type"]]
    elif doc["type"] in ("array", "tuple") and doc.get("items", {}).get("type") in items:
        candidate = list(value) + [items[doc["items"]["type"]]]
    elif doc["type"] == "dict" and value:
        candidate = {**value, next(iter(value)): "flowcall not allowed"}  # one key's value
    return None if candidate is None or candidate in options else candidate


Variant = tuple[int, Calls]  # (index of the changed call = index of its expected call, calls)


def _each_call(calls: Calls, edit: Callable[[int, str, dict], list[dict]]) -> list[Variant]:
    """Every variant `edit(index, name, args)` makes of every call (canonical calls are in
    ground-truth order, so `index` also names the expected call)."""
    return [
        (i, calls[:i] + [(name, changed)] + calls[i + 1 :])
        for i, (name, args) in enumerate(calls)
        for changed in edit(i, name, dict(args))
    ]


def wrong_name(case: BfclCase, calls: Calls) -> list[Variant]:
    """Another function of the case when there is one (a plausible mistake), else a typo."""

    def rename(name: str) -> str:
        others = [f["name"] for f in case.functions if f["name"] != name]
        return others[0] if others else name + "_wrong"

    return [(i, calls[:i] + [(rename(name), args)] + calls[i + 1 :]) for i, (name, args) in enumerate(calls)]


def missing_required(case: BfclCase, calls: Calls) -> list[Variant]:
    def edit(i: int, name: str, args: dict) -> list[dict]:
        required = [p for p in _doc(case, name)["parameters"].get("required", []) if p in args]
        return [{k: v for k, v in args.items() if k != param} for param in required]

    return _each_call(calls, edit)


def extra_param(case: BfclCase, calls: Calls) -> list[Variant]:
    return _each_call(calls, lambda i, name, args: [{**args, "flowcall_unknown_param": 1}])


def wrong_type(case: BfclCase, calls: Calls) -> list[Variant]:
    """string -> number, number -> string, bool -> string, list -> string, dict -> string."""
    swap = {str: 12345, int: "12345", float: "12.5", bool: "true", list: "a, b", dict: "{}"}
    return _each_call(
        calls, lambda i, name, args: [{**args, p: swap[type(args[p])]} for p in _typed(case, name, args)]
    )


def value_not_allowed(case: BfclCase, calls: Calls) -> list[Variant]:
    def edit(i: int, name: str, args: dict) -> list[dict]:
        allowed, props = case.ground_truth[i][name], _props(case, name)
        bad = {p: _not_allowed(props[p], args[p], allowed[p]) for p in _typed(case, name, args)}
        return [{**args, p: v} for p, v in bad.items() if v is not None]

    return _each_call(calls, edit)


# mutation -> (variants of the canonical calls, the label (prefix) the changed call must get)
MUTATIONS: dict[str, tuple[Callable[[BfclCase, Calls], list[Variant]], str]] = {
    "wrong_name": (wrong_name, "simple_function_checker:wrong_func_name"),
    "missing_required": (missing_required, "simple_function_checker:missing_required"),
    "extra_param": (extra_param, "simple_function_checker:unexpected_param"),
    "wrong_type": (wrong_type, "type_error:"),
    "value_not_allowed": (value_not_allowed, "value_error:"),
}


@pytest.fixture(scope="session")
def all_answered(bfcl_cases) -> list[BfclCase]:
    return [case for category in ANSWERED for case in bfcl_cases[category]]


def test_canonical_calls_are_accepted_in_any_order(all_answered, bfcl_summary):
    rejected, orders = set(), 0
    for case in all_answered:
        calls = canonical(case)
        variants = [calls]
        if len(calls) > 1:
            shuffled = calls[:]
            random.Random(case.id).shuffle(shuffled)
            variants += [shuffled, calls[::-1]]
        for variant in variants:
            orders += 1
            result = check(case, variant)
            if not result.valid:
                rejected.add(f"{case.id}: {result.error_type}: {result.error}")
    ids = {line.split(":")[0] for line in rejected}
    bfcl_summary.append(
        f"canonical accepted {len(all_answered) - len(ids)}/{len(all_answered)} cases "
        f"({orders} call orders incl. shuffled/reversed parallel) "
        f"{dict(Counter(case.category for case in all_answered))}"
    )
    assert not rejected, f"{len(rejected)} canonical answers rejected:\n" + "\n".join(sorted(rejected)[:20])


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_mutation_is_rejected(mutation, all_answered, bfcl_summary):
    """Every variant must fail; the changed call must fail with the mutation's own label (for
    parallel cases the whole answer fails as `cannot_find_match`, so that call is also judged
    alone against its expected call)."""
    mutate, label = MUTATIONS[mutation]
    covered, variants, wrong = Counter(), 0, []
    for case in all_answered:
        found = mutate(case, canonical(case))
        covered[case.category] += bool(found)
        for index, calls in found:
            variants += 1
            result = check(case, calls)
            if "parallel" in case.category:
                want = case.ground_truth[index]
                alone = check_call(_doc(case, next(iter(want))), calls[index], want)
                ok = result.error_type == "parallel_function_checker_no_order:cannot_find_match"
                ok = ok and (alone.error_type or "").startswith(label)
            else:
                ok = not result.valid and (result.error_type or "").startswith(label)
            if not ok:
                wrong.append(f"{case.id}: {calls} -> {result}")
    total = sum(covered.values())
    bfcl_summary.append(
        f"{mutation:<18} rejected {variants - len(wrong)}/{variants} variants; applied to "
        f"{total}/{len(all_answered)} cases ({total / len(all_answered):.1%}) "
        f"{dict(covered)}"
    )
    assert not wrong, f"{mutation}: {len(wrong)} not rejected as {label}:\n" + "\n".join(wrong[:20])
    for category in ANSWERED:
        size = sum(case.category == category for case in all_answered)
        assert covered[category] >= MIN_COVERAGE * size, f"{mutation}: {covered[category]}/{size} {category}"


# Cases whose canonical answer breaks the doc's own types (BFCL "variables", a `null`), so a
# decoder held to the tool schema cannot write it; only the last two have no other accepted answer.
SCHEMA_INVALID_CANONICAL = {
    "simple_python_307",
    "parallel_152",
    "parallel_multiple_21",
    "parallel_multiple_94",
}


def test_canonical_arguments_fit_the_tool_schemas(all_answered, bfcl_summary):
    """What a grammar- or json_schema-constrained model can reach: the tool schema must admit
    the canonical arguments, apart from the known data quirks above."""
    invalid = set()
    for case in all_answered:
        schemas = {case.original_name(tool.name): tool.parameters for tool in case.tools}
        for name, args in canonical(case):
            if next(Draft202012Validator(schemas[name]).iter_errors(args), None) is not None:
                invalid.add(case.id)
    bfcl_summary.append(
        f"canonical arguments valid against the converted tool schema in "
        f"{len(all_answered) - len(invalid)}/{len(all_answered)} cases; "
        f"not in {sorted(invalid)}"
    )
    assert invalid == SCHEMA_INVALID_CANONICAL


def test_irrelevance_accepts_only_no_call(bfcl_cases, bfcl_summary):
    cases = bfcl_cases["irrelevance"]
    no_call = sum(check(case, []).valid for case in cases)
    rejected = sum(
        check(case, [(case.functions[0]["name"], {})]).error_type == "irrelevance_error:decoder_success"
        for case in cases
    )
    bfcl_summary.append(
        f"irrelevance: no call accepted {no_call}/{len(cases)}, a call rejected {rejected}/{len(cases)}"
    )
    assert no_call == rejected == len(cases) == 240


# --- BFCL's rules, one by one, on small hand-made cases ---------------------------------


def _case(category: str, params: dict, answer: dict, required: list[str] | None = None) -> BfclCase:
    function = {
        "name": "f.g",
        "parameters": {"type": "dict", "properties": params, "required": required or []},
    }
    return BfclCase(
        id="t",
        category=category,
        question="",
        messages=[],
        functions=[function],
        tools=[],
        name_map={"f_g": "f.g"},
        ground_truth=[{"f.g": answer}],
    )


def test_strings_are_normalised_like_bfcl():
    case = _case("simple", {"city": {"type": "string"}}, {"city": ["New York, NY"]})
    assert check(case, [("f.g", {"city": "new york ny"})]).valid
    assert check(case, [("f.g", {"city": "New-York/NY."})]).valid
    assert not check(case, [("f.g", {"city": "New York City"})]).valid
    assert standardize("It's A_B*c^d") == 'it"sabcd'


def test_int_is_a_float_but_bool_is_not_an_int():
    case = _case("simple", {"x": {"type": "float"}, "n": {"type": "integer"}}, {"x": [5.0], "n": [1]})
    assert check(case, [("f.g", {"x": 5, "n": 1})]).valid
    assert check(case, [("f.g", {"x": 5.0, "n": True})]).error_type == "type_error:simple"
    assert check(case, [("f.g", {"x": 5.0, "n": 1.0})]).error_type == "type_error:simple"


def test_omission_needs_the_empty_marker_and_required_always_wins():
    params = {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "string"}}
    case = _case("simple", params, {"a": [1, ""], "b": ["x", ""], "c": ["y"]}, required=["a"])
    assert check(case, [("f.g", {"a": 1, "c": "y"})]).valid
    assert check(case, [("f.g", {"c": "y"})]).error_type == "simple_function_checker:missing_required"
    assert check(case, [("f.g", {"a": 1})]).error_type == "simple_function_checker:missing_optional"


def test_a_declared_param_missing_from_the_answer_is_unexpected():
    case = _case("simple", {"a": {"type": "integer"}, "b": {"type": "integer"}}, {"a": [1]})
    assert check(case, [("f.g", {"a": 1, "b": 2})]).error_type == "simple_function_checker:unexpected_param"


def test_lists_keep_order_and_normalise_their_strings():
    case = _case("simple", {"l": {"type": "array", "items": {"type": "string"}}}, {"l": [["New York", "LA"]]})
    assert check(case, [("f.g", {"l": ["new york", "la"]})]).valid
    assert check(case, [("f.g", {"l": ["LA", "New York"]})]).error_type == "value_error:list/tuple"
    assert check(case, [("f.g", {"l": ["LA", 3]})]).error_type == "type_error:nested"


def test_dicts_are_compared_key_by_key():
    params = {"d": {"type": "dict", "properties": {"k": {"type": "string"}, "o": {"type": "integer"}}}}
    case = _case("simple", params, {"d": [{"k": ["Blue Bird"], "o": [3, ""]}]})
    assert check(case, [("f.g", {"d": {"k": "bluebird"}})]).valid
    assert check(case, [("f.g", {"d": {"k": "red"}})]).error_type == "value_error:dict_value"
    assert check(case, [("f.g", {"d": {"k": "bluebird", "z": 1}})]).error_type == "value_error:dict_key"


def test_a_variable_answer_of_another_type_must_match_exactly():
    case = _case("simple", {"x": {"type": "array", "items": {"type": "float"}}}, {"x": ["data['sales']"]})
    assert check(case, [("f.g", {"x": "data['sales']"})]).valid
    assert not check(case, [("f.g", {"x": "data['Sales']"})]).valid


def test_counts_and_unparsable_arguments():
    case = _case("simple", {"a": {"type": "integer"}}, {"a": [1]})
    assert check(case, []).error_type == "simple_function_checker:wrong_count"
    assert check(case, [("f.g", None)]).error_type == "ast_decoder:decoder_failed"
    multiple = _case("multiple", {"a": {"type": "integer"}}, {"a": [1]})
    assert check(multiple, [("f.g", {"a": 1})] * 2).error_type == "multiple_function_checker:wrong_count"


def test_parallel_matching_finds_an_assignment_greedy_order_would_miss():
    # parallel_178: the first expected call allows "Microsoft" or "Apple" on 2022-01-01.
    case = next(c for c in load_cases("parallel") if c.id == "parallel_178")
    calls = canonical(case)
    assert calls[0][1]["company_name"] == "Microsoft"
    apple_first = [calls[2], calls[3], calls[1], calls[0]]
    assert check(case, apple_first).valid
    assert check(case, calls[:3]).error_type == "parallel_function_checker_no_order:wrong_count"
    twice = check(case, calls[:3] + [calls[2]])
    assert twice.error_type == "parallel_function_checker_no_order:cannot_find_match"


def test_check_call_reports_the_first_fault():
    doc = {
        "name": "f",
        "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    }
    wrong = check_call(doc, ("g", {"a": 1}), {"f": {"a": [1]}})
    assert wrong.error_type == "simple_function_checker:wrong_func_name"
    assert check_call(doc, ("f", {"a": 2}), {"f": {"a": [1]}}).error_type == "value_error:others"
