"""BFCL's AST checker: is a model's list of calls an accepted answer to one case?

The rules follow BFCL's own `ast_checker.py` (Python cases) so that scores here are
comparable with the leaderboard, quirks included; they are noted where they surprise:

- types are exact Python types (`bool` is not an `int`); an `int` is accepted for `float`;
  `any` means a string; arrays get one level of item-type checking;
- when the allowed values are of another type than the doc says (a "variable" such as
  `"data['sales']"` for an array), a value of the answer's type passes the type check and
  must then equal an allowed value exactly;
- strings (also inside lists and dicts) are compared after `standardize`; nested values deeper
  than that are compared as they are;
- a param may be left out only if `""` is among its allowed values, but a param the doc lists
  as required is always required; a param the answer does not list is unexpected even if the
  doc declares it;
- parallel calls are matched to expected calls in any order; unlike BFCL's greedy pass, by a
  full matching (see `_check_parallel`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowcall.eval.bfcl_data import UNANSWERED, BfclCase

Call = tuple[str, Mapping[str, Any] | None]  # (original BFCL name, arguments or None if unparsable)

_PY_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "number": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "list": list,
    "dict": dict,
    "object": dict,
    "any": str,
}
_LIST_TYPES = {"array", "tuple", "list"}
_PARALLEL = {"parallel", "parallel_multiple"}


@dataclass(frozen=True)
class CheckResult:
    valid: bool
    error: str | None = None
    error_type: str | None = None  # BFCL's label, e.g. "simple_function_checker:wrong_func_name"


OK = CheckResult(True)


def _fail(error_type: str, error: str) -> CheckResult:
    return CheckResult(False, error, error_type)


def standardize(text: str) -> str:
    """BFCL's string normalisation: drop spaces and `,./-_*^`, lowercase, `'` -> `"`, so
    "April 1, 2024" and "april 1 2024" compare equal."""
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def _std(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def check(case: BfclCase, calls: Sequence[Call]) -> CheckResult:
    """Judge the model's calls (names already mapped back with `case.name_map`)."""
    if case.category in UNANSWERED:
        if calls:
            return _fail("irrelevance_error:decoder_success", f"{len(calls)} call(s); none was expected.")
        return OK
    for name, arguments in calls:
        if arguments is None:
            return _fail("ast_decoder:decoder_failed", f"the arguments of {name!r} could not be parsed.")
    if case.category in _PARALLEL:
        return _check_parallel(case, calls)
    prefix = "multiple_function_checker" if case.category == "multiple" else "simple_function_checker"
    if len(calls) != len(case.ground_truth):
        return _fail(f"{prefix}:wrong_count", f"expected 1 call, got {len(calls)}.")
    return check_call(_doc(case, case.ground_truth[0]), calls[0], case.ground_truth[0])


def _doc(case: BfclCase, expected: Mapping[str, Any]) -> dict[str, Any]:
    name = next(iter(expected))
    return next(f for f in case.functions if f["name"] == name)


def _check_parallel(case: BfclCase, calls: Sequence[Call]) -> CheckResult:
    """Every expected call must be matched by a distinct model call, in any order.

    BFCL matches greedily (each expected call takes the first model call that passes), which
    rejects a correct answer when allowed values overlap and the calls come in an unlucky
    order (parallel_178: its first expected call allows "Microsoft" or "Apple"). A maximum
    bipartite matching accepts exactly the answers some order would make BFCL accept.
    """
    expected = case.ground_truth
    if len(calls) != len(expected):
        return _fail(
            "parallel_function_checker_no_order:wrong_count",
            f"expected {len(expected)} calls, got {len(calls)}.",
        )
    results = [[check_call(_doc(case, want), call, want) for call in calls] for want in expected]
    owner: dict[int, int] = {}  # model call position -> expected call index

    def assign(index: int, seen: set[int]) -> bool:  # Kuhn's augmenting path
        for position, result in enumerate(results[index]):
            if result.valid and position not in seen:
                seen.add(position)
                if position not in owner or assign(owner[position], seen):
                    owner[position] = index
                    return True
        return False

    for index, want in enumerate(expected):
        if not assign(index, set()):
            reasons = "; ".join(f"call {p}: {r.error_type}: {r.error}" for p, r in enumerate(results[index]))
            return _fail(
                "parallel_function_checker_no_order:cannot_find_match",
                f"no call matches expected call {index} ({next(iter(want))}); {reasons}",
            )
    return OK


def check_call(doc: Mapping[str, Any], call: Call, expected: Mapping[str, Mapping[str, list]]) -> CheckResult:
    """One model call against one expected call `{name: {param: [allowed values]}}`."""
    name, arguments = call
    expected_name, allowed = next(iter(expected.items()))
    arguments = arguments or {}
    if name != expected_name:
        return _fail("simple_function_checker:wrong_func_name", f"expected {expected_name!r}, got {name!r}.")
    properties = doc["parameters"].get("properties", {})
    for param in doc["parameters"].get("required", []):
        if param not in arguments:
            return _fail("simple_function_checker:missing_required", f"missing required parameter {param!r}.")
    for param, value in arguments.items():
        if param not in properties or param not in allowed:
            return _fail("simple_function_checker:unexpected_param", f"unexpected parameter {param!r}.")
        result = _check_value(param, value, allowed[param], properties[param])
        if not result.valid:
            return result
    for param, options in allowed.items():
        if param not in arguments and "" not in options:
            return _fail("simple_function_checker:missing_optional", f"{param!r} may not be left out.")
    return OK


def _check_value(param: str, value: Any, allowed: list, doc: Mapping[str, Any]) -> CheckResult:
    doc_type = doc.get("type", "any")
    expected_type = _PY_TYPES.get(doc_type, str)
    item_type = None
    if doc_type in _LIST_TYPES and isinstance(doc.get("items"), Mapping):
        item_type = _PY_TYPES.get(doc["items"].get("type", "any"), str)
    if isinstance(value, tuple):
        value = list(value)
    if expected_type is float and type(value) is int:
        value = float(value)
    result, is_variable = _check_type(param, value, allowed, expected_type, item_type)
    if not result.valid:
        return result
    if not is_variable:
        if expected_type is dict:
            return _check_dict(param, value, allowed)
        if expected_type is list and item_type is dict:
            return _check_list_of_dicts(param, value, allowed)
        if expected_type is str:
            if standardize(value) not in [standardize(a) for a in allowed if type(a) is str]:
                return _fail("value_error:string", f"{param!r}: {value!r} is not one of {allowed}.")
            return OK
        if expected_type is list:
            # "" (may omit) counts as an empty list, so `[]` passes for an optional list, as in BFCL
            lists = [[] if a == "" else a for a in allowed if a == "" or isinstance(a, list)]
            options = [[_std(x) for x in a] for a in lists]
            if [_std(x) for x in value] not in options:
                return _fail("value_error:list/tuple", f"{param!r}: {value!r} is not one of {allowed}.")
            return OK
    if value not in allowed:
        return _fail("value_error:others", f"{param!r}: {value!r} is not one of {allowed}.")
    return OK


def _answer_type(allowed: list) -> type | None:
    """The type of the first allowed value that is not the "may omit" marker."""
    return next((type(a) for a in allowed if a != ""), None)


def _check_type(
    param: str, value: Any, allowed: list, expected: type, item_type: type | None
) -> tuple[CheckResult, bool]:
    """(result, is_variable): is_variable when the answer's type differs from the doc's."""
    answer_type = _answer_type(allowed)
    is_variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if item_type is None:
            return OK, is_variable
        for option in allowed:
            # A non-list option (the "" marker) skips the item check, as in BFCL.
            if not isinstance(option, list) or all(
                _check_type(param, item, option, item_type, None)[0].valid for item in value
            ):
                return OK, is_variable
        label = "type_error:nested" if type(value) is answer_type else "type_error:simple"
        return _fail(label, f"{param!r}: items of {value!r} are not all {item_type.__name__}."), is_variable
    if answer_type is not None and type(value) is answer_type:
        return OK, True
    error = f"{param!r}: expected {expected.__name__}, got {type(value).__name__}."
    return _fail("type_error:simple", error), False


def _check_dict(param: str, value: Mapping[str, Any], allowed: list) -> CheckResult:
    """Key by key against each allowed dict; string values normalised, others compared as is."""
    result = _fail("dict_checker:unclear", f"{param!r}: no allowed dict to compare {value!r} with.")
    for option in allowed:
        if not isinstance(option, Mapping):
            continue
        result = OK
        for key, item in value.items():
            if key not in option:
                result = _fail("value_error:dict_key", f"{param!r}: unexpected key {key!r}.")
                break
            if _std(item) not in [_std(a) for a in option[key]]:
                error = f"{param!r}[{key!r}]: {item!r} is not one of {option[key]}."
                result = _fail("value_error:dict_value", error)
                break
        if result.valid:
            missing = [key for key, options in option.items() if key not in value and "" not in options]
            if missing:
                result = _fail("value_error:dict_key", f"{param!r}: missing key {missing[0]!r}.")
        if result.valid:
            return OK
    return result


def _check_list_of_dicts(param: str, value: list, allowed: list) -> CheckResult:
    """Dicts in order, each against the dict at the same place in one allowed list."""
    result = _fail("list_dict_checker:unclear", f"{param!r}: no allowed list of dicts.")
    for option in allowed:
        option = option if isinstance(option, list) else []
        if len(value) != len(option):
            error = f"{param!r}: expected {len(option)} dicts, got {len(value)}."
            result = _fail("value_error:list_dict_count", error)
            continue
        for item, expected in zip(value, option):
            result = (
                _check_dict(param, item, [expected])
                if isinstance(item, Mapping)
                else _fail("type_error:nested", f"{param!r}: {item!r} is not a dict.")
            )
            if not result.valid:
                break
        else:
            return OK
    return result
