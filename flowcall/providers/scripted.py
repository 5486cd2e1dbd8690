"""Deterministic providers, for tests, benchmarks, replay and flows that run without a model.

`ScriptedProvider` answers from a script. A script item is a ModelTurn, a plain string (a text
answer), a list of (name, arguments) pairs (tool calls), an Exception to raise, or a function of
the request returning any of these. Every request it receives is kept in `requests`, so tests
can see what was sent; `assert_complete()` checks that the run used the whole script.

`SchemaDrivenProvider` is a model that is a pure function of the request it receives. It calls
each offered tool once, with arguments made from the tool's JSON Schema, then answers with the
tool results it saw. A flow names it as `{"provider": "scripted", "model": "schema"}`.

Both are also exported by flowcall.testing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.errors import ConfigError
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ToolCall, ToolSpec, Usage
from flowcall.core.schema_example import example_for
from flowcall.core.spec import ModelConfig
from flowcall.core.tool_calls import new_call_id
from flowcall.providers.base import Capabilities, ProviderInfo

SCHEMA_MODEL = "schema"  # the one model of provider "scripted" that a flow can name

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
                calls.append(
                    ToolCall(id=new_call_id(), name=name, arguments=args, raw_arguments=json.dumps(args))
                )
        return ModelTurn(tool_calls=calls, finish_reason="tool_calls")
    raise ConfigError(f"a scripted turn must be a ModelTurn, str or list of calls, got {type(item).__name__}")


class ScriptedProvider:
    name = "scripted"

    def __init__(
        self,
        script: list[ScriptItem],
        *,
        model: str = "scripted",
        capabilities: Capabilities = FULL,
        tuning: DecisionTuning | None = None,
    ):
        self.script = list(script)
        self.model = model
        self.capabilities = capabilities
        self.tuning = tuning or DecisionTuning()  # the margins a test sets, as an embedded model has its own
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
                "wire_response": {
                    "scripted": turn.model_dump(mode="json", include={"content", "tool_calls"})
                },
                "usage": turn.usage
                if turn.usage.input_tokens
                else Usage(input_tokens=prompt_chars // 4, output_tokens=len(turn.content or "") // 4),
            }
        )


class SchemaDrivenProvider:
    """A deterministic model: a pure function of the request (nothing it answers depends on
    earlier requests), so a run that is resumed elsewhere ends as an uninterrupted one does.

    With tools offered (and tool_choice not "none"), it calls each one that has no result yet
    in the conversation: one per turn, or all at once when parallel calls are allowed; a named
    tool_choice calls only that tool. Then it answers "Results: name -> result; ...". Asked for
    a response_format, it answers JSON made by `example_for` from its schema.

    Harmless by construction: it reads no file and reaches nothing, so a shared flow may use it.
    """

    name = "scripted"

    def __init__(self, model: str = SCHEMA_MODEL, *, capabilities: Capabilities = FULL):
        self.model = model
        self.capabilities = capabilities
        self.requests: list[ModelRequest] = []  # for tests to look at; answers never read it

    def complete(self, request: ModelRequest) -> ModelTurn:
        self.requests.append(request)
        turn = answer(request)
        prompt_chars = sum(len(m.content or "") for m in request.messages)
        return turn.model_copy(
            update={
                "wire_request": request.model_dump(mode="json", exclude_none=True),
                "wire_response": {
                    "schema_driven": turn.model_dump(mode="json", include={"content", "tool_calls"})
                },
                "usage": Usage(input_tokens=prompt_chars // 4, output_tokens=len(turn.content or "") // 4),
            }
        )


def answer(request: ModelRequest) -> ModelTurn:
    """What SchemaDrivenProvider answers to `request` (without wire details and usage)."""
    if request.response_format is not None:
        value = example_for(request.response_format.json_schema)
        return ModelTurn(content=json.dumps(value, ensure_ascii=False), finish_reason="stop")
    due = tools_to_call(request)
    if due:
        calls = [_call(request, tool) for tool in (due if request.parallel_tool_calls else due[:1])]
        return ModelTurn(tool_calls=calls, finish_reason="tool_calls")
    return ModelTurn(content=summary(request.messages), finish_reason="stop")


def tools_to_call(request: ModelRequest) -> list[ToolSpec]:
    """The offered tools (only the named one, for a named tool_choice) without a result yet."""
    if request.tool_choice == "none" or not request.tools:
        return []
    answered = {m.name for m in request.messages if m.role == "tool"}
    offered = [
        t
        for t in request.tools
        if request.tool_choice in ("auto", "required") or t.name == request.tool_choice
    ]
    return [t for t in offered if t.name not in answered]


def _call(request: ModelRequest, tool: ToolSpec) -> ToolCall:
    arguments = example_for(tool.parameters)
    if not isinstance(arguments, dict):
        arguments = {}
    # the id, too, is a function of the request: the conversation so far and the tool
    seen = json.dumps(
        [m.model_dump(mode="json") for m in request.messages], sort_keys=True, ensure_ascii=False
    )
    digest = hashlib.sha256(f"{seen}\n{tool.name}".encode()).hexdigest()[:16]
    return ToolCall(
        id=f"call_{digest}",
        name=tool.name,
        arguments=arguments,
        raw_arguments=json.dumps(arguments, ensure_ascii=False),
    )


def summary(messages: list[Message]) -> str:
    """The text answer: every tool result in the conversation, in order; without any (a polish
    request, or no tools), the last user message, which then holds the results."""
    results = [f"{m.name} -> {m.content}" for m in messages if m.role == "tool"]
    if results:
        return "Results: " + "; ".join(results)
    last = next((m.content for m in reversed(messages) if m.role == "user" and m.content), "")
    return f"No tool results. Last message: {last}"


def build(config: ModelConfig) -> SchemaDrivenProvider:
    """Safe in a shared flow file: this model is a pure function of the request; it reads no file,
    holds no key and reaches nothing (base_url, if any, is ignored). It lets the CLI, tests and
    benchmarks run a flow without the embedded model."""
    if config.model != SCHEMA_MODEL:
        raise ConfigError(
            f"provider 'scripted' has no model '{config.model}'; its one model is '{SCHEMA_MODEL}' "
            "(a deterministic stand-in that calls each tool with arguments made from its schema)"
        )
    return SchemaDrivenProvider(SCHEMA_MODEL)


INFO = ProviderInfo(
    name="scripted",
    label="Scripted stand-in",
    hosted=False,
    factory=build,
    description="a deterministic stand-in that calls each tool with arguments made from its schema",
    suggested_models=(SCHEMA_MODEL,),
    listed=False,  # for tests and benchmarks: not offered in the studio
)
INFOS = (INFO,)
