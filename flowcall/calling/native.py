"""`native`: the provider's own function calling (tools + tool_choice on the wire).

Where the provider lacks a tool_choice mode, it is asked for in words and enforced after the
fact. Calls a model wrote as text instead of as a parsed tool call are still read (the
embedded Qwen model likes to put them in a code block).
"""

from __future__ import annotations

from flowcall.calling.base import SingleCallWay, calls_from_text, choice_instruction, honour_choice
from flowcall.core.messages import Message, ModelRequest, ModelTurn
from flowcall.providers.base import Capabilities


def _supports(choice: str, capabilities: Capabilities) -> bool:
    mode = choice if choice in ("auto", "required", "none") else "named"
    return mode in capabilities.tool_choice_modes


def _with_system_note(messages: list[Message], note: str) -> list[Message]:
    if messages and messages[0].role == "system":
        first = messages[0].model_copy(update={"content": f"{messages[0].content or ''}\n\n{note}".strip()})
        return [first, *messages[1:]]
    return [Message(role="system", content=note), *messages]


class NativeWay(SingleCallWay):
    name = "native"

    def prepare(self, request: ModelRequest, capabilities: Capabilities) -> ModelRequest:
        if request.tool_choice == "none" and not _supports("none", capabilities):
            return request.model_copy(update={"tools": [], "tool_choice": "auto"})
        if request.tools and not _supports(str(request.tool_choice), capabilities):
            note = choice_instruction(request)
            update: dict = {"tool_choice": "auto"}
            if request.tool_choice not in ("auto", "required", "none"):
                update["tools"] = [t for t in request.tools if t.name == request.tool_choice]
            if note:
                update["messages"] = _with_system_note(request.messages, note)
            return request.model_copy(update=update)
        return request

    def interpret(self, turn: ModelTurn, request: ModelRequest) -> ModelTurn:
        if not turn.tool_calls and request.tools and request.tool_choice != "none":
            turn = calls_from_text(turn, request)
        return honour_choice(turn, request)
