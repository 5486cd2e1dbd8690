"""Where each value of an answer came from: a tool result, the question, or the model alone.

After the polish step every leaf of a JSON answer is looked up in the tool results the run got
(and then in the question); in a text answer, its numbers and quoted names are. A value matches
a tool's value exactly, or normalised: case and punctuation, a number as a percentage (0.7 and
70%) or rounded as the answer writes it (24.6 and 25), a number inside a tool's text ("东北风3级"),
one name inside the other ("成都" and "成都市"). What matches nothing is marked as the model's own:
the run shows exactly what no tool gave.

A string leaf that reads as prose (a summary, an advice) is a "text": the model composed it, and
its own numbers and quoted names are traced as its parts.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Iterator

from flowcall.calling.said import Said
from flowcall.steps import Step, StepKind
from flowcall.tools.execute import CallOutcome

_NUMBER = re.compile(r"(?<![A-Za-z0-9.])-?\d+(?:\.\d+)?(?![0-9])")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}")
# a quoted name: “…”, "…", 「…」, 《…》
_QUOTED = re.compile(r"[“\"「《]([^”\"」》\n]{1,60})[”\"」》]")
_SENTENCE = re.compile(r"[,.;!?，。；！？]\s*\S|\s\S+\s\S+")  # punctuation inside, or three words


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


def _tool_leaves(done: list[CallOutcome]) -> list[_Leaf]:
    """Every value of every successful tool result (a result given as JSON text, parsed)."""
    leaves = []
    for outcome in done:
        if outcome.error_code is not None:
            continue
        result = outcome.result
        if isinstance(result, str):
            try:
                result = json.loads(result)
            except ValueError:
                pass
        leaves += [_Leaf(outcome.call.name, outcome.call.id, path, value) for path, value in _leaves(result)]
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


def _string_match(wanted: str, leaf: Any) -> str | None:
    if not isinstance(leaf, str):
        return None
    if wanted == leaf:
        return "exact"
    a, b = _squash(wanted), _squash(leaf)
    if a and a == b:
        return "normalised"
    # one name inside the other ("成都" and "成都市"); a sentence is never one name, and what
    # one adds to the other holds no digit ("2026-11-28 12:00" is not the date "2026-11-28")
    short, long = sorted((a, b), key=len)
    if (not _SENTENCE.search(wanted) and len(short) >= 2 and short in long
            and not any(ch.isdigit() for ch in long.replace(short, "", 1))):
        return "normalised"
    return None


def _find(value: Any, key: str | None, leaves: list[_Leaf]) -> tuple[_Leaf, str] | None:
    """The tool value that gives `value`: one under the same key first, exact before normalised."""
    found: list[tuple[int, _Leaf, str]] = []
    for leaf in leaves:
        if isinstance(value, bool):
            match = "same yes/no" if isinstance(leaf.value, bool) and leaf.value == value else None
        elif _as_number(value) is not None and not (isinstance(value, str) and _DATE.fullmatch(value.strip())):
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


def _entry(path: str, value: Any, leaves: list[_Leaf], question: Said | None, steps: dict[str, int],
           key: str | None = None) -> dict[str, Any]:
    hit = _find(value, key, leaves)
    if hit is not None:
        leaf, match = hit
        return {"path": path, "value": value, "source": "tool", "tool": leaf.tool, "tool_call_id": leaf.call_id,
                "step_seq": steps.get(leaf.call_id), "result_path": leaf.path, "match": match}
    if question is not None and not isinstance(value, bool) and question.literally(value):
        return {"path": path, "value": value, "source": "question"}
    return {"path": path, "value": value, "source": "model"}


def _parts(text: str, leaves: list[_Leaf], question: Said, steps: dict[str, int], path: str) -> list[dict[str, Any]]:
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
            value: Any = raw if pattern is not _NUMBER else (int(raw) if re.fullmatch(r"-?\d+", raw) else float(raw))
            parts.append({**_entry(path, value, leaves, question, steps), "span": [start, end]})
    return sorted(parts, key=lambda p: p["span"][0])


def trace(answer: Any, done: list[CallOutcome], question: str, steps: list[Step] | None = None) -> list[dict[str, Any]] | None:
    """The provenance of every value of `answer` (see the module doc), or None for no answer."""
    if answer is None or answer == "":
        return None
    leaves = _tool_leaves(done)
    said = Said(question)
    step_of = {s.tool_call_id: s.seq for s in steps or [] if s.kind == StepKind.TOOL_CALL and s.tool_call_id
               and not s.error_code}
    if isinstance(answer, str):
        return _parts(answer, leaves, said, step_of, "")
    entries = []
    for path, value in _leaves(answer):
        key = path.rsplit("/", 1)[-1] or None
        sentence = isinstance(value, str) and bool(_SENTENCE.search(value))
        entry = _entry(path, value, leaves, None if sentence else said, step_of, key)
        if sentence and entry["source"] == "model":  # the model's own wording: its numbers and names traced
            entry = {**entry, "kind": "text", "parts": _parts(value, leaves, said, step_of, path)}
        entries.append(entry)
    return entries


def traced_share(provenance: list[dict[str, Any]] | None) -> tuple[int, int]:
    """(values traced to a tool or the question, values in all): a text's parts count, the text
    itself (the model's own wording) does not."""
    values = [part for entry in provenance or [] for part in (entry.get("parts", []) if entry.get("kind") == "text"
                                                               else [entry])]
    return sum(v["source"] != "model" for v in values), len(values)


def unbacked_value(entry: dict[str, Any]) -> bool:
    """A value no tool result or the question gave (for a text, one of its numbers or names)."""
    if entry.get("kind") == "text":
        return any(part.get("source") == "model" for part in entry.get("parts", []))
    return entry.get("source") not in ("tool", "question")
