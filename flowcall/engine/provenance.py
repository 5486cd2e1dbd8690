"""Where each value of an answer came from: a tool result, the question, or the model alone.

After the polish step every leaf of a JSON answer is looked up in the tool results the run got
(and then in the question); in a text answer, its numbers and quoted names are. A value matches
a tool's value exactly, or normalised: case and punctuation, a number as a percentage (0.7 and
70%) or rounded as the answer writes it (24.6 and 25), a number inside a tool's text ("东北风3级"),
one name inside the other ("成都" and "成都市"), a date or a time inside a tool's timestamp
("23:30" in "2026-11-29T23:30:00+08:00"). It matches "translated" when it is the tool's value in
another language: a weather term or wind direction of AMap's tables (晴 and "Sunny"), or a name
in pinyin (北京市 and "Beijing"). What matches nothing is marked as the model's own: the run shows
exactly what no tool gave.

A string leaf that reads as prose (a summary, an advice) is a "text": the model composed it, and
its own numbers and quoted names are traced as its parts.

The source is judged too, not only the value (green means a tool did it):

- a stand-in: a field whose key names what an offered tool gives (local_time, get_current_time:
  both say "time") but whose value matched only another tool's result (get_weather's reporttime)
  is marked "wrong_source", with a "why" in words;
- a mix: a value taken from the question (the city "Beijing") in an answer whose other values
  come from a call made for something else (get_weather for 上海) is marked "mixed", with why.
Both count as unbacked.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from flowcall.calling.said import Said
from flowcall.core.steps import Step, StepKind
from flowcall.tools.execute import CallOutcome

_NUMBER = re.compile(r"(?<![A-Za-z0-9.])-?\d+(?:\.\d+)?(?![0-9])")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}")
# a date, a time or both, as ISO and most tools write them: "2026-11-29T23:30:00+08:00", "23:30"
_STAMP = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})?(?:(?<=\d)[T ])?(?:(?P<hour>\d{1,2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:\.\d+)?)?)?\s*(?P<zone>Z|[+-]\d{2}:?\d{2})?"
)
# a quoted name: “…”, "…", 「…」, 《…》
_QUOTED = re.compile(r"[“\"「《]([^”\"」》\n]{1,60})[”\"」》]")
_SENTENCE = re.compile(r"[,.;!?，。；！？]\s*\S|\s\S+\s\S+")  # punctuation inside, or three words
_CJK = re.compile(r"[\u3400-\u9fff]")

# AMap's weather phenomena (天气现象表) and wind directions (风向表), each with the English a card
# may write for it (QWeather's English names and the common variants). Matched as whole values,
# the English side in any case: "Light rain" is 小雨, "NE" is 东北 and 东北风.
WEATHER_TERMS: dict[str, tuple[str, ...]] = {
    "晴": ("sunny", "clear", "fine", "fair", "clear sky"),
    "少云": ("few clouds", "mostly sunny", "mostly clear", "partly cloudy"),
    "晴间多云": ("partly cloudy", "partly sunny", "mostly sunny", "sunny intervals"),
    "多云": ("cloudy", "partly cloudy", "mostly cloudy"),
    "阴": ("overcast", "cloudy"),
    "有风": ("windy",),
    "平静": ("calm",),
    "微风": ("light breeze", "breeze", "breezy"),
    "和风": ("moderate breeze", "gentle breeze", "breeze"),
    "清风": ("fresh breeze", "breeze"),
    "强风/劲风": ("strong breeze", "strong wind"),
    "疾风": ("near gale", "high wind"),
    "大风": ("gale", "strong wind", "high wind", "windy"),
    "烈风": ("strong gale", "severe gale"),
    "风暴": ("storm", "windstorm"),
    "狂爆风": ("violent storm",),
    "飓风": ("hurricane",),
    "热带风暴": ("tropical storm",),
    "霾": ("haze", "hazy", "smog"),
    "中度霾": ("moderate haze",),
    "重度霾": ("heavy haze",),
    "严重霾": ("severe haze",),
    "阵雨": ("showers", "shower", "rain showers", "shower rain"),
    "雷阵雨": ("thundershowers", "thundershower", "thunderstorm", "thunderstorms", "thunder showers"),
    "雷阵雨并伴有冰雹": ("thundershower with hail", "thunderstorm with hail"),
    "小雨": ("light rain",),
    "中雨": ("moderate rain", "rain"),
    "大雨": ("heavy rain",),
    "暴雨": ("rainstorm", "torrential rain"),
    "大暴雨": ("heavy rainstorm",),
    "特大暴雨": ("severe rainstorm", "extreme rainstorm"),
    "强阵雨": ("heavy showers", "heavy shower", "heavy shower rain"),
    "强雷阵雨": ("heavy thunderstorm", "heavy thundershowers", "severe thunderstorm"),
    "极端降雨": ("extreme rain",),
    "毛毛雨/细雨": ("drizzle", "light drizzle"),
    "雨": ("rain", "rainy"),
    "小雨-中雨": ("light to moderate rain",),
    "中雨-大雨": ("moderate to heavy rain",),
    "大雨-暴雨": ("heavy rain to rainstorm",),
    "暴雨-大暴雨": ("rainstorm to heavy rainstorm",),
    "大暴雨-特大暴雨": ("heavy to severe rainstorm",),
    "雨雪天气": ("rain and snow",),
    "雨夹雪": ("sleet", "rain and snow"),
    "阵雨夹雪": ("shower rain and snow", "sleet showers"),
    "冻雨": ("freezing rain",),
    "雪": ("snow", "snowy"),
    "阵雪": ("snow showers", "snow flurries", "snow flurry"),
    "小雪": ("light snow",),
    "中雪": ("moderate snow", "snow"),
    "大雪": ("heavy snow",),
    "暴雪": ("snowstorm", "blizzard"),
    "小雪-中雪": ("light to moderate snow",),
    "中雪-大雪": ("moderate to heavy snow",),
    "大雪-暴雪": ("heavy snow to snowstorm",),
    "浮尘": ("dust", "floating dust"),
    "扬沙": ("sand", "blowing sand"),
    "沙尘暴": ("sandstorm", "duststorm", "dust storm"),
    "强沙尘暴": ("severe sandstorm", "severe duststorm"),
    "龙卷风": ("tornado",),
    "雾": ("fog", "foggy"),
    "浓雾": ("dense fog", "thick fog"),
    "强浓雾": ("strong fog",),
    "轻雾": ("mist", "light fog"),
    "大雾": ("heavy fog",),
    "特强浓雾": ("extra heavy fog",),
    "热": ("hot",),
    "冷": ("cold",),
    "未知": ("unknown",),
}
WIND_DIRECTIONS: dict[str, tuple[str, ...]] = {
    "东北": ("northeast", "north-east", "ne", "northeasterly"),
    "东": ("east", "e", "easterly"),
    "东南": ("southeast", "south-east", "se", "southeasterly"),
    "南": ("south", "s", "southerly"),
    "西南": ("southwest", "south-west", "sw", "southwesterly"),
    "西": ("west", "w", "westerly"),
    "西北": ("northwest", "north-west", "nw", "northwesterly"),
    "北": ("north", "n", "northerly"),
    "旋转不定": ("variable", "variable direction"),
    "无风向": ("no wind direction", "no direction"),
}

# Words that say nothing of what a key holds or a tool gives: a key "meets" a tool when they
# share a word that remains ("local_time" and "get_current_time" share "time").
_GENERIC = frozenset(
    "get set list create add current info information data value the a an of for by to in on at and or is "
    "are fetch query search find lookup look update delete remove make new my all api tool result "
    "detail".split()
)
# Keys that hold a place: "city" in an answer and "location" in a call hold the same kind of value.
_PLACE_WORDS = frozenset("city location place town region province country area district address".split())
# What a mix is judged on: places and names (a unit or a mode the question chose is neither).
_NAMED = frozenset({"place", "name"})


@dataclass(frozen=True)
class _Leaf:
    tool: str
    call_id: str
    path: str
    value: Any


def _pointer(path: list[str | int]) -> str:
    return "".join(f"/{str(p).replace('~', '~0').replace('/', '~1')}" for p in path)


def _leaves(value: Any, path: list[str | int] | None = None) -> Iterator[tuple[str, Any]]:
    path = path or []
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, [*path, key])
    elif isinstance(value, list):
        for n, inner in enumerate(value):
            yield from _leaves(inner, [*path, n])
    elif value is not None:
        yield _pointer(path), value


def _result(outcome: CallOutcome) -> Any:
    """A call's result, one given as JSON text parsed."""
    result = outcome.result
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            pass
    return result


def _tool_leaves(done: list[CallOutcome]) -> list[_Leaf]:
    """Every value of every successful tool result (a result given as JSON text, parsed)."""
    leaves = []
    for outcome in done:
        if outcome.error_code is None:
            call = outcome.call
            leaves += [_Leaf(call.name, call.id, path, value) for path, value in _leaves(_result(outcome))]
    return leaves


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip().rstrip("%℃°CF ").strip()
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _decimals(number: float) -> int:
    text = repr(number)
    return 0 if number == int(number) else len(text.split(".")[1]) if "." in text else 0


def _number_match(wanted: float, leaf: Any) -> str | None:
    """How a tool's value gives the number `wanted`: "exact", "normalised", or None."""
    candidates: list[tuple[float, bool]] = []
    own = _as_number(leaf)
    if own is not None:
        candidates.append((own, True))
    if isinstance(leaf, str):  # numbers inside a tool's text: "东北风 3级", "rain 70%"
        candidates += [(float(n), False) for n in _NUMBER.findall(leaf)]
    for got, whole in candidates:
        if wanted == got:
            return "exact" if whole and not isinstance(leaf, str) else "normalised"
        for form in (got * 100, got / 100):
            if abs(wanted - form) < 1e-9:
                return "normalised"
        if round(got, _decimals(wanted)) == wanted or round(got * 100, _decimals(wanted)) == wanted:
            return "normalised"
    return None


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _stamp(text: str) -> dict[str, Any] | None:
    """The date, hour, minute, second and zone a timestamp writes (None for what it leaves out)."""
    found = _STAMP.fullmatch(text.strip())
    if found is None or not (found["date"] or found["hour"]):
        return None
    parts: dict[str, Any] = found.groupdict()
    parts["hour"] = int(parts["hour"]) if parts["hour"] else None  # 9:05 is 09:05
    return parts


def _inside_stamp(wanted: str, leaf: str) -> bool:
    """The date or time `wanted` is part of the tool's timestamp: "23:30" and "2026-11-29" in
    "2026-11-29T23:30:00+08:00", "23:30" in "23:30:00"; "23:31" is not, nor "12:00" in a date."""
    want, got = _stamp(wanted), _stamp(leaf)
    return bool(want and got and all(part == got[name] for name, part in want.items() if part is not None))


def _is_name(value: Any) -> bool:
    """A short name, such as a place's: two letters or more, no digit, not a sentence."""
    return (
        isinstance(value, str)
        and 0 < len(value.strip()) <= 40
        and not re.search(r"\d|[.!?。！？]", value)
        and len(value.split()) <= 4
        and bool(re.search(r"[^\W\d_]{2}", value))
    )


def _term_index() -> dict[str, frozenset[str]]:
    """Each way of writing a term, squashed, to the terms (the tables' Chinese) it may be; a wind
    direction also with 风 or "wind" after it (东北风, "NE wind")."""
    index: dict[str, set[str]] = {}
    for term, english in WEATHER_TERMS.items():
        for form in (term, *term.split("/"), *english):
            index.setdefault(_squash(form), set()).add(term)
    for term, english in WIND_DIRECTIONS.items():
        for form in (term, *english):
            for written in (form, form + ("风" if _CJK.search(form) else " wind")):
                index.setdefault(_squash(written), set()).add(term)
    return {form: frozenset(terms) for form, terms in index.items()}


_TERMS = _term_index()


def _translated(wanted: str, leaf: str) -> bool:
    """One is the other in another language: a weather term or wind direction (晴 and "Sunny"),
    or a name in pinyin (北京市 and "Beijing", as the question's check reads them: said.py)."""
    if bool(_CJK.search(wanted)) == bool(_CJK.search(leaf)):
        return False
    if _TERMS.get(_squash(wanted), frozenset()) & _TERMS.get(_squash(leaf), frozenset()):
        return True
    return _is_name(wanted) and _is_name(leaf) and _transliterated(wanted, leaf)


@lru_cache(maxsize=4096)
def _transliterated(one: str, other: str) -> bool:
    return Said(other).transliterated(one) or Said(one).transliterated(other)


def _string_match(wanted: str, leaf: Any) -> str | None:
    if not isinstance(leaf, str):
        return None
    if wanted == leaf:
        return "exact"
    a, b = _squash(wanted), _squash(leaf)
    if (a and a == b) or _inside_stamp(wanted, leaf):
        return "normalised"
    # one name inside the other ("成都" and "成都市"); a sentence is never one name, what one adds
    # to the other holds no digit ("2026-11-28 12:00" is not the date "2026-11-28"), and Latin
    # words are whole words ("NE" is not inside "offline-sample")
    short, long = sorted((a, b), key=len)
    if (
        not _SENTENCE.search(wanted)
        and len(short) >= 2
        and short in long
        and not any(ch.isdigit() for ch in long.replace(short, "", 1))
        and _whole_words(wanted, leaf)
    ):
        return "normalised"
    return "translated" if _translated(wanted, leaf) else None


def _whole_words(one: str, other: str) -> bool:
    """The shorter one's Latin words stand as whole words in the longer one ("Chengdu" in
    "Chengdu City", not "ne" in "offline"); Chinese, written without spaces, always does."""
    short, long = sorted((one.lower(), other.lower()), key=lambda text: len(_squash(text)))
    words = re.findall(r"[a-z0-9]+", short)
    if not words:
        return True
    return (
        re.search(r"(?<![a-z0-9])" + r"[\W_]*".join(map(re.escape, words)) + r"(?![a-z0-9])", long)
        is not None
    )


def _find(value: Any, key: str | None, leaves: list[_Leaf]) -> tuple[_Leaf, str] | None:
    """The tool value that gives `value`: one under the same key first, exact before normalised."""
    found: list[tuple[int, _Leaf, str]] = []
    for leaf in leaves:
        if isinstance(value, bool):
            match = "same yes/no" if isinstance(leaf.value, bool) and leaf.value == value else None
        elif _as_number(value) is not None and not (
            isinstance(value, str) and _DATE.fullmatch(value.strip())
        ):
            match = _number_match(_as_number(value), leaf.value)
            if match is None and isinstance(value, str):
                match = _string_match(value, leaf.value)
        elif isinstance(value, str):
            match = _string_match(value, leaf.value)
        else:
            match = None
        if match:
            same_key = key is not None and leaf.path.rsplit("/", 1)[-1] == key
            found.append(((0 if same_key else 2) + (0 if match == "exact" else 1), leaf, match))
    if not found:
        return None
    _, leaf, match = min(found, key=lambda item: item[0])
    return leaf, match


def _entry(
    path: str,
    value: Any,
    leaves: list[_Leaf],
    question: Said | None,
    steps: dict[str, int],
    key: str | None = None,
    designated: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Where one value came from; a match in a `designated` tool's result (one that gives what the
    key names) is preferred to any other."""
    theirs = [leaf for leaf in leaves if leaf.tool in designated]
    hit = (_find(value, key, theirs) if theirs else None) or _find(value, key, leaves)
    if hit is not None:
        leaf, match = hit
        return {
            "path": path,
            "value": value,
            "source": "tool",
            "tool": leaf.tool,
            "tool_call_id": leaf.call_id,
            "step_seq": steps.get(leaf.call_id),
            "result_path": leaf.path,
            "match": match,
        }
    if question is not None and not isinstance(value, bool) and question.literally(value):
        return {"path": path, "value": value, "source": "question"}
    return {"path": path, "value": value, "source": "model"}


def _parts(
    text: str, leaves: list[_Leaf], question: Said, steps: dict[str, int], path: str
) -> list[dict[str, Any]]:
    """The numbers, dates and quoted names of a text, each traced; spans are character offsets."""
    parts, taken = [], []
    for pattern in (_DATE, _QUOTED, _NUMBER):
        for match in pattern.finditer(text):
            group = 1 if pattern is _QUOTED else 0
            start, end = match.span(group)
            if any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            raw = match.group(group)
            value: Any = (
                raw if pattern is not _NUMBER else (int(raw) if re.fullmatch(r"-?\d+", raw) else float(raw))
            )
            parts.append({**_entry(path, value, leaves, question, steps), "span": [start, end]})
    return sorted(parts, key=lambda p: p["span"][0])


# --- the source judged: a stand-in from the wrong tool, a value mixed from two sources ----------


def _words(name: str) -> frozenset[str]:
    """The content words of a key or a tool's name: split on _ and camelCase, a plural's s
    dropped, generic words (get, current, info...) left out."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).lower()
    words = {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in re.split(r"[^a-z0-9]+", spaced)
    }
    return frozenset(w for w in words if w and not w.isdigit() and w not in _GENERIC)


def _kind(key: str | None) -> frozenset[str]:
    """What a key holds, as words: keys that share one hold the same kind of value (every place
    word counts as "place": "city" and "location")."""
    return frozenset("place" if w in _PLACE_WORDS else w for w in _words(key or ""))


def _key_of(path: str) -> str | None:
    """The key a value sits under: its pointer's last name that is not a list index."""
    names = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:] if not p.isdigit()]
    return names[-1] if names else None


def _designated(path: str, offered: list[str]) -> tuple[str, ...]:
    """The offered tools whose name meets the value's key: the ones that give what it names."""
    words = _words(_key_of(path) or "")
    return tuple(name for name in offered if words & _words(name)) if words else ()


def _stand_in(entry: dict[str, Any], designated: tuple[str, ...], done: list[CallOutcome]) -> dict[str, Any]:
    """A value traced to a tool other than the one that gives it: the source is wrong."""
    gave = {outcome.call.name for outcome in done if outcome.error_code is None}
    field = entry["result_path"].rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~") or "result"
    how = "its result says otherwise" if gave & set(designated) else "gave no result in this run"
    why = (
        f"{_key_of(entry['path'])} came from {entry['tool']}'s {field}; "
        f"{' or '.join(designated)} gives it and {how}"
    )
    return {**entry, "source": "wrong_source", "why": why}


def _json_entry(
    path: str,
    value: Any,
    leaves: list[_Leaf],
    said: Said,
    step_of: dict[str, int],
    done: list[CallOutcome],
    offered: list[str],
) -> dict[str, Any]:
    key = path.rsplit("/", 1)[-1] or None
    sentence = isinstance(value, str) and bool(_SENTENCE.search(value))
    designated = _designated(path, offered)
    entry = _entry(path, value, leaves, None if sentence else said, step_of, key, designated)
    if sentence and entry["source"] == "model":  # the model's own wording: its numbers and names traced
        return {**entry, "kind": "text", "parts": _parts(value, leaves, said, step_of, path)}
    if designated and entry["source"] == "tool" and entry["tool"] not in designated:
        return _stand_in(entry, designated, done)
    return entry


def _call_names(outcome: CallOutcome) -> list[tuple[str | None, str]]:
    """(key, value) of each name in a call's arguments, then in its result."""
    pairs = [*_leaves(outcome.call.arguments or {}), *_leaves(_result(outcome))]
    return [(_key_of(path), value) for path, value in pairs if _is_name(value)]


def _mixed(entry: dict[str, Any], calls: list[CallOutcome], backs: dict[str, list[str]]) -> dict[str, Any]:
    """A name from the question, while the calls behind the other values were made for another
    (a card for Beijing with 上海's weather). Not when any of them names the same (北京, 北京市)."""
    key = _key_of(entry["path"])
    kind, elsewhere = _kind(key) & _NAMED, []
    for outcome in calls if kind else []:
        names = [value for name, value in _call_names(outcome) if _kind(name) & kind]
        if any(_string_match(entry["value"], value) for value in names):
            return entry
        elsewhere += [(outcome, names[0])] if names else []
    if not elsewhere:
        return entry
    outcome, other = elsewhere[0]
    fields = list(dict.fromkeys(backs[outcome.call.id]))
    shown = fields[:3] + ([f"{len(fields) - 3} more"] if len(fields) > 3 else [])
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    why = (
        f"the {key} is {entry['value']} as the question says, but {listed} "
        f"come{'s' if len(fields) == 1 else ''} from {outcome.call.name} for {other}"
    )
    return {**entry, "mixed": why}


def _mark_mixed(entries: list[dict[str, Any]], done: list[CallOutcome]) -> list[dict[str, Any]]:
    """Each name taken from the question checked against the calls that back the other values."""
    backs: dict[str, list[str]] = {}
    for entry in entries:
        for value in flat_values([entry]):
            if value.get("source") == "tool":
                backs.setdefault(value["tool_call_id"], []).append(_key_of(entry["path"]) or entry["path"])
    calls = [outcome for outcome in done if outcome.error_code is None and outcome.call.id in backs]
    return [
        _mixed(entry, calls, backs) if entry["source"] == "question" and _is_name(entry["value"]) else entry
        for entry in entries
    ]


def trace(
    answer: Any,
    done: list[CallOutcome],
    question: str,
    steps: list[Step] | None = None,
    offered: list[str] | None = None,
) -> list[dict[str, Any]] | None:
    """The provenance of every value of `answer` (see the module doc), or None for no answer.
    `offered`: the names of the tools the flow offered; without it no value is judged a stand-in."""
    if answer is None or answer == "":
        return None
    offered = [name.rsplit("/", 1)[-1] for name in offered or []]  # "weather/v1/get_weather" is get_weather
    leaves = _tool_leaves(done)
    said = Said(question)
    step_of = {
        s.tool_call_id: s.seq
        for s in steps or []
        if s.kind == StepKind.TOOL_CALL and s.tool_call_id and not s.error_code
    }
    if isinstance(answer, str):
        return _parts(answer, leaves, said, step_of, "")
    entries = [
        _json_entry(path, value, leaves, said, step_of, done, offered) for path, value in _leaves(answer)
    ]
    return _mark_mixed(entries, done)


def flat_values(provenance: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The values an answer's provenance counts: a text's parts in place of the text (the
    model's own wording), every other entry itself."""
    return [
        part
        for entry in provenance or []
        for part in (entry.get("parts", []) if entry.get("kind") == "text" else [entry])
    ]


def _backed(value: dict[str, Any]) -> bool:
    """Traced to a tool or the question, and neither a stand-in nor mixed from two sources."""
    return value.get("source") in ("tool", "question") and not value.get("mixed")


def traced_share(provenance: list[dict[str, Any]] | None) -> tuple[int, int]:
    """(values traced to a tool or the question, values in all): a text's parts count, the text
    itself (the model's own wording) does not; a stand-in or a mixed value is not traced."""
    values = flat_values(provenance)
    return sum(_backed(v) for v in values), len(values)


def unbacked_value(entry: dict[str, Any]) -> bool:
    """A value no tool result or the question gave (for a text, one of its numbers or names), or
    one a tool gave in place of the tool that gives it, or one mixed from two sources, or one that
    says an action was done which no tool did (`claim`, claims.mark_claims)."""
    if entry.get("claim"):
        return True
    if entry.get("kind") == "text":
        return any(not _backed(part) for part in entry.get("parts", []))
    return not _backed(entry)
