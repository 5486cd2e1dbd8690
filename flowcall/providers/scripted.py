"""A deterministic provider: it answers from a script. For tests, benchmarks and replay.

A script item is a ModelTurn, a plain string (a text answer), a list of (name, arguments)
pairs (tool calls), an Exception to raise, or a function of the request returning any of
these. Every request it receives is kept in `requests`, so tests can see what was sent;
`assert_complete()` checks that the run used the whole script. Also exported by flowcall.testing.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from flowcall.errors import ConfigError
from flowcall.messages import ModelRequest, ModelTurn, ToolCall, Usage
from flowcall.providers.base import Capabilities
from flowcall.tool_calls import new_call_id

ScriptItem = ModelTurn | str | list | Exception | Callable[[ModelRequest], Any]

FULL = Capabilities(
    native_tools=True,
    tool_choice_modes=["auto", "required", "none", "named"],
    parallel_tool_calls=True,
    json_schema_output=True,
)


def _turn(item: Any) -> ModelTurn:
    if isinstance(item, ModelTurn):
        return item
    if isinstance(item, str):
        return ModelTurn(content=item, finish_reason="stop")
    if isinstance(item, list):
        calls = []
        for name, args in item:
            if isinstance(args, str):  # raw, possibly broken, argument text
                try:
                    parsed = json.loads(args)
                except json.JSONDecodeError:
                    parsed = None
                calls.append(ToolCall(id=new_call_id(), name=name, arguments=parsed, raw_arguments=args))
            else:
                calls.append(ToolCall(id=new_call_id(), name=name, arguments=args, raw_arguments=json.dumps(args)))
        return ModelTurn(tool_calls=calls, finish_reason="tool_calls")
    raise ConfigError(f"a scripted turn must be a ModelTurn, str or list of calls, got {type(item).__name__}")


class ScriptedProvider:
    name = "scripted"

    def __init__(self, script: list[ScriptItem], *, model: str = "scripted", capabilities: Capabilities = FULL):
        self.script = list(script)
        self.model = model
        self.capabilities = capabilities
        self.requests: list[ModelRequest] = []

    def assert_complete(self) -> None:
        """Every scripted turn was used. A script longer than the run means the run ended
        before the test thought it would, so what the test checks is not what it meant to."""
        if self.script:
            left = len(self.script)
            raise AssertionError(
                f"the scripted provider has {left} unused turn{'s' if left != 1 else ''} "
                f"after {len(self.requests)} request{'s' if len(self.requests) != 1 else ''}; "
                f"the run ended before the script did (next unused: {self.script[0]!r:.120})"
            )

    def complete(self, request: ModelRequest) -> ModelTurn:
        self.requests.append(request)
        if not self.script:
            raise ConfigError("the scripted provider ran out of turns; the script is shorter than the run")
        item = self.script.pop(0)
        if callable(item) and not isinstance(item, (ModelTurn, str, list)):
            item = item(request)
        if isinstance(item, Exception):
            raise item
        turn = _turn(item)
        prompt_chars = sum(len(m.content or "") for m in request.messages)
        return turn.model_copy(
            update={
                "wire_request": request.model_dump(mode="json", exclude_none=True),
                "wire_response": {"scripted": turn.model_dump(mode="json", include={"content", "tool_calls"})},
                "usage": turn.usage if turn.usage.input_tokens else Usage(input_tokens=prompt_chars // 4, output_tokens=len(turn.content or "") // 4),
            }
        )
