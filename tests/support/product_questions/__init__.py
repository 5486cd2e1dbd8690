"""FlowCall's own question set (questions.jsonl beside this file, written by build.py): requests
for the bundled tools and example flows, each with every call a correct model may write, as
the engine's messages and the attached tools' specs. And what the argument checks refuse of
those correct calls: grounding drops an argument, doc values flags a value.

tests/calling/test_product_questions.py asserts the checks refuse none of them;
benchmarks/false_refusals.py prints how many they refuse, benchmarks/product_calls.py how
often a model makes the right calls.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowcall.calling.doc_values import doc_values, required_doc_values
from flowcall.calling.grounding import ground_calls
from flowcall.core import config
from flowcall.core.messages import Message, ToolCall, ToolSpec
from flowcall.core.spec import load_flow
from flowcall.core.variables import fill_variables
from flowcall.tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[3]
QUESTIONS = Path(__file__).resolve().parent / "questions.jsonl"
FLOWS = ROOT / "flows"
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_PLACEHOLDER = re.compile(r"\{\{(today|tomorrow|today\+\d+|next:[a-z]{3}|date:\d\d-\d\d|month_end)\}\}")


def resolve_dates(value: Any, today: dt.date) -> Any:
    """A correct call's date as the day the check runs makes it (`today` is the day the engine's
    fill_variables fills into the prompts): {{today}}, {{tomorrow}}, {{today+N}}, {{next:mon}}
    (the first such weekday after today), {{date:MM-DD}} (the next such day from today on),
    {{month_end}}."""
    if isinstance(value, dict):
        return {k: resolve_dates(v, today) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_dates(v, today) for v in value]
    if not isinstance(value, str) or "{{" not in value:
        return value

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in ("today", "tomorrow"):
            return (today + dt.timedelta(days=key == "tomorrow")).isoformat()
        if key.startswith("today+"):
            return (today + dt.timedelta(days=int(key[6:]))).isoformat()
        if key.startswith("next:"):
            ahead = (WEEKDAYS.index(key[5:]) - today.weekday() - 1) % 7 + 1
            return (today + dt.timedelta(days=ahead)).isoformat()
        if key.startswith("date:"):
            month, day = map(int, key[5:].split("-"))
            wanted = dt.date(today.year, month, day)
            return (wanted if wanted >= today else dt.date(today.year + 1, month, day)).isoformat()
        return today.replace(day=calendar.monthrange(today.year, today.month)[1]).isoformat()

    return _PLACEHOLDER.sub(one, value)


@dataclass
class Item:
    """One request as the checks see it: the engine's messages, the attached tools' specs."""

    id: str
    lang: str
    half: str
    question: str
    tools: list[ToolSpec]
    messages: list[Message]
    correct: list[list[ToolCall]]  # every correct call list; [] when no tool is needed
    tool_choice: str
    notes: str = ""

    @property
    def needs_tool(self) -> bool:
        return bool(self.correct)


def registry() -> ToolRegistry:
    """The real plugin registry (the repo's plugins/ and FLOWCALL_PLUGIN_DIRS), as the product loads it."""
    return ToolRegistry.from_plugin_dirs(config.plugin_dirs())


def load_raw(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_item(raw: dict[str, Any], tools_of: ToolRegistry, today: dt.date) -> Item:
    """The system prompt (the flow's decision prompt, or the item's own) filled as the engine
    fills it, then the user's message; the tools the flow or item attaches."""
    system, choice = raw.get("system_prompt"), "auto"
    refs = raw.get("tools")
    if raw.get("flow"):
        flow = load_flow(FLOWS / f"{raw['flow']}.json")
        refs, system, choice = flow.tools, flow.decision.system_prompt, flow.tool_choice
    messages = [Message(role="system", content=fill_variables(system))] if system else []
    messages.append(Message(role="user", content=raw["question"]))
    correct = [
        [
            ToolCall(id=f"c{n}", name=c["name"], arguments=resolve_dates(c["arguments"], today))
            for n, c in enumerate(calls)
        ]
        for calls in raw["correct_calls"]
    ]
    return Item(
        id=raw["id"],
        lang=raw["lang"],
        half=raw["half"],
        question=raw["question"],
        tools=[t.spec() for t in tools_of.resolve(refs)],
        messages=messages,
        correct=correct,
        tool_choice=choice,
        notes=raw.get("notes", ""),
    )


def load_items(path: Path = QUESTIONS, today: dt.date | None = None) -> list[Item]:
    tools_of = registry()
    today = today or dt.datetime.now().astimezone().date()  # the day fill_variables uses
    return [build_item(raw, tools_of, today) for raw in load_raw(path)]


# --- the checks -------------------------------------------------------------------------------


def _shape(calls: list[ToolCall]) -> str:
    return json.dumps([[c.name, c.arguments] for c in calls], sort_keys=True, ensure_ascii=False)


def grounding_refusals(item: Item) -> list[dict[str, Any]]:
    """Arguments ground_calls drops from a correct call. `harmful` when what is left is no
    longer a correct call ("all" dropped for "today's weather" leaves the live reading, which
    answers it too; a default dropped changes nothing the tool does)."""
    correct = {_shape(calls) for calls in item.correct}
    by_name = {t.name: t for t in item.tools}
    found = []
    for variant, calls in enumerate(item.correct):
        grounded = ground_calls(calls, item.tools, item.messages)
        harmful = _shape(grounded) not in correct
        for call in grounded:
            properties = by_name[call.name].parameters.get("properties", {})
            for argument, value in call.dropped_arguments.items():
                default = (properties.get(argument) or {}).get("default", ...)
                found.append(
                    {
                        "variant": variant,
                        "tool": call.name,
                        "argument": argument,
                        "value": value,
                        "harmful": harmful and value != default,
                    }
                )
    return found


def doc_value_refusals(item: Item) -> list[dict[str, Any]]:
    """Values of a correct call that doc_values flags (the engine asks the model once more).
    `required`: still the docs' example in a required argument; `not_made`: and tool_choice is
    auto, so the engine drops the call (a flow that names the tool keeps it)."""
    found = []
    for variant, calls in enumerate(item.correct):
        flagged = doc_values(calls, item.tools, item.messages)
        unmade = required_doc_values(flagged, item.tools)
        for f in flagged:
            required = f in unmade
            found.append(
                {
                    "variant": variant,
                    "tool": f.tool,
                    "argument": f.argument,
                    "value": f.value,
                    "why": f.why,
                    "required": required,
                    "not_made": required and item.tool_choice == "auto",
                }
            )
    return found
