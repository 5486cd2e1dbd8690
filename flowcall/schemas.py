"""JSON Schemas from outside, checked without fetching anything.

A polish `output_schema` in a shared flow or run file, an MCP server's tool list, an OpenAPI
document: each is someone else's text. jsonschema's default registry retrieves a `$ref` (or
`$dynamicRef`) that names a URL, with urllib and no time limit, so such a schema could make
FlowCall send a GET anywhere (169.254.169.254, a service on localhost), past the SSRF guard and
the grants. Here a ref resolves only within its own schema (`#/$defs/...`, an embedded `$id`)
or among the metaschemas bundled with jsonschema; any other ref is refused, by name.

FlowCall validates against such a schema only through `validator()`, and refuses one early
where a flow or a tool is loaded (`check_refs`), with the field that holds it.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import DRAFT202012

from flowcall.errors import ConfigError

_REF_KEYWORDS = ("$ref", "$dynamicRef")


class SchemaRefError(ConfigError, ValueError):
    """A schema's ref points outside it. Also a ValueError, so a pydantic validator that raises
    it reports it as the field's error."""


def _retrieve_nothing(uri: str) -> Resource:
    raise NoSuchResource(ref=uri)


# What a validator resolves refs with: nothing is ever retrieved. (jsonschema adds the bundled
# metaschemas to a registry it is given, as here for the walk below.)
LOCAL_ONLY: Registry = Registry(retrieve=_retrieve_nothing)  # type: ignore[call-arg]


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
    return (f"{keyword} {ref!r} points outside the schema{more}; FlowCall fetches no schema, so inline the "
            "definition (under \"$defs\", referred to as \"#/$defs/NAME\")")


def check_refs(schema: Any, where: str | None = None) -> None:
    """Refuse a schema with a ref outside it: SchemaRefError naming `where`, the ref and the fix."""
    problem = ref_problem(schema)
    if problem:
        raise SchemaRefError(f"{where}: {problem}" if where else problem)


def validator(schema: Any, where: str = "schema") -> jsonschema.Draft202012Validator:
    """A validator for an untrusted schema: refs resolve within it or not at all. SchemaRefError
    (naming `where`) for a schema with a ref outside it."""
    check_refs(schema, where)
    return jsonschema.Draft202012Validator(schema, registry=LOCAL_ONLY)
