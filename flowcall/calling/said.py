"""Does the conversation say this value? One answer for every check that judges a call.

Grounding (grounding.py) drops an optional argument the conversation never mentions, and doc
values (doc_values.py) asks again about a value copied from the tool's docs. Both must accept
what the user said, however they said it: "北京" in a call is the user's value when they wrote
"Beijing", "3" when they wrote "three" or "三", "18" and "30" when they wrote "晚上6点半". A check
that refuses a user's own words is worse than no check, so "says" is deliberately loose:

- the value appears in the text after case and punctuation are dropped, or a word of it by its
  first four letters (a plural, a Chinese phrase by its first two characters);
- numbers written as words count as their digits (text2num for English, cn2an for Chinese),
  and a percentage as its fraction;
- a date or time written another way counts when each of its numbers was said, a 12-hour
  clock read as a 24-hour one;
- a name in Chinese characters counts when its pinyin was said in Latin letters, and the other
  way round (北京/Beijing, 成都市/Chengdu, 重庆/Chongqing: pypinyin reads whole words);
- a name in a script the conversation does not use at all is taken as a translation (東京 for
  "Tokyo", "Shanghai, China" for "上海"): no literal look-up can judge it, so it is not refused.
  An enum member is a choice, not a name, and gets no such benefit.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

from flowcall.core.messages import Message

# How FlowCall's note about values the model should not have written begins (doc_values.py).
# The note quotes them; it is a Message.note, so they never look said.
DOC_CHECK_PREFIX = "CHECK YOUR CALL: "

_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)*")
_DIGITS_ONLY = re.compile(r"\d+(?:[-/.: ]\d+)+")  # 2026-12-05, 12/05, 10:30
_WORD = re.compile(r"[^\W\d_]{4,}")  # words of 4+ letters: short ones match too much
_LETTERS = re.compile(r"[^\W\d_]+")
_LATIN_WORD = re.compile(r"[a-z]+")
_CJK = re.compile(r"[\u3400-\u9fff]")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}")  # a capitalised Latin word: Shanghai, Tokyo
_CJK_RUN = re.compile(r"[\u3400-\u9fff]{2,}")  # Chinese has no spaces: a run of characters is a phrase
# A time of day said on a 12-hour clock: "晚上6点半", "下午3点一刻", "6:30pm", "7 p.m.", "half past 6"
_CLOCK_ZH = re.compile(r"(下午|晚上|傍晚|夜里|中午)?\s*(\d{1,2})\s*[点點时](半|一刻|三刻|(\d{1,2})分?)?")
_CLOCK_EN = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b", re.IGNORECASE)
_CLOCK_PAST = re.compile(
    r"\b(half|quarter) (past|to) (\d{1,2})\b(?:[^.?!\d]{0,12}\b(evening|afternoon|night|tonight))?",
    re.IGNORECASE,
)
_QUARTERS = {"半": 30, "一刻": 15, "三刻": 45}
_MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = re.compile(r"\b(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?", re.IGNORECASE)
# a day named in words: relative days, weekdays, months, "the 15th", "5号", "in 3 days", "月底"
_DAY_WORDS = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|weekends?|weeks?|months?|years?|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|"
    r"\d{1,2}(?:st|nd|rd|th)|\d+ ?days?|noon|midnight)\b"
    r"|" + _MONTH.pattern[2:-5] + r"\b"
    r"|今天|今日|今晚|明天|明日|明早|明晚|后天|大后天|昨天|前天|[本这下上]周|周[一二三四五六日天末1-7]|星期|礼拜|"
    r"月底|月初|月末|年底|年初|[本这下上]个?月|\d+\s*[日号號]|[\d一二三四五六七八九十两]+\s*(?:天|周|週|个?星期|个?月)[后後内]|"
    r"[早晚]上|上午|下午|中午|傍晚",
    re.IGNORECASE,
)
_WINDOW = 4  # the longest run of Chinese characters read as one name (北京西站, 乌鲁木齐)


def conversation_text(messages: list[Message]) -> str:
    """Everything the model was told or shown, where argument values may come from."""
    return "\n".join(m.content for m in messages if m.content and not m.is_note)


def users_words(messages: list[Message]) -> str:
    """What the user wrote: a flow's system prompt may state today's date, the user did not."""
    return "\n".join(m.content for m in messages if m.from_user and m.content)


def said_in(messages: list[Message]) -> Said:
    return Said(conversation_text(messages), users_words(messages))


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def with_numerals(text: str) -> str:
    """The text with its numbers written as words also written in digits ("three days" ->
    "3 days", "两个人" -> "2个人"). Both libraries leave what they cannot read as it is."""
    from cn2an import transform  # imported here: each loads tables that most runs never need
    from text_to_num import alpha2digit

    forms = [text, _MONTH.sub(lambda m: str(_MONTHS[m.group(1).lower()]), text)]
    try:
        forms.append(alpha2digit(text, "en", threshold=0))
    except Exception:  # a library's edge case must not refuse a call
        pass
    if _CJK.search(text):
        try:
            forms.append(transform(text, "cn2an"))
        except Exception:
            pass
    return "\n".join(dict.fromkeys(forms))


def _clock_parts(text: str) -> set[float]:
    """The hours and minutes of times said on a 12-hour clock, as a 24-hour time writes them:
    "晚上6点半" said is 18 and 30 in "18:30"."""
    parts: set[float] = set()
    for period, hour, after, minute in _CLOCK_ZH.findall(text):
        h = int(hour)
        noon = period == "中午" and h >= 10  # 中午11点 is 11:00, 中午1点 13:00
        parts.add(float(h + 12 if period and h < 12 and not noon else h))
        parts.add(float(_QUARTERS.get(after, int(minute) if minute else 0)))
    for hour, minute, half in _CLOCK_EN.findall(text):
        h = int(hour) % 12 + (12 if half.lower() == "p" else 0)
        parts.update({float(h), float(int(minute) if minute else 0)})
    for amount, way, hour, late in _CLOCK_PAST.findall(text):
        h = int(hour) - (1 if way.lower() == "to" else 0)
        minutes = 30 if amount.lower() == "half" else 15 if way.lower() == "past" else 45
        parts.update({float(h % 24), float(h % 12 + 12 if late else h), float(minutes)})
    return parts


def _pinyin(run: str) -> list[str]:
    from pypinyin import lazy_pinyin  # its dictionaries load on first use

    return lazy_pinyin(run)


class Said:
    """The conversation, prepared once for many look-ups."""

    def __init__(self, text: str, users_words: str | None = None):
        self.text = text
        full = with_numerals(text)
        # the user named a day, so a date in ISO form may be theirs (grounding.closed_choice)
        self.names_a_day = bool(
            _DAY_WORDS.search(with_numerals(users_words if users_words is not None else text))
        )
        self.squashed = _squash(full)
        self.stems = {w[:4] for w in _WORD.findall(full.lower())}
        self.words = set(_LETTERS.findall(full.lower()))
        self.numbers = set()
        for match in _NUMBER.findall(full):
            try:
                self.numbers.add(float(match.replace(",", "")))
            except ValueError:
                continue
        # "2026-11-24" reads as 2026, -11, -24: the parts of a date are counted without sign
        self.parts = {abs(n) for n in self.numbers} | _clock_parts(full)
        self.has_cjk = bool(_CJK.search(text))

    # -- the one question every check asks ------------------------------------------------
    def says(self, value: Any, schema: dict[str, Any] | None = None) -> bool:
        """Does the conversation give this value, in any of the ways above? `schema` is the
        argument's own schema: an enum member is never taken as a translated name."""
        return (
            self.literally(value)
            or self.transliterated(value)
            or (self.in_other_script(value) and not _enum_member(schema or {}, value))
        )

    def literally(self, value: Any) -> bool:
        """Said in the conversation's own script: the loose look-up."""
        if isinstance(value, bool) or isinstance(value, dict):
            return True
        if isinstance(value, (int, float)):
            return any(
                abs(value - n) < 1e-9 or abs(value * 100 - n) < 1e-6 or abs(value / 100 - n) < 1e-9
                for n in self.numbers
            )
        if isinstance(value, str):
            squashed = _squash(value)
            if squashed and squashed in self.squashed:
                return True
            if _DIGITS_ONLY.fullmatch(value.strip()):
                # a date or time written another way ("12月5日" -> "2026-12-05", the year from
                # {{today}}): said when each of its numbers was said
                return all(float(part) in self.parts for part in re.findall(r"\d+", value))
            return any(
                w[:4] in self.stems or self._plural_of_said(w) for w in _WORD.findall(value.lower())
            ) or any(run[:2] in self.squashed for run in _CJK_RUN.findall(value))
        return False

    def as_words(self, value: str) -> bool:
        """Said as whole words, not inside another ("low" is not said by "flowers"): where an
        enum member counts as named, a stem or a substring is not enough."""
        words = _LETTERS.findall(value.lower())
        latin = [w for w in words if not _CJK.search(w)]
        return (
            bool(words)
            and all(w in self.words for w in latin)
            and all(run in self.text for run in _CJK_RUN.findall(value))
        )

    def transliterated(self, value: Any) -> bool:
        """A Chinese name said in pinyin, or a pinyin name said in Chinese characters."""
        if not isinstance(value, str):
            return False
        for run in _CJK_RUN.findall(value):  # 成都市 -> chengdushi, chengdu: either said in Latin letters
            syllables = _pinyin(run)
            if any("".join(syllables[:n]) in self._latin_names for n in range(len(syllables), 1, -1)):
                return True
        latin = _LATIN_WORD.findall(value.lower())
        return any(
            "".join(latin[i:j]) in self._cjk_names
            for i in range(len(latin))
            for j in range(i + 1, min(i + 3, len(latin)) + 1)
            if len("".join(latin[i:j])) >= 4
        )

    def in_other_script(self, value: Any) -> bool:
        """A name written in a script the conversation does not use for it: "Shanghai,China" for
        "上海未来几天天气" (the API wants English names), "東京" for "weather in Tokyo". In Latin
        script only a capitalised word counts as a name: "fahrenheit" for a Chinese request is
        an option the model chose."""
        if not isinstance(value, str):
            return False
        if _CJK.search(value):
            return not self.has_cjk
        return self.has_cjk and bool(_NAME.search(value))

    # -- the indexes the transliteration reads (built on first need) ---------------------
    @cached_property
    def _latin_names(self) -> set[str]:
        """Latin words of the conversation, alone and two or three together ("Xi an", "Hong Kong")."""
        words = _LATIN_WORD.findall(self.text.lower())
        return {
            "".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, min(i + 3, len(words)) + 1)
        }

    @cached_property
    def _cjk_names(self) -> set[str]:
        """The pinyin of every 2-4 character stretch of the conversation's Chinese."""
        names = set()
        for run in _CJK_RUN.findall(self.text):
            syllables = _pinyin(run)
            for i in range(len(syllables)):
                for j in range(i + 2, min(i + _WINDOW, len(syllables)) + 1):
                    names.add("".join(syllables[i:j]))
        return names

    def _plural_of_said(self, word: str) -> bool:
        """ "pods" when the user said "pod", "boxes" for "box": too short for the 4-letter stem."""
        return any(word.endswith(end) and word[: -len(end)] in self.words for end in ("s", "es"))


def _enum_member(schema: dict[str, Any], value: Any) -> bool:
    """The value is one of the schema's (or its items') enum members (a server's schema is
    untrusted: an "enum" that is not a list would match substrings of a string)."""
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    return any(
        isinstance(s.get("enum"), list) and not isinstance(value, (list, dict)) and value in s["enum"]
        for s in (schema, items)
    )
