"""JSON Schemas and regular expressions from outside, checked without fetching and with a bound.

A polish `output_schema` in a shared flow or run file, an MCP server's tool list, an OpenAPI
document, a dataset file: each is someone else's text. Two things in such a schema could hold
FlowCall, and both are closed here, in the one validator every check goes through:

- a `$ref` (or `$dynamicRef`) that names a URL: jsonschema's default registry retrieves it, with
  urllib and no time limit, past the SSRF guard and the grants. Here a ref resolves only within
  its own schema (`#/$defs/...`, an embedded `$id`) or among the metaschemas bundled with
  jsonschema; any other ref is refused, by name (`check_refs`, where a flow or tool is loaded).
- a `pattern` that backtracks catastrophically (`^(a|a)+$` on 32 a's and a '!'): Python's `re`
  cannot be stopped once it matches (it holds the GIL, so not even from another thread). The
  `regex` package takes a timeout, so `pattern` and `patternProperties` are matched with it,
  and a match that runs out of time is a validation error naming the pattern, never a hang.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import regex
from jsonschema import ValidationError
from jsonschema.exceptions import SchemaError
from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import DRAFT202012

from flowcall.core.errors import ConfigError

_REF_KEYWORDS = ("$ref", "$dynamicRef")
MAX_PATTERN_CHARS = 1000
MATCH_TIMEOUT_S = 0.5


class SchemaRefError(ConfigError, ValueError):
    """A schema's ref points outside it. Also a ValueError, so a pydantic validator that raises
    it reports it as the field's error."""


def _retrieve_nothing(uri: str) -> Resource:
    raise NoSuchResource(ref=uri)


# What a validator resolves refs with: nothing is ever retrieved. (jsonschema adds the bundled
# metaschemas to a registry it is given, as here for the walk below.)
LOCAL_ONLY: Registry = Registry(retrieve=_retrieve_nothing)  # type: ignore[call-arg]


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
        raise RegexTimeout(
            f"the pattern {pattern!r:.80} was still matching after {timeout_s:g} s (it backtracks "
            "catastrophically on this text); simplify it, e.g. no nested repeats like (a+)+"
        ) from exc


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        if not search(pattern, instance):
            yield ValidationError(f"{instance!r:.80} does not match {pattern!r:.80}")
    except RegexTimeout as exc:
        yield ValidationError(f"{instance!r:.80} could not be checked: {exc}")


def _pattern_properties(
    validator: Any, properties: dict, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            try:
                matched = search(pattern, key)
            except RegexTimeout as exc:
                yield ValidationError(
                    f"the property name {key!r:.80} could not be checked: {exc}", path=[key]
                )
                continue
            if matched:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


# Draft 2020-12 with its two regex keywords bounded; everything else as jsonschema does it.
# (`format: regex` is only asserted with a format checker, which no untrusted schema gets.)
BoundedValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    validators={"pattern": _pattern, "patternProperties": _pattern_properties},
)


def outside_refs(schema: Any) -> list[tuple[str, str]]:
    """(keyword, ref) for each `$ref`/`$dynamicRef` in `schema` that validation would have to
    retrieve: a URL, a file, a relative ref that no embedded `$id` answers. Walked as a
    validator descends (subschemas, and what local refs lead to), with the same resolution."""
    if not isinstance(schema, dict):
        return []
    retrieved: list[str] = []

    def note(uri: str) -> Resource:
        retrieved.append(uri)
        raise NoSuchResource(ref=uri)

    registry = METASCHEMAS.combine(Registry(retrieve=note))  # type: ignore[call-arg]
    root = DRAFT202012.create_resource(schema)
    found: list[tuple[str, str]] = []
    seen: set[int] = set()
    stack = [(root, registry.resolver_with_root(root))]
    while stack:
        resource, resolver = stack.pop()
        if id(resource.contents) in seen:
            continue
        seen.add(id(resource.contents))
        contents = resource.contents
        for keyword in _REF_KEYWORDS if isinstance(contents, dict) else ():
            ref = contents.get(keyword)
            if not isinstance(ref, str):
                continue
            asked = len(retrieved)
            try:
                resolved = resolver.lookup(ref)
            except Exception:  # noqa: BLE001 - a local ref to nowhere is not what is looked for here
                if len(retrieved) > asked and (keyword, ref) not in found:
                    found.append((keyword, ref))
                continue
            # a local target may sit where no keyword leads (draft 7's "definitions"): walk it too
            stack.append((DRAFT202012.create_resource(resolved.contents), resolved.resolver))
        try:
            # only objects can hold a ref; a malformed subschema (null, a list) has none, and
            # referencing's id lookup would fail on it
            subresources = [sub for sub in resource.subresources() if isinstance(sub.contents, dict)]
            stack.extend([(sub, resolver.in_subresource(sub)) for sub in reversed(subresources)])
        except Exception:  # noqa: BLE001 - an odd $schema or shape: validator() still retrieves nothing
            continue
    return found


def ref_problem(schema: Any) -> str | None:
    """What is wrong with the refs of `schema`, in words that say the fix; None if nothing."""
    refs = outside_refs(schema)
    if not refs:
        return None
    keyword, ref = refs[0]
    more = f" (and {len(refs) - 1} more)" if len(refs) > 1 else ""
    return (
        f"{keyword} {ref!r} points outside the schema{more}; FlowCall fetches no schema, so inline the "
        'definition (under "$defs", referred to as "#/$defs/NAME")'
    )


def check_refs(schema: Any, where: str | None = None) -> None:
    """Refuse a schema with a ref outside it: SchemaRefError naming `where`, the ref and the fix."""
    problem = ref_problem(schema)
    if problem:
        raise SchemaRefError(f"{where}: {problem}" if where else problem)


def validator(schema: Any, where: str = "schema") -> jsonschema.Draft202012Validator:
    """A validator for an untrusted schema: refs resolve within it or not at all, and patterns
    match under a time limit. SchemaRefError (naming `where`) for a schema with a ref outside it."""
    check_refs(schema, where)
    return BoundedValidator(schema, registry=LOCAL_ONLY)


# --- a dataset's own schemas and patterns (datasets.py, scoring.py) ---------------------------


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
        patterns = (
            [value]
            if key == "pattern" and isinstance(value, str)
            else (list(value) if key == "patternProperties" and isinstance(value, dict) else [])
        )
        for pattern in patterns:
            problem = pattern_problem(pattern)
            if problem:
                return f"at {path or '/'}{key}: {problem}"
        if key in (*_REF_KEYWORDS, "$recursiveRef") and isinstance(value, str) and not value.startswith("#"):
            return (
                f"at {path or '/'}{key}: {value!r:.80} refers outside the schema; only references within "
                "it (#/...) are allowed, nothing is fetched"
            )
    return None


def schema_errors(schema: dict[str, Any], value: Any, *, limit: int = 3) -> list[str]:
    """Why `value` is not valid against `schema` (at most `limit` reasons); [] when it is."""
    try:
        errors = sorted(
            BoundedValidator(schema, registry=LOCAL_ONLY).iter_errors(value),
            key=lambda e: list(map(str, e.path)),
        )
    except Exception as exc:  # referencing's Unresolvable and the like: a schema problem, not a pass
        return [f"the schema could not be applied: {type(exc).__name__}: {exc}"]
    return [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:limit]]
