"""Starter templates for a new flow. Each starts on settings that work on the built-in model,
and its description says why, in a user's words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What a new decision model starts with. The built-in model is small: held to a format (the
# schema way) it calls tools right far more often; its calls written one by one, each followed
# by a check whether another is needed, give a request with several needs (the weather and the
# time) a call for each, and two rounds leave room to answer after the tools.
DECISION_DEFAULTS: dict[str, Any] = {
    "provider": "local",
    "model": "embedded",
    "calling_way": "schema",
    "temperature": 0.0,
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "max_rounds": 2,
    "retry_budget": 2,
}
POLISH_DEFAULTS: dict[str, Any] = {"provider": "local", "model": "embedded", "temperature": 0.0}

WHY_DEFAULTS = (
    "It starts on settings that suit the built-in model: the decision model answers in a fixed "
    "format (the schema way), makes a call for each thing the question asks (the weather and the "
    "time: two calls) and gets two rounds, one to call tools and one to answer. Change them in the "
    "decision model's settings when you move to a larger model."
)


@dataclass(frozen=True)
class Template:
    key: str
    title: str
    description: str
    tools: list[str] = field(default_factory=list)
    polish: dict[str, Any] | None = None
    decision_prompt: str = ""

    def decision(self) -> dict[str, Any]:
        return {**DECISION_DEFAULTS, "system_prompt": self.decision_prompt}


TEMPLATES = [
    Template(
        key="blank",
        title="Blank canvas",
        description="An empty canvas: add a decision model, the tools it may call and, if you want the "
        "answer rewritten or shaped as JSON, a polish model. " + WHY_DEFAULTS,
    ),
    Template(
        key="lookup",
        title="Look something up",
        description="A decision model with one tool, and a polish model that turns what the tool returned "
        "into a short answer in the user's language. Replace the tool with your own. " + WHY_DEFAULTS,
        tools=["weather/v1/get_weather"],
        polish={
            **POLISH_DEFAULTS,
            "system_prompt": "Answer the question in one or two sentences, in the language of the question, "
            "using only the tool results.",
        },
    ),
    Template(
        key="card",
        title="Structured answer (JSON)",
        description="A decision model with one tool, and a polish model that answers as JSON valid against a "
        "schema you edit, ready for another program to read. " + WHY_DEFAULTS,
        tools=["weather/v1/get_day_weather"],
        polish={
            **POLISH_DEFAULTS,
            "output_schema": {
                "type": "object",
                "additionalProperties": False,
                "required": ["answer"],
                "properties": {"answer": {"type": "string", "description": "The answer, in one sentence."}},
            },
        },
    ),
]
BY_KEY = {t.key: t for t in TEMPLATES}
