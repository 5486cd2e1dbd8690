"""How deeply a document from outside may nest, checked before anything recurses into it.

Python's json, pydantic, jsonschema and YAML all recurse per level: a flow file nested 2,000
levels deep (in an `output_schema`, say) ends in a RecursionError traceback instead of an
error a person can act on. Every file and schema from outside is measured here first, without
recursion, and refused with its name and the limit.
"""

from __future__ import annotations

import json
from typing import Any

from flowcall.core.errors import ConfigError

DOCUMENT_DEPTH = 64  # a flow, an OpenAPI document, an MCP tool's inputSchema
RUN_DEPTH = 128  # a run file: a step's tool result may itself nest up to 100 levels (execute._jsonable)


class TooDeep(ConfigError, ValueError):
    """A document nests deeper than its limit."""


def depth(value: Any) -> int:
    """How deeply a JSON value nests (a scalar is 0, [] and {} are 1); without recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, (dict, list)):
            level += 1
            deepest = max(deepest, level)
            todo.extend((v, level) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def too_deep(what: str, limit: int) -> TooDeep:
    return TooDeep(
        f"{what} nests deeper than {limit} levels; FlowCall refuses it (nothing was stored or started). "
        "Flatten it, or check that it is the file you meant"
    )


def check_depth(value: Any, what: str, limit: int = DOCUMENT_DEPTH) -> Any:
    """`value`, or TooDeep naming `what` when it nests past `limit`."""
    if depth(value) > limit:
        raise too_deep(what, limit)
    return value


def loads(text: str, what: str, limit: int = DOCUMENT_DEPTH) -> Any:
    """json.loads, with nesting past `limit` refused as TooDeep (json itself may recurse out)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise too_deep(what, limit) from None
    return check_depth(value, what, limit)
