"""`router`: intent recognition picks the function; the model only fills (or skips) arguments.

The choice comes first from the flow's rules (a regex on the user's message names a tool),
else from the model choosing among tool names only: by relevance scores where the provider
scores, by a name-only structured reply elsewhere. The arguments are then written under the
chosen tool's schema (the schema way with that tool required).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import regex

from flowcall.calling.base import ModelCall
from flowcall.calling.doc_text import plain
from flowcall.calling.relevance import has_tool_results, last_user_text
from flowcall.calling.schema import SchemaWay, relevant_tools
from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.messages import GateReading, Message, ModelRequest, ModelTurn, ResponseFormat, ToolSpec
from flowcall.providers.base import Capabilities

NONE = "none"
# A flow's pattern is someone else's text, matched against the user's: a pattern that
# backtracks catastrophically, like (a+)+$, must not hold the run. Past this it counts as no match.
RULE_TIMEOUT_S = 0.1


@dataclass(frozen=True)
class Rule:
    pattern: str
    tool: str


def rule_matches(rules: list[Rule], text: str, tools: list[ToolSpec]) -> list[ToolSpec]:
    names = {t.name: t for t in tools}
    chosen = []
    for rule in rules:
        if rule.tool in names and _matches(rule.pattern, text) and names[rule.tool] not in chosen:
            chosen.append(names[rule.tool])
    return chosen


def _matches(pattern: str, text: str) -> bool:
    try:
        return regex.search(pattern, text, regex.IGNORECASE, timeout=RULE_TIMEOUT_S) is not None
    except (TimeoutError, regex.error):  # too slow, or a pattern only Python's re accepts: no match
        return False


def _choose_by_name(request: ModelRequest, call: ModelCall, way: str) -> list[ToolSpec]:
    """The model picks tool names (or none) under a schema that allows nothing else."""
    names = [t.name for t in request.tools]
    listing = "\n".join(f"- {t.name}: {plain(t.description)}" for t in request.tools)
    options = names + ([NONE] if request.tool_choice == "auto" else [])
    item = {"type": "string", "enum": options}
    schema = {
        "type": "object",
        "properties": {
            "tools": {
                "type": "array",
                "items": item,
                "minItems": 1,
                **({} if request.parallel_tool_calls else {"maxItems": 1}),
            }
        },
        "required": ["tools"],
    }
    text = (
        f"Functions:\n{listing}\n\nUser request: {last_user_text(request.messages)}\n\n"
        f'Which functions are needed? Reply {{"tools": [...]}} with names from: {", ".join(options)}.'
    )
    sent = ModelRequest(
        messages=[Message(role="user", content=text)],
        temperature=request.temperature,
        max_tokens=64,
        response_format=ResponseFormat(name="route", json_schema=schema, strict=False),
    )
    turn = call(way, sent, None, "route: choose among tool names")
    try:
        picked = json.loads(turn.content or "{}").get("tools", [])
    except json.JSONDecodeError:
        picked = []
    return [t for t in request.tools if t.name in picked]


class RouterWay:
    name = "router"

    def __init__(self, rules: list[Rule] | None = None, tuning: DecisionTuning | None = None):
        self.rules = list(rules or [])
        self.tuning = tuning or DecisionTuning()
        self.fill = SchemaWay(self.tuning)

    def decide(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        """_route, with what the relevance gate found (if it was asked) kept on the decision."""
        self.gate: GateReading | None = None
        turn = self._route(request, capabilities, call)
        return turn.model_copy(update={"gate": self.gate}) if self.gate else turn

    def _route(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        choice = str(request.tool_choice)
        if choice == "none" or not request.tools or has_tool_results(request.messages):
            return self._fill(
                request.model_copy(update={"tool_choice": "none"}), capabilities, call, "answer"
            )
        if choice not in ("auto", "required"):
            chosen, how = [t for t in request.tools if t.name == choice], "named by tool_choice"
        else:
            chosen, how = rule_matches(self.rules, last_user_text(request.messages), request.tools), "rule"
        if not chosen:
            if capabilities.scoring:
                (chosen, self.gate), how = (
                    relevant_tools(request, self.tuning, call, self.name),
                    "relevance scores",
                )
            else:
                chosen, how = _choose_by_name(request, call, self.name), "model chose by name"
        if not chosen and choice == "required":
            chosen, how = request.tools[:1], "required: first tool"
        if not chosen:
            return self._fill(
                request.model_copy(update={"tool_choice": "none"}), capabilities, call, "answer: no tool fits"
            )
        if not request.parallel_tool_calls:
            chosen = chosen[:1]
        named = choice not in ("auto", "required")
        routed = request.model_copy(update={"tools": chosen, "tool_choice": choice if named else "required"})
        note = f"fill arguments ({how}: {', '.join(t.name for t in chosen)})"
        if capabilities.scoring and routed.parallel_tool_calls and self.tuning.more_calls_margin is not None:

            def noted(way: str, sent: ModelRequest, interpret=None, step: str | None = None) -> ModelTurn:
                return call(self.name, sent, interpret, f"{note}: {step}")

            return self.fill.call_by_call(routed, capabilities, noted)
        return self._fill(routed, capabilities, call, note)

    def _fill(
        self, request: ModelRequest, capabilities: Capabilities, call: ModelCall, note: str
    ) -> ModelTurn:
        sent = self.fill.prepare(request, capabilities)
        return call(self.name, sent, lambda turn: self.fill.read(turn, request, capabilities), note)
