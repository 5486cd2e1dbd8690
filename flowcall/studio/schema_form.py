"""A tool's JSON Schema as a form: one field per argument, and the form's values back as arguments.

Plain values (text, numbers, booleans, enums) get their own widget; anything nested (arrays,
objects, pydantic models, unions) is edited as JSON text. The arguments are checked against
the tool's schema at the end, so the form never hands a tool what the model could not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

from flowcall.core import schemas

FieldKind = Literal["text", "integer", "number", "boolean", "enum", "json"]

_SIMPLE_TYPES: dict[str, FieldKind] = {
    "string": "text",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
}


@dataclass(frozen=True)
class FormField:
    name: str
    kind: FieldKind
    required: bool
    default: Any = None
    description: str = ""
    options: list[Any] = field(default_factory=list)  # for enums
    minimum: float | None = None
    maximum: float | None = None

    def label(self) -> str:
        return self.name + (" *" if self.required else "")

    def initial_text(self) -> str:
        """The JSON text a json field starts with: its default, if it has one."""
        return "" if self.default is None else json.dumps(self.default, ensure_ascii=False)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow a local $ref (#/$defs/X), keeping the referring schema's own keys (its description)."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part, {}) if isinstance(target, dict) else {}
    rest = {k: v for k, v in schema.items() if k != "$ref"}
    return {**target, **rest} if isinstance(target, dict) else schema


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`X | None` (pydantic's anyOf [X, null], or type [X, "null"]) is edited as X: empty means null/unset."""
    variants = schema.get("anyOf")
    if isinstance(variants, list):
        kept = [v for v in variants if v != {"type": "null"}]
        if len(kept) == 1 and len(variants) == 2:
            return {**{k: v for k, v in schema.items() if k != "anyOf"}, **kept[0]}
    types = schema.get("type")
    if isinstance(types, list) and len(types) == 2 and "null" in types:
        return {**schema, "type": next(t for t in types if t != "null")}
    return schema


def _kind(schema: dict[str, Any]) -> FieldKind:
    if "enum" in schema or "const" in schema:
        return "enum"
    return _SIMPLE_TYPES.get(schema.get("type"), "json")  # type: ignore[arg-type]


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    """The form for a tool's parameters schema, fields in the schema's order."""
    required = set(schema.get("required") or [])
    fields = []
    for name, raw in (schema.get("properties") or {}).items():
        prop = _resolve(_without_null(_resolve(raw if isinstance(raw, dict) else {}, schema)), schema)
        kind = _kind(prop)
        options = list(prop["enum"]) if "enum" in prop else [prop["const"]] if "const" in prop else []
        fields.append(
            FormField(
                name=name,
                kind=kind,
                required=name in required,
                default=prop.get("default"),
                description=str(prop.get("description") or ""),
                options=options,
                minimum=prop.get("minimum"),
                maximum=prop.get("maximum"),
            )
        )
    return fields


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _coerce(f: FormField, raw: Any) -> Any:
    """The form's value as the JSON value the tool takes; ValueError says what to enter instead."""
    if f.kind == "integer":
        try:
            number = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{raw!r} is not a number; enter a whole number") from None
        if not number.is_integer():
            raise ValueError(f"{raw!r} is not a whole number; enter one without decimals")
        return int(number)
    if f.kind == "number":
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"{raw!r} is not a number; enter a number such as 1.5") from None
    if f.kind == "json" and isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                'write it as JSON, e.g. {"key": "value"}, ["a", "b"] or "text" with quotes'
            ) from None
    if f.kind == "boolean" and not isinstance(raw, bool):
        raise ValueError(f"{raw!r} is not true or false; tick or untick the box")
    return raw


_FIXES = {
    "required": "add it",
    "type": "enter a value of that type",
    "enum": "pick one of the allowed values",
    "additionalProperties": "remove the extra key",
    "minimum": "enter a larger value",
    "exclusiveMinimum": "enter a larger value",
    "maximum": "enter a smaller value",
    "exclusiveMaximum": "enter a smaller value",
    "minLength": "enter a longer text",
    "maxLength": "shorten it",
    "pattern": "match the pattern",
}


def _readable(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    fix = _FIXES.get(str(error.validator), "correct the value")
    return f"{where}: {error.message}; {fix}"


def collect(
    fields: list[FormField], raw_values: dict[str, Any], schema: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The form's values as the tool's arguments, and the errors that keep them from running.

    Empty optional fields are left out, so the tool's own defaults apply."""
    arguments: dict[str, Any] = {}
    errors: list[str] = []
    failed: set[str] = set()
    for f in fields:
        raw = raw_values.get(f.name)
        if _is_empty(raw):
            if f.required:
                errors.append(f"{f.name} is required: fill it in")
                failed.add(f.name)
            continue
        try:
            arguments[f.name] = _coerce(f, raw)
        except ValueError as exc:
            errors.append(f"{f.name}: {exc}")
            failed.add(f.name)
    try:
        validator = schemas.validator(schema, "the tool's parameters")
    except schemas.SchemaRefError as exc:  # the tool's own schema is at fault: nothing can be checked
        return arguments, [*errors, str(exc)]
    for error in sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path]):
        # a field already named above is not reported twice (e.g. as a missing required property)
        if error.absolute_path:
            if error.absolute_path[0] in failed:
                continue
        elif error.validator == "required" and set(error.validator_value) - set(arguments) <= failed:
            continue
        errors.append(_readable(error))
    return arguments, errors
