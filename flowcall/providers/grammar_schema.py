"""What of a JSON Schema the local model's grammar is built from.

llama-cpp-python turns a JSON Schema into a GBNF grammar that holds every generated token, and
parts of a schema from outside (an MCP server, an OpenAPI document, a dataset) make that fail
or go wrong. So the grammar gets a copy without them, and the call is still checked against
the full schema (tools/execute.py, engine._structured) before anything uses it:

- bounds above GRAMMAR_MAX_REPEAT: the grammar spells a bound of N as N rules, so Stripe's
  `"maxLength": 5000` makes a grammar llama.cpp refuses, and a hostile `"maxLength": 10**9`
  or `"pattern": "[0-9]{1000000000}"` would build a string of gigabytes first;
- regex escapes the converter gets wrong: it copies `\\d` into a string literal, so
  `^1\\d{10}$` (a phone number) became the literal `1\\d1\\d…`, which llama.cpp cannot parse,
  and `^\\d{4}-\\d{2}$` a grammar that forces wrong text. `\\d` and `\\w` are rewritten as the
  character classes they stand for, an escaped punctuation mark as a one-character class;
  a pattern with any other escape is left out of the grammar;
- groups that open with `(?` (non-capturing groups, lookarounds, flags): the converter stops
  on them with an AssertionError, so such a pattern is left out of the grammar too.
"""

from __future__ import annotations

import re
from typing import Any

GRAMMAR_MAX_REPEAT = 256  # a longer bound is left to the JSON Schema check after the call
_BOUNDS = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties")
_VALUES = ("enum", "const", "default", "examples")  # values, not schemas: kept as they are
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")  # name -> schema
_CLASSES = {"d": "0-9", "w": "A-Za-z0-9_"}
_QUANTIFIER = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")


def grammar_pattern(pattern: str) -> str | None:
    """`pattern` as llama.cpp's converter reads it right, or None where it cannot."""
    if "(?" in pattern:  # groups with flags, lookarounds, (?:…): the converter asserts on them
        return None
    out, inside, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 >= len(pattern):
                return None
            escaped = pattern[i + 1]
            if escaped in _CLASSES:
                out.append(_CLASSES[escaped] if inside else f"[{_CLASSES[escaped]}]")
            elif not escaped.isalnum() and not inside and escaped not in "\\^[]":
                out.append(f"[{escaped}]")
            else:
                return None  # \s, \b, \u…, escapes inside a class: not worth the converter's guess
            i += 2
            continue
        inside = (char == "[") or (inside and char != "]")
        out.append(char)
        i += 1
    text = "".join(out)
    for low, high in _QUANTIFIER.findall(text):  # compared as text first: int() refuses 4,300+ digits
        if any(bound and (len(bound) > 3 or int(bound) > GRAMMAR_MAX_REPEAT) for bound in (low, high)):
            return None
    return text


def grammar_schema(schema: Any) -> Any:
    """A copy of `schema` that llama.cpp's grammar can be built from (see the module's text)."""
    if isinstance(schema, list):
        return [grammar_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in _BOUNDS and not (isinstance(value, int) and 0 <= value <= GRAMMAR_MAX_REPEAT):
            continue
        if key == "pattern":
            if isinstance(value, str) and (rewritten := grammar_pattern(value)) is not None:
                out[key] = rewritten
            continue
        if key in _NAMED and isinstance(value, dict):  # a parameter may be called "pattern" or "maxLength"
            out[key] = {name: grammar_schema(sub) for name, sub in value.items()}
        else:
            out[key] = grammar_schema(value) if key not in _VALUES else value
    return out
