"""The parts of a request: "What's the weather in Beijing, and what time is it there?" asks two
things.

The relevance gate asks "can this function handle the request?" about the whole message. For
a request with two needs, the answer splits between the tools, and often no tool passes the bar
although each need alone would pass it for its own tool (docs/research/multi-part.md). Where
the whole request finds no tool, the message is split into parts by its punctuation and its
joining words, and one more model call matches every part to a listed tool or to "none" (a
grammar holds each answer to those names). A tool known to only read fits the part it is
matched to; any other tool (one that changes something, or one whose description does not say,
like a dataset's bare function) must also pass the gate's own question on that part, against
the same bar as a whole request: the match names some tool for nearly every part, and a wrong
one there would do what nobody asked for. A request of one part is asked about exactly as before.

The split is grammar, not meaning: "Beijing and Shanghai" splits into "Beijing" and "Shanghai",
which costs nothing more (the parts share one question) and cannot make a call on its own.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from flowcall.calling.shortlist import listing
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ResponseFormat, ToolSpec

if TYPE_CHECKING:
    from flowcall.calling.base import ModelCall

# A part ends at a sentence's end, a comma or semicolon, or before a word that joins two asks.
# A full stop counts only before a space or the end (not in "3.5" or "e.g."); ":" never ends a
# part ("add a task: buy milk" is one ask); " + " only between words ("weather + time"), not
# between a sum's terms ("x^2 + 2x + 1").
_BREAK = re.compile(
    r"(?<!\be\.g)(?<!\bi\.e)[.](?=\s|$)|[?!;,，、；？！。]|(?<=[^\W\d_]{2})\s\+\s(?=[^\W\d_]{2})"
    r"|\s(?:and then|and also|and|also|then|plus)\s"
    r"|然后|顺便|另外|还有|并且|同时|再(?=[帮给告看查加列记问算说])",
    re.IGNORECASE,
)

MAX_PARTS = 4  # a cap on what one question lists, not a tuned figure


def request_parts(text: str) -> list[str]:
    """The request's parts, in order, each stripped; at most MAX_PARTS (the rest joined to the
    last). One part (the whole text) where nothing splits it."""
    pieces = [p.strip(" \t\n:：") for p in _BREAK.split(text or "")]
    parts = [p for p in pieces if re.search(r"\w", p)]
    if len(parts) > MAX_PARTS:
        parts = parts[: MAX_PARTS - 1] + [" ".join(parts[MAX_PARTS - 1 :])]
    return parts or [text.strip()]


# Matching the parts to tools: one question for all the parts of a round, its answer held by a
# grammar to the listed tools' names or "none" for each part.
MATCH_SYSTEM = (
    "You match each part of a user's request to the function that does it. The functions, one per "
    'line:\n{listing}\n\nA part that none of them does gets "none".'
)
MATCH_LABEL = "matched the request's parts to tools"
NONE = "none"


def match_request(tools: list[ToolSpec], text: str, parts: list[str]) -> ModelRequest:
    numbers = [str(i) for i in range(1, len(parts) + 1)]
    names = [t.name for t in tools]
    ask = (
        f"Request: {text}\n\nParts:\n"
        + "\n".join(f"{n}. {p}" for n, p in zip(numbers, parts))
        + "\n\nReply with JSON: {"
        + ", ".join(f'"{n}": "<function name or none>"' for n in numbers)
        + "}"
    )
    schema = {
        "type": "object",
        "properties": {n: {"enum": [*names, NONE]} for n in numbers},
        "required": numbers,
        "additionalProperties": False,
    }
    return ModelRequest(
        messages=[
            Message(role="system", content=MATCH_SYSTEM.format(listing=listing(tools))),
            Message(role="user", content=ask),
        ],
        max_tokens=24 * len(parts) + 8,
        temperature=0.0,
        response_format=ResponseFormat(name="parts", json_schema=schema, strict=False),
    )


def read_matches(content: str | None, parts: list[str], tools: list[ToolSpec]) -> list[ToolSpec | None]:
    """The tool matched to each part, None for "none" or a reply that cannot be read (a provider
    that does not hold to the grammar): a part is never matched by a fault."""
    try:
        value = json.loads(content or "")
    except json.JSONDecodeError:
        value = None
    by_name = {t.name: t for t in tools}
    if not isinstance(value, dict):
        return [None] * len(parts)
    return [by_name.get(str(value.get(str(i)))) for i in range(1, len(parts) + 1)]


def checked_on_its_part(tool: ToolSpec) -> bool:
    """Whether a tool matched to a part must also pass the gate's question on it: all but a tool
    known to only read (a tool that says nothing of itself is not taken to be harmless)."""
    return tool.read_only is not True


def matches_note(parts: list[str], matched: list[ToolSpec | None]) -> str:
    """A match step's note, read back by relevance.reading_from_notes: a tool that changes
    something is only a candidate, which the gate's own question on that part must confirm."""
    said = [
        f"part {i} ({part}) "
        + (NONE if tool is None else tool.name + (", to be checked" if checked_on_its_part(tool) else ""))
        for i, (part, tool) in enumerate(zip(parts, matched), 1)
    ]
    return f"{MATCH_LABEL}: " + "; ".join(said)


def match_parts(
    tools: list[ToolSpec], text: str, parts: list[str], call: ModelCall, way: str
) -> list[ToolSpec | None]:
    """One model call: the tool each part asks for, or None."""
    asked = match_request(tools, text, parts)
    found: list[list[ToolSpec | None]] = []

    def interpret(turn: ModelTurn) -> ModelTurn:
        found.append(read_matches(turn.content, parts, tools))
        return turn.model_copy(update={"verdict": matches_note(parts, found[-1])})

    call(way, asked, interpret, MATCH_LABEL)
    return found[-1] if found else [None] * len(parts)
