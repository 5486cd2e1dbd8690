"""A deterministic value valid against a JSON Schema (`example_for`): the arguments the stand-in
models make up (the schema-driven model in providers/scripted.py, fake_server.py), so the same
schema always gives the same value."""

from __future__ import annotations

import math
from typing import Any

# values for string formats: fixed, so the same schema always gives the same value
_FORMATS = {
    "date": "2026-01-01",
    "date-time": "2026-01-01T09:00:00Z",
    "time": "09:00:00",
    "duration": "P1D",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
_MAX_DEPTH = 16  # a recursive schema ($ref to itself) stops here


def _resolved(schema: dict, root: Any) -> Any:
    """A local $ref replaced by what it points at, with the schema's other keywords kept."""
    target: Any = root
    for part in schema["$ref"][1:].split("/")[1:]:
        target = target[part.replace("~1", "/").replace("~0", "~")]
    return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}


def _object(schema: dict, again: Any) -> dict:
    """Its required properties, then optional ones in order up to minProperties."""
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    value = {}
    for name in schema.get("required") or []:
        value[name] = again(properties.get(name, extra if isinstance(extra, dict) else {}))
    for name, sub in properties.items():
        if len(value) >= schema.get("minProperties", 0):
            break
        value.setdefault(name, again(sub))
    return value


def _array(schema: dict, again: Any) -> list:
    """The tuple form's items, then minItems (at least one, at most maxItems) more."""
    items = schema.get("items", {})
    tuple_form = schema.get("prefixItems") or (items if isinstance(items, list) else [])
    if isinstance(items, list):  # draft 4's tuple form
        items = schema.get("additionalItems", {})
    prefix = [again(sub, i) for i, sub in enumerate(tuple_form)]
    count = max(schema.get("minItems", 0), 1) - len(prefix)
    if schema.get("maxItems") is not None:
        count = min(count, schema["maxItems"] - len(prefix))
    if items is False:
        return prefix
    return prefix + [again(items, len(prefix) + i) for i in range(max(count, 0))]


def example_for(schema: Any, *, root: Any = None, index: int = 0, _depth: int = 0) -> Any:
    """A value valid against `schema`: const, else default, else the first enum value, else one
    built from the type (objects get their required properties, arrays minItems items or one,
    numbers the lowest allowed value, strings "example" or a value of their format). `index`
    varies the n-th item of an array, for uniqueItems. Not covered: `pattern`, `not`, `if`."""
    root = schema if root is None else root
    if not isinstance(schema, dict) or _depth > _MAX_DEPTH:
        return "example"  # `true` or an empty schema: anything is valid

    def again(sub: Any, i: int = index) -> Any:
        return example_for(sub, root=root, index=i, _depth=_depth + 1)

    if isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#"):
        return again(_resolved(schema, root))
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][index % len(schema["enum"])]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = schema[key]
            # Optional[X] is anyOf [X, null]: prefer the real value
            option = next(
                (o for o in options if not (isinstance(o, dict) and o.get("type") == "null")), options[0]
            )
            rest = {k: v for k, v in schema.items() if k != key}
            return again({**rest, **option} if isinstance(option, dict) else option)
    if schema.get("allOf"):
        return again(_merged(schema))
    kind = _type_of(schema)
    if kind == "object":
        return _object(schema, again)
    if kind == "array":
        return _array(schema, again)
    if kind in ("integer", "number"):
        return _number(schema, kind, index)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    text = _FORMATS.get(schema.get("format", ""), "example" if not index else f"example{index + 1}")
    text += "x" * max(schema.get("minLength", 0) - len(text), 0)
    return text[: schema["maxLength"]] if schema.get("maxLength") is not None else text


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind:
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def _merged(schema: dict[str, Any]) -> dict[str, Any]:
    """allOf folded into one schema: properties and required united, the rest last-wins."""
    out = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, dict):
            continue
        for key, value in part.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = list(dict.fromkeys([*out.get("required", []), *value]))
            else:
                out[key] = value
    return out


def _number(schema: dict[str, Any], kind: str, index: int) -> int | float:
    """The lowest allowed value (or 1 when nothing bounds it from below), plus `index` while
    that stays allowed; a multiple of multipleOf where given."""
    low, low_open = schema.get("minimum"), False
    high, high_open = schema.get("maximum"), False
    ex_low, ex_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(ex_low, bool):  # draft 4: a flag on minimum
        low_open = ex_low and low is not None
    elif isinstance(ex_low, (int, float)) and (low is None or ex_low >= low):
        low, low_open = ex_low, True
    if isinstance(ex_high, bool):
        high_open = ex_high and high is not None
    elif isinstance(ex_high, (int, float)) and (high is None or ex_high <= high):
        high, high_open = ex_high, True
    if kind == "integer":  # open bounds become closed integer ones
        low = None if low is None else (math.floor(low) + 1 if low_open else math.ceil(low))
        high = None if high is None else (math.ceil(high) - 1 if high_open else math.floor(high))
        value = low if low is not None else min(1, high) if high is not None else 1
        if high is None or value + index <= high:
            value += index
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            value = math.ceil(value / step) * step
        return int(value)
    if low is None:
        value: float = 1 if high is None or 1 < high or (1 == high and not high_open) else high - 1
    elif not low_open:
        value = low
    else:
        value = low + 1 if high is None or low + 1 < high else (low + high) / 2
    if high is None or value + index < high:
        value += index
    step = schema.get("multipleOf")
    if step:
        value = math.ceil(value / step) * step
    return int(value) if float(value).is_integer() else value
