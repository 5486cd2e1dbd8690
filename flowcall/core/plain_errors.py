"""Pydantic's validation errors as plain sentences for a person: the field in words, what is
wrong with its value and what to do.

    Flow name: use only letters, digits, spaces, '-', '_' and '.'; 'my/flow' has '/'.
    Max rounds: must be between 1 and 50 (it is 0).
    Decision model › provider: pick one of local, openai, dashscope, openai-compatible, scripted
    (it is 'gpt').

The field's words come from where the error sits in a flow (Flow's fields, walked through its
nested models); the limits and choices from the field itself, so a sentence says both ends of
a range. A value shown back is cut short and its control characters are written as escapes:
it is untrusted text. The sentences are plain text; a caller that renders Markdown escapes them.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import types
import typing
import unicodedata
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

Loc = tuple[str | int, ...]

SHOWN_CHARS = 40  # of a value shown back
LIMIT = 8  # sentences; the rest are counted

# the top level of a flow, in words
_TOP_WORDS = {
    "format": "Format",
    "name": "Flow name",
    "description": "Description",
    "decision": "Decision model",
    "tools": "Tools",
    "tool_choice": "Tool choice",
    "parallel_tool_calls": "Parallel tool calls",
    "max_rounds": "Max rounds",
    "retry_budget": "Retry budget",
    "tool_timeout_s": "Tool timeout in seconds",
    "router_rules": "Router rules",
    "mcp_servers": "MCP servers",
    "http_tools": "HTTP tools",
    "needs_approval": "Needs approval",
    "polish": "Polish model",
    "layout": "Layout",
}
# a field inside a model, in words
_FIELD_WORDS = {
    "base_url": "base URL",
    "system_prompt": "system prompt",
    "max_tokens": "max tokens",
    "calling_way": "calling way",
    "output_schema": "output schema",
    "url": "URL",
    "env": "environment",
    "startup_timeout_s": "startup timeout in seconds",
    "call_timeout_s": "call timeout in seconds",
    "openapi": "OpenAPI document",
    "allow_hosts": "allowed hosts",
    "timeout_s": "timeout in seconds",
    "max_response_bytes": "max response bytes",
}
# lists whose items are named by their "name" ("MCP server 'git'"), else by their number
_NAMED_ITEMS = {"mcp_servers": "MCP server", "http_tools": "HTTP tools", "router_rules": "Router rule"}

# the patterns of the flow's fields, said as instructions
_FLOW_NAME = r"^[\w\-. ]+$"
_NAMESPACE = r"^[a-z0-9][a-z0-9_-]{0,39}$"
_HTTP_URL = r"^https?://"
_PROVIDER = r"^[a-z][a-z0-9_-]{0,39}$"  # core/spec.py PROVIDER_NAME

_TYPE_WORDS = {
    "string_type": "must be text, in quotes",
    "string_unicode": "must be text, in quotes",
    "string_sub_type": "must be text, in quotes",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_parsing_size": "must be a smaller whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list, in [ ]",
    "tuple_type": "must be a list, in [ ]",
    "set_type": "must be a list, in [ ]",
    "dict_type": "must be an object, in { }",
    "mapping_type": "must be an object, in { }",
    "model_type": "must be an object with its settings, in { }",
    "model_attributes_type": "must be an object with its settings, in { }",
    "dataclass_type": "must be an object with its settings, in { }",
    "none_required": "must be null",
    "json_type": "must be JSON text",
}
# what pydantic's own wording starts with, for errors this module has no sentence for
_JARGON = [
    (
        re.compile(r"^(Input|Value|String|List|Dictionary|Object|Tuple|Set|Data) should (be |have |match )?"),
        lambda m: "must " + (m.group(2) or ""),
    ),
    (re.compile(r"\bshould\b"), lambda m: "must"),
]


def plain_errors(
    exc: ValidationError,
    data: Any = None,
    *,
    model: type[BaseModel],
    at: Loc = (),
    paths: bool = False,
    limit: int = LIMIT,
) -> list[str]:
    """One sentence per error of `exc`, each naming the field in words and saying what to do.

    `data`: what was validated, to name a list's items by their own name ("MCP server 'git'").
    `model`: the model the full location starts from (spec.Flow for a flow). `at`: where what was
    validated sits in it, e.g. ("mcp_servers",) for a list of servers checked on its own.
    `paths`: add the field's JSON path after its words, "Max rounds (max_rounds)", for a person
    who edits the file. Past `limit` errors, one last sentence counts the rest."""
    errors = exc.errors(include_url=False)
    # unknown settings: one sentence per object that has them, where the first one is
    extras: dict[Loc, list[str | int]] = {}
    for error in errors:
        if error.get("type") == "extra_forbidden" and error.get("loc"):
            extras.setdefault(tuple(error["loc"][:-1]), []).append(error["loc"][-1])
    said: list[str] = []
    for error in errors:
        loc = tuple(error.get("loc", ()))
        if error.get("type") == "extra_forbidden" and loc:
            keys = extras.pop(loc[:-1], None)
            if keys is None:
                continue  # said with the first unknown setting of the same object
            sentence = _finish(_extra(loc[:-1], keys, data, model, tuple(at), paths))
        else:
            sentence = _sentence(error, data, model, tuple(at), paths)
        if sentence not in said:
            said.append(sentence)
    if len(said) > limit:
        rest = len(said) - limit
        said = said[:limit] + [f"And {rest} more problem{'s' if rest > 1 else ''} like these."]
    return said


# ------------------------------------------------------------------ the field, in words


def _at(data: Any, loc: Loc) -> Any:
    """The value at `loc` in `data`, or None."""
    for part in loc:
        if isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data):
            data = data[part]
        elif isinstance(part, str) and isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return None
    return data


def _words(loc: Loc, data: Any, at: Loc) -> str:
    """The field at `at + loc` in words: "Decision model › temperature", "MCP server 'git' › command"."""
    full = at + loc
    parts: list[str] = []
    i = 0
    while i < len(full):
        part = full[i]
        if i == 0 and isinstance(part, str):
            if part in _NAMED_ITEMS and i + 1 < len(full) and isinstance(full[i + 1], int):
                index = full[i + 1]
                # the item's own name, where `data` holds it (it is the item, or holds it)
                name = _at(data, full[len(at) : i + 2] + ("name",)) if len(at) <= i + 2 else None
                if part != "router_rules" and isinstance(name, str) and name.strip():
                    parts.append(f"{_NAMED_ITEMS[part]} {shown_value(name)}")
                else:
                    parts.append(f"{_NAMED_ITEMS[part]} {index + 1}")
                i += 2
                continue
            parts.append(_TOP_WORDS.get(part, shown_value(part)))
        elif isinstance(part, int):
            parts.append(f"item {part + 1}")
        elif part == "[key]":
            parts[-1:] = [f"{parts[-1] if parts else 'a'} (its name)"]
        elif len(full) > 1 and full[i - 1] == "env" and i == len(full) - 1:
            parts.append(f"variable {shown_value(part)}")
        else:
            parts.append(
                _FIELD_WORDS.get(part, part.replace("_", " ")) if _plain_key(part) else shown_value(part)
            )
        i += 1
    return " › ".join(parts) if parts else "The flow"


def _plain_key(key: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", key))


def _path(loc: Loc) -> str:
    """mcp_servers[0].command"""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part == "[key]":
            continue
        else:
            key = part if _plain_key(part) else shown_value(part)
            text += f".{key}" if text else key
    return text


# ------------------------------------------------------------------ the field, in the model


def _unwrap(annotation: Any) -> Any:
    """X from X | None."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(kept) == 1:
            return kept[0]
    return annotation


def _model_of(annotation: Any) -> type[BaseModel] | None:
    annotation = _unwrap(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _resolve(model: type[BaseModel], loc: Loc) -> tuple[Any, Any]:
    """(the pydantic field at `loc`, the model `loc` ends in or None): walked through nested
    models, lists and dicts. (None, None) where the walk leaves the schema."""
    current: Any = model
    field = None
    for part in loc:
        inner = _model_of(current)
        if inner is not None and isinstance(part, str) and part in inner.model_fields:
            field = inner.model_fields[part]
            current = field.annotation
            continue
        shape = _unwrap(current)
        origin, args = typing.get_origin(shape), typing.get_args(shape)
        if origin is list and isinstance(part, int) and args:
            current = args[0]
        elif origin is tuple and isinstance(part, int) and part < len(args) and args[-1] is not Ellipsis:
            current = args[part]
        elif origin is dict and isinstance(part, str) and len(args) == 2:
            current = args[1]
        else:
            return None, None
        # an item: its own constraints (Annotated[float, Field(ge=...)]), not its container's
        field = FieldInfo.from_annotation(current) if typing.get_origin(current) is Annotated else None
    return field, _model_of(current)


def _bounds(field: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for meta in getattr(field, "metadata", ()):
        for kind, name in (
            (Ge, "ge"),
            (Gt, "gt"),
            (Le, "le"),
            (Lt, "lt"),
            (MinLen, "min_length"),
            (MaxLen, "max_length"),
        ):
            if isinstance(meta, kind):
                found[name] = getattr(meta, name)
    return found


def _choices(field: Any) -> list[Any]:
    annotation = _unwrap(getattr(field, "annotation", None))
    return list(typing.get_args(annotation)) if typing.get_origin(annotation) is Literal else []


# ------------------------------------------------------------------ values, shown back


def _clean(text: str) -> str:
    """Control, format (bidi) and separator characters as escapes: the value is untrusted."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out)


def _cut(text: str, limit: int = SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def shown_value(value: Any) -> str:
    """A value as a person reads it in a sentence: text in single quotes, cut short, its control
    and bidi characters written as escapes (it is untrusted); JSON for anything else."""
    if isinstance(value, str):
        return f"'{_clean(_cut(value))}'"
    return _clean(_cut(_json(value)))


def _json(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _is_value(error: dict[str, Any]) -> str:
    """(it is 0), or nothing when the value is a whole object or list (too much to say back)."""
    value = error.get("input")
    if isinstance(value, (dict, list)) and len(_json(value)) > SHOWN_CHARS:
        return f" (it is {'an object' if isinstance(value, dict) else 'a list'})"
    return f" (it is {shown_value(value)})"


# ------------------------------------------------------------------ the sentences


def _sentence(error: dict[str, Any], data: Any, model: type[BaseModel], at: Loc, paths: bool) -> str:
    loc = tuple(error.get("loc", ()))
    kind = error.get("type", "")
    words = _words(loc, data, at)
    if paths and (at + loc):
        words += f" ({_path(at + loc)})"
    if kind in ("value_error", "assertion_error"):
        said = _validator_message(error)
        if not loc or (isinstance(loc[-1], int) and _already_named(words, said)):
            return _finish(said)  # the model's own check says which field; its message is a sentence
        return _finish(f"{words}: {said}")
    field, _ = _resolve(model, at + loc)
    return _finish(f"{words}: {_problem(kind, error, field, loc)}")


def _already_named(words: str, said: str) -> bool:
    quoted = re.search(r"'[^']*'", words)
    return bool(quoted) and quoted.group() in said


def _finish(sentence: str) -> str:
    return sentence if sentence.endswith((".", "!", "?")) else sentence + "."


def _validator_message(error: dict[str, Any]) -> str:
    cause = (error.get("ctx") or {}).get("error")
    text = (
        str(cause)
        if cause is not None
        else re.sub(r"^(Value error|Assertion failed), ", "", error.get("msg", ""))
    )
    return _clean(" ".join(text.split())) or "this value is not accepted"


def _extra(
    parent: Loc, keys: list[str | int], data: Any, model: type[BaseModel], at: Loc, paths: bool
) -> str:
    """The unknown settings of one object, with the setting meant (a close spelling) or the ones there are."""
    _, inner = _resolve(model, at + parent)
    known = list(inner.model_fields) if inner is not None else []
    shown = _listing([shown_value(str(key)) for key in keys])
    one = len(keys) == 1
    if not (at + parent):
        said = f"{shown} {'is not a flow setting' if one else 'are not flow settings'}"
    else:
        said = f"{_words(parent, data, at)}: {shown} " + (
            "is not one of its settings" if one else "are not its settings"
        )
        if paths:
            named = ", ".join(_path(at + parent + (key,)) for key in keys[:3])
            said += f" ({named}{', …' if len(keys) > 3 else ''})"
    close = [
        (key, match[0])
        for key in keys
        if (match := difflib.get_close_matches(str(key), known, n=1, cutoff=0.6) if known else [])
    ]
    if close and one:
        return f"{said}; did you mean '{close[0][1]}'? Otherwise remove it"
    if close:
        meant = ", ".join(f"{shown_value(str(key))} → '{match}'" for key, match in close[:3])
        return f"{said}; fix the spelling ({meant}) or remove them"
    listed = f" (they are: {', '.join(known)})" if known else ""
    return f"{said}; remove {'it' if one else 'them'}{listed}"


def _listing(items: list[str], most: int = 5) -> str:
    """'a', 'b' and 'c'; past `most`, 'a', ... and 3 more."""
    if len(items) > most:
        items = items[:most] + [f"{len(items) - most} more"]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _problem(kind: str, error: dict[str, Any], field: Any, loc: Loc) -> str:
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if kind == "missing":
        return "is required and missing; add it"
    if kind == "string_pattern_mismatch":
        return _pattern_problem(str(ctx.get("pattern", "")), value)
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bounds = _bounds(field) or {k: v for k, v in ctx.items() if k in ("ge", "gt", "le", "lt")}
        return _range(bounds) + _is_value(error)
    if kind == "literal_error":
        choices = _choices(field)
        if len(choices) == 1:
            return f"must be {choices[0]}" + _is_value(error)
        listed = ", ".join(map(str, choices)) if choices else str(ctx.get("expected", "")).replace("'", "")
        return f"pick one of {listed}" + _is_value(error)
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return (
            "must not be empty"
            if least <= 1
            else f"needs at least {least} characters (it has {len(str(value))})"
        )
    if kind == "string_too_long":
        return f"can have at most {ctx.get('max_length')} characters (it has {len(str(value))})"
    if kind == "too_short":
        least = ctx.get("min_length", 1)
        hint = (
            '; give the program and its arguments, e.g. ["uvx", "mcp-server-git"]'
            if loc and loc[-1] == "command"
            else ""
        )
        if least <= 1:
            return "must not be empty" + hint
        return f"needs at least {least} items (it has {ctx.get('actual_length', len(value or []))}){hint}"
    if kind == "too_long":
        return f"can have at most {ctx.get('max_length')} items (it has {ctx.get('actual_length', '?')})"
    if kind in _TYPE_WORDS:
        return _TYPE_WORDS[kind] + _is_value(error)
    if kind == "json_invalid":
        why = _clean(_cut(str(ctx.get("error", "")), 80))
        return f"is not valid JSON ({why}); check its quotes, commas and brackets"
    if kind == "recursion_loop":
        return "refers to itself; write it out without the loop"
    return _plain_fallback(error.get("msg", "")) + _is_value(error)


def _plain_fallback(msg: str) -> str:
    """An error this module has no sentence for: pydantic's message with its wording made plain."""
    text = msg.strip().rstrip(".") or "this value is not accepted"
    for pattern, replacement in _JARGON:
        text = pattern.sub(replacement, text)
    return _clean(_cut(text, 160))


def _range(bounds: dict[str, Any]) -> str:
    low = ("ge", bounds["ge"]) if "ge" in bounds else ("gt", bounds["gt"]) if "gt" in bounds else None
    high = ("le", bounds["le"]) if "le" in bounds else ("lt", bounds["lt"]) if "lt" in bounds else None
    if low and high and low[0] == "ge" and high[0] == "le":
        return f"must be between {_number(low[1])} and {_number(high[1])}"
    said = []
    if low:
        said.append(f"at least {_number(low[1])}" if low[0] == "ge" else f"more than {_number(low[1])}")
    if high:
        said.append(f"at most {_number(high[1])}" if high[0] == "le" else f"less than {_number(high[1])}")
    return "must be " + " and ".join(said) if said else "is out of range"


def _pattern_problem(pattern: str, value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if pattern == _FLOW_NAME:
        bad = _offending(text, r"[\w\-. ]")
        return "use only letters, digits, spaces, '-', '_' and '.'" + (
            f"; {shown_value(text)} has {bad}" if bad else ""
        )
    if pattern == _NAMESPACE:
        rule = "use 1 to 40 lowercase letters, digits, '-' and '_', starting with a letter or digit"
        return rule + _lower_name_problem(text, "-_")
    if pattern == _PROVIDER:
        rule = (
            "name a provider: local, openai, dashscope, openai-compatible or an installed one "
            "(`flowcall providers` lists them), written in 1 to 40 lowercase letters, digits, '-' and '_'"
        )
        return rule + _lower_name_problem(text, "-_0123456789")
    if pattern == _HTTP_URL:
        return f"must start with http:// or https:// (it is {shown_value(text)})"
    return f"does not have the form it needs (it is {shown_value(text)})"


def _lower_name_problem(text: str, not_first: str) -> str:
    """What is wrong with a lowercase name (a namespace, a provider), after its rule."""
    if not text:
        return "; it is empty"
    if len(text) > 40:
        return f"; {shown_value(text)} has {len(text)} characters"
    if text[0] in not_first:
        return f"; {shown_value(text)} starts with {shown_value(text[0])}"
    bad = _offending(text, r"[a-z0-9_-]")
    return f"; {shown_value(text)} has {bad}" if bad else ""


def _offending(text: str, allowed: str) -> str:
    """The characters of `text` that `allowed` (a one-character class) does not match, at most five."""
    bad: list[str] = []
    for ch in text:
        if not re.fullmatch(allowed, ch) and ch not in bad:
            bad.append(ch)
    return _listing([shown_value(ch) for ch in bad]) if bad else ""
