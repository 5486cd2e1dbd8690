"""Neutral messages, tool calls and model turns.

Every provider converts to and from these types in its own module; the engine and the
store only ever see these.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

Role = Literal["system", "user", "assistant", "tool"]
# Who wrote a message. A note is FlowCall's own words to the model in a user turn ("your call
# could not be read", "these values do not come from what I said"): it is never the user's
# request, and values in it were never said by the user. None: as the role says.
Origin = Literal["user", "note", "tool", "model"]
ToolChoice = Literal["auto", "required", "none"] | str  # or the name of one tool


class ToolCall(BaseModel):
    """One call the model asked for. `arguments` is None when they could not be parsed."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""
    # optional arguments the host removed because the conversation never mentions them
    # (calling/grounding.py); the step shows them next to what ran
    dropped_arguments: dict[str, Any] = Field(default_factory=dict)

    def arguments_json(self) -> str:
        if self.arguments is not None:
            return json.dumps(self.arguments, ensure_ascii=False)
        return self.raw_arguments


class Message(BaseModel):
    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None  # for role == "tool": the call this answers
    name: str | None = None  # for role == "tool": the tool's name
    origin: Origin | None = None  # never sent to a model: providers build their wire messages field by field

    @classmethod
    def note(cls, content: str) -> Message:
        """FlowCall's own words to the model, in a user turn."""
        return cls(role="user", content=content, origin="note")

    @property
    def is_note(self) -> bool:
        return self.origin == "note"

    @property
    def from_user(self) -> bool:
        return self.role == "user" and self.origin in (None, "user")


class ToolSpec(BaseModel):
    """What a model is told about one tool."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    # what the host knows of the tool (its annotations), never sent to a model: False for a
    # tool that may change something, None where nothing is known (a dataset's tool definitions)
    read_only: bool | None = Field(default=None, exclude=True)


class ResponseFormat(BaseModel):
    """Structured output: the answer must be JSON valid against `json_schema`."""

    name: str = "answer"
    json_schema: dict[str, Any]
    strict: bool = True


class ModelRequest(BaseModel):
    """A provider-neutral request. Providers turn it into their wire format."""

    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    response_format: ResponseFormat | None = None
    temperature: float = 0.0
    seed: int | None = 42
    max_tokens: int | None = 1024
    # Scoring instead of generating (providers with Capabilities.scoring): the assistant turn
    # starts with `assistant_prefix`; the turn returns the log-probability of each option's
    # first token there. The schema way decides *whether* to call this way.
    assistant_prefix: str | None = None
    score_options: list[str] | None = None


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0


class GateReading(BaseModel):
    """What the relevance gate made of a request (calling/relevance.py): each scored tool's
    margin, logP(yes) - logP(no) of "can this function handle the request?", and the bar a
    tool's margin must pass to be called. `parts`: the request's parts it was asked about
    one by one (calling/parts.py), where no tool fitted the whole request; `matched`: the tool
    matched to each part (part -> name, in the parts' order), one that only reads as it was
    matched, one that changes something once the gate's question on its part said yes; each
    of them is owed a call."""

    margins: dict[str, float]
    bar: float
    parts: list[str] = Field(default_factory=list)
    matched: dict[str, str] = Field(default_factory=dict)

    @property
    def fits(self) -> list[str]:
        above = [name for name, value in self.margins.items() if value > self.bar]
        return list(dict.fromkeys([*above, *self.matched.values()]))

    def no_fit_reason(self, request: str) -> str:
        """Why no tool was called, in words; the margins are on the gate's steps."""
        shown = request if len(request) <= 80 else request[:79] + "…"
        return f"no tool fits '{shown}'" + (f" or any of its {len(self.parts)} parts" if self.parts else "")


class ModelTurn(BaseModel):
    """What came back from one model call, with everything needed to replay it."""

    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = Field(default_factory=Usage)
    wire_request: dict[str, Any] = Field(default_factory=dict)  # literal request, secrets redacted
    wire_response: dict[str, Any] = Field(default_factory=dict)
    rendered_prompt: str | None = None  # the text a local transformer actually read
    request_id: str | None = None
    latency_ms: float = 0.0
    retries: list[dict[str, Any]] = Field(default_factory=list)  # one entry per failed attempt
    parse_errors: list[str] = Field(default_factory=list)  # calls seen in text but not parsable
    withheld: list[str] = Field(
        default_factory=list
    )  # calls the model made that a check did not let through, and why
    scores: dict[str, float] | None = None  # answers a score_options request
    gate: GateReading | None = None  # a decision after the relevance gate: what it found
    # what a check made of this reply, in words ("checked whether get_weather fits: yes, margin
    # 2.1"): the step's note begins with it, so a gate call says what it was and what it found
    verdict: str | None = None
