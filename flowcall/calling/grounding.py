"""Optional arguments must come from the conversation, not from the model's imagination.

A small model held to a tool's schema by a grammar fills every optional parameter it sees:
`"frequency": "quarterly"`, `"year": 2000`, four invented `amenities`. On BFCL's even-numbered
cases this was the most common fault of the 0.5B model after deciding whether to call. An
optional argument whose value appears nowhere in the conversation (system prompt, user
messages, earlier tool results) is dropped, so the tool's own default applies. Required
arguments are never touched: the tool cannot run without them, so a guess is the best there is.

"Mentions" is said.Said, the one notion every check shares: loose, in any script, because the
cost of keeping a guess is lower than the cost of dropping what the user said. Booleans and
objects cannot be looked up in text and are kept.

With `keep_enum`, a value chosen from the parameter's enum is kept too: a closed-set choice is
said in the user's own words ("only the ones I can edit" -> minAccessRole "writer"), which a
literal look-up cannot find. doc_values.py still flags one that the conversation speaks against
(it names another member of the same enum). A per-model setting (providers.Capabilities):
measured on recorded decisions (benchmarks/grounding_rules.py), it keeps 7 values the item asks
for against 1 wrong and 2 unasked on the 1.5B's real-world calibration half, 3 against 3 on
the 0.5B's, and changes nothing on BFCL's even split for either.
"""

from __future__ import annotations

from typing import Any

from flowcall.calling.said import Said, conversation_text
from flowcall.messages import Message, ToolCall, ToolSpec


def enum_choice(schema: dict[str, Any], value: Any) -> bool:
    """The value is one of the parameter's enum members (a server's schema is untrusted: an
    "enum" that is not a list would match substrings of a string)."""
    members = schema.get("enum")
    return isinstance(members, list) and not isinstance(value, (list, dict)) and value in members


def ground_optional(call: ToolCall, tool: ToolSpec, said: Said, keep_enum: bool = False) -> ToolCall:
    """The call without optional arguments (or list items) that the conversation never mentions
    (with `keep_enum`, an enum member other than the default counts as mentioned; a value in
    another script than the conversation's is a translation, and kept)."""
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
        elif said.says(value, properties.get(key) or {}) or (keep_enum and enum_choice(properties.get(key) or {}, value)):
            kept[key] = value
        else:
            dropped[key] = value
    if not dropped:
        return call
    return call.model_copy(update={"arguments": kept, "dropped_arguments": {**call.dropped_arguments, **dropped}})


def ground_calls(calls: list[ToolCall], tools: list[ToolSpec], messages: list[Message],
                 keep_enum: bool = False) -> list[ToolCall]:
    by_name = {t.name: t for t in tools}
    said = Said(conversation_text(messages))
    return [ground_optional(c, by_name[c.name], said, keep_enum) if c.name in by_name else c for c in calls]
