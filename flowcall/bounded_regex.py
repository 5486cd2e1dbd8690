"""Regular expressions and JSON Schemas from untrusted text (a dataset file), run with a bound.

A pattern like `(a|aa)+$` backtracks for longer than anyone waits on 60 a's and a '!'. Python's
`re` cannot be stopped once it matches (it holds the GIL, so not even from another thread); the
`regex` package takes a timeout. So every match here runs under one, and a pattern is refused up
front when it is too long or does not compile. JSON Schema's `pattern` and `patternProperties`
are matched the same way (jsonschema itself would use `re`). A schema may refer only to itself
(`#...`), and nothing is ever fetched: jsonschema's default registry would download a `$ref` to
a URL (with urllib, no time limit), so schemas are applied with a registry that holds only the
JSON Schema meta-schemas and refuses everything else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import regex
from jsonschema import ValidationError
from jsonschema.exceptions import SchemaError
from jsonschema_specifications import REGISTRY as SPECIFICATIONS
from referencing import Registry
from referencing.exceptions import NoSuchResource

MAX_PATTERN_CHARS = 1000
MATCH_TIMEOUT_S = 0.5
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")


def _refuse(uri: str) -> Any:
    raise NoSuchResource(ref=uri)


NOTHING_FETCHED = SPECIFICATIONS.combine(Registry(retrieve=_refuse))  # type: ignore[call-arg]


class RegexTimeout(Exception):
    """A match took longer than its bound: the pattern backtracks catastrophically on this text."""


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` is refused (too long, does not compile), or None."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"the pattern is {len(pattern):,} characters long; at most {MAX_PATTERN_CHARS:,}"
    try:
        regex.compile(pattern)
    except (regex.error, ValueError, OverflowError) as exc:
        return f"{pattern!r:.80} is not a valid regular expression: {exc}"
    return None


def search(pattern: str, text: str, *, timeout_s: float = MATCH_TIMEOUT_S) -> bool:
    """Does `pattern` match somewhere in `text`? RegexTimeout past `timeout_s`."""
    try:
        return regex.search(pattern, text, timeout=timeout_s) is not None
    except TimeoutError as exc:
        raise RegexTimeout(f"the pattern {pattern!r:.80} was still matching after {timeout_s:g} s (it backtracks "
                           "catastrophically on this text); simplify it, e.g. no nested repeats like (a+)+") from exc


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r:.80} does not match {pattern!r:.80}")


def _pattern_properties(validator: Any, properties: dict, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


# Draft 2020-12 with its two regex keywords bounded; everything else as jsonschema does it.
BoundedValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, validators={"pattern": _pattern, "patternProperties": _pattern_properties})


def _walk(schema: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(path, key, value) of every key in a schema, depth first."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield path, key, value
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _walk(value, f"{path}/{i}")


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is refused as a JSON Schema to check answers with, or None."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        return f"not a valid JSON Schema{f' at /{where}' if where else ''}: {exc.message}"
    for path, key, value in _walk(schema):
        patterns = [value] if key == "pattern" and isinstance(value, str) else (
            list(value) if key == "patternProperties" and isinstance(value, dict) else [])
        for pattern in patterns:
            problem = pattern_problem(pattern)
            if problem:
                return f"at {path or '/'}{key}: {problem}"
        if key in _REFERENCES and isinstance(value, str) and not value.startswith("#"):
            return (f"at {path or '/'}{key}: {value!r:.80} refers outside the schema; only references within "
                    "it (#/...) are allowed, nothing is fetched")
    return None


def schema_errors(schema: dict[str, Any], value: Any, *, limit: int = 3) -> list[str]:
    """Why `value` is not valid against `schema` (at most `limit` reasons); [] when it is."""
    try:
        validator = BoundedValidator(schema, registry=NOTHING_FETCHED)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path)))
    except RegexTimeout as exc:
        return [str(exc)]
    except Exception as exc:  # referencing's Unresolvable and the like: a schema problem, not a pass
        return [f"the schema could not be applied: {type(exc).__name__}: {exc}"]
    return [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:limit]]
