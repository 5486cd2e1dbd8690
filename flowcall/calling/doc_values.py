"""Argument values must come from the conversation, not from the tool's own documentation.

Real tool docs are full of examples: "The city and state, e.g. San Francisco, CA", "in
owner/name form, e.g. octocat/Hello-World". A small model copies them: asked about Chicago, it
calls get_weather(location="San Francisco, CA"). And it picks an enum value the user's words
speak against ("lowest priority" -> Medium). grounding.py drops optional arguments nobody
mentioned; this module checks every argument, required ones included, and only *flags*: the
engine then asks the model once more with the problem pointed out (one retry from the budget),
because a required value cannot simply be left out.

A string value is flagged when it appears in the tool's docs (its description, or a
parameter's description or examples) and the conversation does not say it (said.Said, the one
notion grounding shares: "北京" is said when the user wrote "Beijing"). An enum value is flagged
when the conversation names another value of the same enum and not this one. Numbers, booleans
and short strings (under 3 letters or digits, 2 Chinese characters) are never flagged: "10" or
"US" appear everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from flowcall.calling.said import DOC_CHECK_PREFIX, Said, said_in
from flowcall.core.messages import Message, ToolCall, ToolSpec

MIN_CHARS = 3  # letters and digits of a value, fewer and it matches by chance...
MIN_CJK_CHARS = 2  # ...but two Chinese characters already name a city (成都)
_CJK = re.compile(r"[\u3400-\u9fff]")


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


@dataclass(frozen=True)
class DocValue:
    """One argument value the model should not have written."""

    tool: str
    argument: str  # a path: "location", "fields.priority.name", "edits[0].path"
    value: Any
    why: str  # "the tool's description has it as an example", "the request names Low"
    example: bool = False  # copied from the docs (not an enum member the words speak against)

    def line(self) -> str:
        return f"{self.tool}.{self.argument} = {self.value!r}: {self.why}"


def _docs_of(tool: ToolSpec) -> str:
    """The tool's own words where examples hide: descriptions and examples, all levels deep
    (enums and defaults are the schema's choices, not examples)."""
    parts = [tool.description or ""]

    def walk(schema: Any) -> None:
        if isinstance(schema, dict):
            for key, value in schema.items():
                if key in ("description", "title") and isinstance(value, str):
                    parts.append(value)
                elif key in ("examples", "example"):
                    parts.append(str(value))
                elif key not in ("enum", "default", "const"):
                    walk(value)
        elif isinstance(schema, list):
            for item in schema:
                walk(item)

    walk(tool.parameters)
    return "\n".join(parts)


def _property(schema: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    props = (schema or {}).get("properties")
    found = props.get(key) if isinstance(props, dict) else None
    return found if isinstance(found, dict) else None


def _values(value: Any, schema: dict[str, Any] | None, path: str):
    """(path, value, its schema) for every leaf of an argument."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _values(inner, _property(schema, key), f"{path}.{key}")
    elif isinstance(value, list):
        items = (schema or {}).get("items")
        for n, inner in enumerate(value):
            yield from _values(inner, items if isinstance(items, dict) else None, f"{path}[{n}]")
    else:
        yield path, value, schema


def doc_values(calls: list[ToolCall], tools: list[ToolSpec], messages: list[Message]) -> list[DocValue]:
    """The argument values in `calls` that come from the tools' docs, not the conversation."""
    by_name = {t.name: t for t in tools}
    said = said_in(messages)  # the system prompt, the user, earlier tool results
    found: list[DocValue] = []
    for call in calls:
        tool = by_name.get(call.name)
        if tool is None or not isinstance(call.arguments, dict):
            continue
        docs = _squash(_docs_of(tool))
        for key, argument in call.arguments.items():
            for path, value, schema in _values(argument, _property(tool.parameters, key), key):
                problem = _problem(value, schema or {}, docs, said)
                if problem:
                    found.append(DocValue(call.name, path, value, problem, example=problem == _EXAMPLE))
    return found


def _long_enough(value: str) -> bool:
    return len(_squash(value)) >= (MIN_CJK_CHARS if _CJK.search(value) else MIN_CHARS)


def _problem(value: Any, schema: dict[str, Any], docs: str, said: Said) -> str | None:
    if not isinstance(value, str) or not _long_enough(value) or said.says(value, schema):
        return None
    enum = schema.get("enum")
    if isinstance(enum, list) and value in enum:
        named = [
            v for v in enum if isinstance(v, str) and v != value and _long_enough(v) and said.as_words(v)
        ]
        return f"the request names {' or '.join(map(repr, named))}, not this" if named else None
    # the parameter's declared default (`namespace: "default"`) is what the tool does unasked, not a copy
    if _squash(value) in docs and value != schema.get("default"):
        return _EXAMPLE
    return None


_EXAMPLE = "it is the tool's own example, and nothing in the conversation says it"


def required_doc_values(found: list[DocValue], tools: list[ToolSpec]) -> list[DocValue]:
    """The flagged values that are the docs' examples in a required argument (required at every
    level of its path: `fields.project.key` when `fields`, `project` and `key` each are): the
    conversation never gave what the tool cannot run without."""
    by_name = {t.name: t for t in tools}
    return [
        f
        for f in found
        if f.example and f.tool in by_name and _required_path(by_name[f.tool].parameters, f.argument)
    ]


def _required_path(schema: Any, path: str) -> bool:
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if not isinstance(schema, dict):
            return False
        if part.startswith("["):  # an item of a required list
            schema = schema.get("items")
            continue
        required = schema.get("required")
        if not isinstance(required, list) or part not in required:
            return False
        schema = _property(schema, part)
    return True


def retry_message(found: list[DocValue]) -> Message:
    """What the model reads before it decides once more."""
    lines = "\n".join(f"- {item.line()}" for item in found)
    return Message.note(
        (
            f"{DOC_CHECK_PREFIX}these argument values do not come from what I said:\n"
            f"{lines}\n"
            "Write the call again with the values from my messages. Where I gave no value for an optional "
            "argument, leave it out; never copy an example from a tool's description."
        )
    )


UNMADE_NOTE = (
    "No tool was run for the user's last message. Reply to it directly, in the user's language. Do not "
    "say that anything was done, booked, sent or looked up; where the user asks for something to be done, "
    "ask for the details it needs."
)


def with_unmade_note(messages: list[Message]) -> list[Message]:
    """The conversation the model answers in place of calls that were not made. Without the note
    a model may answer a booking it was never let make with "好的，我已经帮您预订了…"; as a user
    turn after the request, it is answered instead of the request. So it goes in the system prompt."""
    if messages and messages[0].role == "system":
        first = messages[0].model_copy(
            update={"content": f"{messages[0].content or ''}\n\n{UNMADE_NOTE}".strip()}
        )
        return [first, *messages[1:]]
    return [Message(role="system", content=UNMADE_NOTE), *messages]
