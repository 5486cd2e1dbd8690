"""`prompt`: the tool list is written into the system prompt and calls are parsed from text.

Works with any chat model, function calling or not. The history is rewritten to plain text
as well (calls as <tool_call> tags, results as <tool_response>), so the provider is never
sent a tools field or a tool role it might not know.
"""

from __future__ import annotations

import json

from flowcall.calling.base import SingleCallWay, calls_from_text, choice_instruction, honour_choice
from flowcall.calling.doc_text import plain, plain_schema
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ToolSpec
from flowcall.providers.base import Capabilities

INSTRUCTIONS = (
    "You can call tools. The tools are listed in <tools></tools> as JSON:\n"
    "<tools>\n{tools}\n</tools>\n\n"
    "To call a tool, reply with nothing but one <tool_call></tool_call> block per call, each holding a JSON "
    "object with the tool's name and its arguments:\n"
    "<tool_call>\n"
    '{{"name": "<tool name>", "arguments": {{"<parameter>": "<value>"}}}}\n'
    "</tool_call>\n"
    "Use only parameters the tool declares and give every required one. If no tool fits the request, or the "
    "tool results already answer it, answer in plain text without any <tool_call> block."
)


def render_tools(tools: list[ToolSpec]) -> str:
    return "\n".join(
        json.dumps(
            {"name": t.name, "description": plain(t.description), "parameters": plain_schema(t.parameters)},
            ensure_ascii=False,
        )
        for t in tools
    )


def as_text(message: Message) -> Message:
    """A message of the history as plain text, for models that are not sent tools."""
    if message.role == "assistant" and message.tool_calls:
        blocks = [
            "<tool_call>\n"
            + json.dumps(
                {"name": c.name, "arguments": c.arguments if c.arguments is not None else c.raw_arguments},
                ensure_ascii=False,
            )
            + "\n</tool_call>"
            for c in message.tool_calls
        ]
        return Message(role="assistant", content="\n".join(filter(None, [message.content, *blocks])))
    if message.role == "tool":
        return Message(
            role="user",
            content=f'<tool_response name="{message.name}">\n{message.content}\n</tool_response>',
            origin="tool",
        )
    return message


class PromptWay(SingleCallWay):
    name = "prompt"

    def prepare(self, request: ModelRequest, capabilities: Capabilities) -> ModelRequest:
        messages = [as_text(m) for m in request.messages]
        if request.tools and request.tool_choice != "none":
            tools = request.tools
            if request.tool_choice not in ("auto", "required"):
                tools = [t for t in tools if t.name == request.tool_choice]
            text = INSTRUCTIONS.format(tools=render_tools(tools))
            note = choice_instruction(request)
            if note:
                text += "\n" + note
            if messages and messages[0].role == "system":
                messages[0] = Message(role="system", content=f"{messages[0].content}\n\n{text}")
            else:
                messages.insert(0, Message(role="system", content=text))
        return request.model_copy(update={"messages": messages, "tools": [], "tool_choice": "auto"})

    def interpret(self, turn: ModelTurn, request: ModelRequest) -> ModelTurn:
        if request.tools and request.tool_choice != "none":
            turn = calls_from_text(turn, request)
        return honour_choice(turn, request)
