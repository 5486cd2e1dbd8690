"""The parts of a request: "What's the weather in Beijing, and what time is it there?" asks two
things.

The relevance gate asks "can this function handle the request?" about the whole message. For
a request with two needs, the answer splits between the tools, and often no tool passes the bar
although each need alone would pass it for its own tool (docs/research/multi-part.md). Where
the whole request finds no tool, the gate asks again about each part, read off the message by
its punctuation and its joining words, with the same question and the same bar: no new
threshold, and a request of one part is asked about exactly as before.

The split is grammar, not meaning: "Beijing and Shanghai" splits into "Beijing" and "Shanghai",
which costs a question but cannot make a call on its own, because each part must pass the same
bar a whole request must pass.
"""

from __future__ import annotations

import re

# A part ends at a sentence's end, a comma or semicolon, or before a word that joins two asks.
# A full stop counts only before a space or the end (not in "3.5" or "e.g."); ":" never ends a
# part ("add a task: buy milk" is one ask).
_BREAK = re.compile(
    r"(?<!\be\.g)(?<!\bi\.e)[.](?=\s|$)|[?!;,，、；？！。]|\s\+\s"
    r"|\s(?:and then|and also|and|also|then|plus)\s"
    r"|然后|顺便|另外|还有|并且|同时|再(?=[帮给告看查加列记问算说])",
    re.IGNORECASE)

MAX_PARTS = 4  # a cost cap, not a tuned figure: each part costs one gate question per tool


def request_parts(text: str) -> list[str]:
    """The request's parts, in order, each stripped; at most MAX_PARTS (the rest joined to the
    last). One part (the whole text) where nothing splits it."""
    pieces = [p.strip(" \t\n:：") for p in _BREAK.split(text or "")]
    parts = [p for p in pieces if re.search(r"\w", p)]
    if len(parts) > MAX_PARTS:
        parts = parts[: MAX_PARTS - 1] + [" ".join(parts[MAX_PARTS - 1:])]
    return parts or [text.strip()]
