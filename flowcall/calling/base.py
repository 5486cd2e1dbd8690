"""A calling way: HOW a model is made to call tools (the seeds' four ways).

A way turns the engine's neutral request into the request a provider is actually sent, and
reads tool calls out of what came back. It never runs tools and never talks to the network
itself: the provider does the call.
"""

from __future__ import annotations

from typing import Callable, Protocol

from flowcall.core.messages import ModelRequest, ModelTurn, ToolCall
from flowcall.core.tool_calls import new_call_id, parse_tool_calls
from flowcall.providers.base import Capabilities


class ModelCall(Protocol):
    """Given by the engine: one provider call, recorded as one step. `interpret` turns the raw
    turn into calls before the step is recorded; `note` says which stage or fallback it was."""

    def __call__(
        self,
        way: str,
        sent: ModelRequest,
        interpret: Callable[[ModelTurn], ModelTurn] | None = None,
        note: str | None = None,
    ) -> ModelTurn: ...


class CallingWay(Protocol):
    name: str

    def decide(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        """Get the model's decision (tool calls, or an answer) for the engine's neutral request."""
        ...


class SingleCallWay:
    """A way that needs one model call: prepare the request, call, interpret the reply."""

    name = "single"

    def prepare(self, request: ModelRequest, capabilities: Capabilities) -> ModelRequest:
        raise NotImplementedError

    def interpret(self, turn: ModelTurn, request: ModelRequest) -> ModelTurn:
        raise NotImplementedError

    def decide(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        return call(
            self.name, self.prepare(request, capabilities), lambda turn: self.interpret(turn, request)
        )


def calls_from_text(turn: ModelTurn, request: ModelRequest) -> ModelTurn:
    """Read calls written as text (tags, code blocks, bare JSON) into turn.tool_calls.

    Counts: anything in <tool_call> tags, JSON naming an attached tool, and JSON shaped like
    a call ({"name": ..., "arguments": {...}}) even with a wrong name, so that the model hears
    UNKNOWN_TOOL and can correct itself. A plain JSON document is not a call.
    """
    parsed = parse_tool_calls(turn.content)
    known = {t.name for t in request.tools}
    calls = [
        ToolCall(id=new_call_id(), name=name, arguments=args, raw_arguments=raw)
        for name, args, raw in parsed.calls
        if parsed.found_in == "tag" or name in known or args
    ]
    if not calls and not parsed.errors:
        return turn
    content = turn.content if not calls else None  # the text was the call, not an answer
    return turn.model_copy(
        update={"tool_calls": calls, "content": content, "parse_errors": turn.parse_errors + parsed.errors}
    )


def honour_choice(turn: ModelTurn, request: ModelRequest) -> ModelTurn:
    """Apply tool_choice and parallel_tool_calls after the fact, for models that ignore them."""
    calls = turn.tool_calls
    if request.tool_choice == "none":
        calls = []
    elif request.tool_choice not in ("auto", "required"):
        calls = [c for c in calls if c.name == request.tool_choice]  # a named choice lets no other tool run
    if not request.parallel_tool_calls:
        calls = calls[:1]
    if calls == turn.tool_calls:
        return turn
    return turn.model_copy(update={"tool_calls": calls})


def choice_instruction(request: ModelRequest) -> str | None:
    """Words that ask for the tool_choice a provider cannot enforce natively."""
    choice = request.tool_choice
    if choice == "required":
        return "You must call at least one of the tools; do not answer directly."
    if choice not in ("auto", "none"):
        return f"You must call the tool `{choice}` now; do not answer directly."
    if not request.parallel_tool_calls:
        return "Call at most one tool in this reply."
    return None
