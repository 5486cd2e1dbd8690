"""Optional arguments must come from the conversation, not from the model's imagination.

A small model held to a tool's schema by a grammar fills every optional parameter it sees:
`"frequency": "quarterly"`, `"year": 2000`, four invented `amenities`. On BFCL's even-numbered
cases this was the most common fault of the 0.5B model after deciding whether to call. An
optional argument whose value appears nowhere in the conversation (system prompt, user
messages, earlier tool results) is dropped, so the tool's own default applies. Required
arguments are never touched: the tool cannot run without them, so a guess is the best there is.

"Appears" is deliberately loose (case, punctuation, the first four letters of a word, the first
two characters of a run of Chinese ones, a number written as a percentage), because the cost of keeping a guess is lower than the cost of dropping what the
user said. Booleans and objects cannot be looked up in text and are kept.

With `keep_enum`, a value chosen from the parameter's enum is kept too: a closed-set choice is
said in the user's own words ("only the ones I can edit" -> minAccessRole "writer"), which a
literal look-up cannot find. doc_values.py still flags one that the conversation speaks against
(it names another member of the same enum). A per-model setting (providers.Capabilities):
measured on recorded decisions (benchmarks/grounding_rules.py), it keeps 7 values the item asks
for against 1 wrong and 2 unasked on the 1.5B's real-world calibration half, 3 against 3 on
the 0.5B's, and changes nothing on BFCL's even split for either.
"""

from __future__ import annotations

import re
from typing import Any

from flowcall.messages import Message, ToolCall, ToolSpec

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
_DIGITS_ONLY = re.compile(r"\d+(?:[-/.: ]\d+)+")  # 2026-12-05, 12/05, 10:30
_WORD = re.compile(r"[^\W\d_]{4,}")  # words of 4+ letters: short ones match too much
_LETTERS = re.compile(r"[^\W\d_]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}")  # a capitalised Latin word: Shanghai, Tokyo
_CJK_RUN = re.compile(r"[\u3400-\u9fff]{2,}")  # Chinese has no spaces: a run of characters is a phrase
# A time of day said on a 12-hour clock: "晚上6点半", "下午3点一刻", "6:30pm", "7 p.m."
_CLOCK_ZH = re.compile(r"(下午|晚上|傍晚|夜里|中午)?\s*(\d{1,2})\s*[点點时](半|一刻|三刻|(\d{1,2})分?)?")
_CLOCK_EN = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b", re.IGNORECASE)
_QUARTERS = {"半": 30, "一刻": 15, "三刻": 45}


# FlowCall's own note to the model about values it should not have written (doc_values.py):
# it quotes them, and must not make them look said
DOC_CHECK_PREFIX = "CHECK YOUR CALL: "


def _clock_parts(text: str) -> set[float]:
    """The hours and minutes of times said on a 12-hour clock, as a 24-hour time writes them:
    "晚上6点半" said is 18 and 30 in "18:30" (a check that wanted "18" said flagged the
    docs' example "18:30" that the user had asked for)."""
    parts: set[float] = set()
    for period, hour, after, minute in _CLOCK_ZH.findall(text):
        h = int(hour)
        noon = period == "中午" and h >= 10  # 中午11点 is 11:00, 中午1点 13:00
        parts.add(float(h + 12 if period and h < 12 and not noon else h))
        parts.add(float(_QUARTERS.get(after, int(minute) if minute else 0)))
    for hour, minute, half in _CLOCK_EN.findall(text):
        h = int(hour) % 12 + (12 if half.lower() == "p" else 0)
        parts.update({float(h), float(int(minute) if minute else 0)})
    return parts


def conversation_text(messages: list[Message]) -> str:
    """Everything the model was told or shown, where argument values may come from."""
    return "\n".join(m.content for m in messages if m.content and not m.content.startswith(DOC_CHECK_PREFIX))


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


class Grounds:
    """The conversation, prepared once for many look-ups."""

    def __init__(self, text: str):
        self.squashed = _squash(text)
        self.stems = {w[:4] for w in _WORD.findall(text.lower())}
        self.words = set(_LETTERS.findall(text.lower()))
        self.numbers = set()
        for match in _NUMBER.findall(text):
            try:
                self.numbers.add(float(match.replace(",", "")))
            except ValueError:
                continue
        # "2026-11-24" reads as 2026, -11, -24: the parts of a date are counted without sign
        self.parts = {abs(n) for n in self.numbers} | _clock_parts(text)
        self.has_cjk = bool(_CJK.search(text))

    def in_other_script(self, value: Any) -> bool:
        """A name written in a script the conversation does not use for it: "Shanghai,China" for
        "上海未来几天天气" (the API wants English names), "北京" for "weather in Beijing". A literal
        look-up cannot judge a translation, so grounding keeps it. In Latin script only a
        capitalised word counts as a name: "fahrenheit" for a Chinese request is an option the
        model chose, and stays subject to grounding."""
        if not isinstance(value, str):
            return False
        if _CJK.search(value):
            return not self.has_cjk
        return self.has_cjk and bool(_NAME.search(value))

    def has(self, value: Any) -> bool:
        if isinstance(value, bool) or isinstance(value, dict):
            return True
        if isinstance(value, (int, float)):
            return any(abs(value - n) < 1e-9 or abs(value * 100 - n) < 1e-6 or abs(value / 100 - n) < 1e-9
                       for n in self.numbers)
        if isinstance(value, str):
            squashed = _squash(value)
            if squashed and squashed in self.squashed:
                return True
            if _DIGITS_ONLY.fullmatch(value.strip()):
                # a date or time written another way ("12月5日" -> "2026-12-05", the year from
                # {{today}}): grounded when each of its numbers was said
                return all(float(part) in self.parts for part in re.findall(r"\d+", value))
            return (any(w[:4] in self.stems or self._plural_of_said(w) for w in _WORD.findall(value.lower()))
                    or any(run[:2] in self.squashed for run in _CJK_RUN.findall(value)))
        return False


    def _plural_of_said(self, word: str) -> bool:
        """"pods" when the user said "pod", "boxes" for "box": too short for the 4-letter stem."""
        return any(word.endswith(end) and word[: -len(end)] in self.words for end in ("s", "es"))


def enum_choice(schema: dict[str, Any], value: Any) -> bool:
    """The value is one of the parameter's enum members (a server's schema is untrusted: an
    "enum" that is not a list would match substrings of a string)."""
    members = schema.get("enum")
    return isinstance(members, list) and not isinstance(value, (list, dict)) and value in members


def _translated(value: Any, schema: dict[str, Any], grounds: Grounds) -> bool:
    """A name in another script than the conversation's; an enum member is a choice, not a name."""
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    return grounds.in_other_script(value) and not enum_choice(schema, value) and not enum_choice(items, value)


def ground_optional(call: ToolCall, tool: ToolSpec, grounds: Grounds, keep_enum: bool = False) -> ToolCall:
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
            items = [v for v in value if grounds.has(v) or _translated(v, properties.get(key) or {}, grounds)]
            if items:
                kept[key] = items
            if len(items) < len(value) or not value:  # an empty list gives nothing either
                dropped[key] = [v for v in value if v not in items]
        elif (grounds.has(value) or _translated(value, properties.get(key) or {}, grounds)
              or (keep_enum and enum_choice(properties.get(key) or {}, value))):
            kept[key] = value
        else:
            dropped[key] = value
    if not dropped:
        return call
    return call.model_copy(update={"arguments": kept, "dropped_arguments": {**call.dropped_arguments, **dropped}})


def ground_calls(calls: list[ToolCall], tools: list[ToolSpec], messages: list[Message],
                 keep_enum: bool = False) -> list[ToolCall]:
    by_name = {t.name: t for t in tools}
    grounds = Grounds(conversation_text(messages))
    return [ground_optional(c, by_name[c.name], grounds, keep_enum) if c.name in by_name else c for c in calls]
