"""Optional arguments must come from the conversation, not from the model's imagination.

A small model held to a tool's schema by a grammar fills every optional parameter it sees:
`"frequency": "quarterly"`, `"year": 2000`, four invented `amenities`: after deciding whether
to call, the most common fault of a small embedded model. An
optional argument whose value appears nowhere in the conversation (system prompt, user
messages, earlier tool results) is dropped, so the tool's own default applies. Required
arguments are never touched: the tool cannot run without them, so a guess is the best there is.

"Mentions" is said.Said, the one notion every check shares: loose, in any script, because the
cost of keeping a guess is lower than the cost of dropping what the user said. Booleans and
objects cannot be looked up in text and are kept.

Values in a machine's closed vocabulary are kept too, because users say them in their own
words, which a literal look-up cannot find: a member of the parameter's enum ("only the ones I
can edit" -> minAccessRole "writer", "urgent" -> priority "high", "明天" -> extensions "all"),
an IANA time zone ("LA" -> America/Los_Angeles), and a date or time in ISO form when the user
names a day ("后天", "next Monday", "月底"). doc_values.py still flags an enum member the
conversation speaks against (it names another member of the same enum). Dropping these
refused correct calls on FlowCall's own questions (benchmarks/false_refusals.py); the
measurements are in docs/research/realworld-notebook.md.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any
from zoneinfo import available_timezones

from flowcall.calling.said import Said, said_in
from flowcall.core.messages import Message, ToolCall, ToolSpec

_ISO_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?|\d{2}:\d{2}(?::\d{2})?")


def enum_choice(schema: dict[str, Any], value: Any) -> bool:
    """The value is one of the parameter's enum members (a server's schema is untrusted: an
    "enum" that is not a list would match substrings of a string)."""
    members = schema.get("enum")
    return isinstance(members, list) and not isinstance(value, (list, dict)) and value in members


def closed_choice(schema: dict[str, Any], value: Any, said: Said) -> bool:
    """A value from a machine's closed vocabulary that users say in their own words."""
    return enum_choice(schema, value) or time_zone(value) or (iso_moment(value) and said.names_a_day)


def time_zone(value: Any) -> bool:
    return isinstance(value, str) and "/" in value and value in _zones()


@cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones())


def iso_moment(value: Any) -> bool:
    return isinstance(value, str) and bool(_ISO_MOMENT.fullmatch(value.strip()))


def ground_optional(call: ToolCall, tool: ToolSpec, said: Said) -> ToolCall:
    """The call without optional arguments (or list items) that the conversation never mentions
    (an enum member other than the default, a time zone or a date for a named day count as
    mentioned; so does a translation, see said.Said)."""
    if not isinstance(call.arguments, dict):
        return call
    required = set(tool.parameters.get("required", []))
    properties = tool.parameters.get("properties", {})
    kept: dict[str, Any] = {}
    dropped: dict[str, Any] = {}
    for key, value in call.arguments.items():
        default = (properties.get(key) or {}).get("default", ...)
        if key in required:
            kept[key] = value
        elif value is None or value == default:
            dropped[key] = value
        elif isinstance(value, list):
            items = [v for v in value if said.says(v, properties.get(key) or {})]
            if items:
                kept[key] = items
            if len(items) < len(value) or not value:  # an empty list gives nothing either
                dropped[key] = [v for v in value if v not in items]
        elif said.says(value, properties.get(key) or {}) or closed_choice(
            properties.get(key) or {}, value, said
        ):
            kept[key] = value
        else:
            dropped[key] = value
    if not dropped:
        return call
    return call.model_copy(
        update={"arguments": kept, "dropped_arguments": {**call.dropped_arguments, **dropped}}
    )


def ground_calls(calls: list[ToolCall], tools: list[ToolSpec], messages: list[Message]) -> list[ToolCall]:
    by_name = {t.name: t for t in tools}
    said = said_in(messages)
    return [ground_optional(c, by_name[c.name], said) if c.name in by_name else c for c in calls]
