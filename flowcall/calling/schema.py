"""`schema`: the decision is structured output that can only be a valid call or a "no call".

The model must answer with JSON matching a schema built from the attached tools:
{"tool_calls": [{"name": <an attached tool>, "arguments": <that tool's schema>}, ...]} or
{"answer": "..."}. A local model is held to it by a grammar, a remote one by
response_format json_schema. tool_choice and parallel_tool_calls become part of the schema,
so they hold on any provider that enforces structured output.
"""

from __future__ import annotations

import json
from typing import Any

import json_repair

from flowcall.calling import shortlist
from flowcall.calling.base import ModelCall, SingleCallWay, honour_choice
from flowcall.calling.grounding import ground_calls
from flowcall.calling.parts import checked_on_its_part, match_parts, request_parts
from flowcall.calling.prompt import as_text, render_tools
from flowcall.calling.relevance import has_tool_results, last_user_text, reading, score_tools, tool_margin
from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.messages import (
    GateReading,
    Message,
    ModelRequest,
    ModelTurn,
    ResponseFormat,
    ToolCall,
    ToolSpec,
)
from flowcall.core.tool_calls import new_call_id
from flowcall.providers.base import Capabilities

INSTRUCTIONS = (
    "You decide whether to call functions. The functions are listed in <tools></tools> as JSON:\n"
    "<tools>\n{tools}\n</tools>\n\n"
    "Reply with one JSON object.\n"
    '- If a function can do what the user asks, call it: {{"tool_calls": [{{"name": "<function name>", '
    '"arguments": {{...}}}}]}}. {arguments}{parallel}\n'
    "- If none of the functions fits the request, or the function results already answer it, do not call "
    'anything: {{"answer": "<your reply to the user>"}}.'
)

# Where a grammar holds the reply to calls only, the prompt need not spell out the JSON or the
# answer branch (issue 12, point 5): the tools and what to put in the arguments are enough.
CALL_ONLY = """You call functions. The functions are listed in <tools></tools> as JSON:
<tools>
{tools}
</tools>

Call the function that does what the user asks. {arguments}{parallel}"""
ANSWER_ONLY = 'Reply with one JSON object: {"answer": "<your reply to the user>"}.'

# How to fill the arguments, in both prompts above.
ARGUMENTS = (
    "Take argument values from the user's message; leave out optional arguments the user did not give."
)

OPEN_CALLS = '{"tool_calls": ['
MAX_CALLS = 10
PARALLEL = " When the user asks for several things, put one call per thing in the list."


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments may hold only declared parameters: without this a grammar lets the model
    invent keys, which the engine would then reject."""
    if schema.get("type") == "object" and "additionalProperties" not in schema:
        return {**schema, "additionalProperties": False}
    return schema


def decision_schema(tools: list[ToolSpec], choice: str, parallel: bool) -> dict[str, Any]:
    answer = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    if choice == "none" or not tools:
        return answer
    allowed = [t for t in tools if t.name == choice] if choice not in ("auto", "required") else tools
    items = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": _closed(t.parameters)},
            "required": ["name", "arguments"],
        }
        for t in allowed
    ]
    array: dict[str, Any] = {
        "type": "array",
        "items": items[0] if len(items) == 1 else {"anyOf": items},
        "minItems": 1,
    }
    if not parallel:
        array["maxItems"] = 1
    calls = {"type": "object", "properties": {"tool_calls": array}, "required": ["tool_calls"]}
    return calls if choice != "auto" else {"anyOf": [calls, answer]}


def held(request: ModelRequest, capabilities: Capabilities) -> str | None:
    """What the grammar holds the reply to, in words. The sent request says `tool_choice: auto`
    (the choice lives in the decision schema the grammar is built from), so the step's note
    says it, and the inspector shows it beside the request. None without a grammar: there the
    schema is only asked for, and honour_choice applies the choice after the reply."""
    if not capabilities.grammar:
        return None
    choice = str(request.tool_choice)
    if not request.tools or choice == "none":
        return "reply held to an answer, no tool call, by the grammar"
    one = "" if request.parallel_tool_calls else ", one call at most"
    if choice not in ("auto", "required"):
        return f"tool held to {choice} by the grammar{one}"
    names = [t.name for t in request.tools]
    tools = ", ".join(names) if len(names) <= 5 else f"one of {len(names)} tools"
    if choice == "required":
        return f"reply held to a call of {tools} by the grammar{one}"
    return f"reply held to a call of {tools} or an answer by the grammar{one}"


def with_held(note: str | None, request: ModelRequest, capabilities: Capabilities) -> str | None:
    return "; ".join(filter(None, [note, held(request, capabilities)])) or None


def instructions(request: ModelRequest, capabilities: Capabilities) -> str:
    """The system prompt's part that lists the tools and says how to reply. With tool_choice
    none the tools are left out: they cannot be called, and reading them costs time."""
    choice = str(request.tool_choice)
    parallel = PARALLEL if request.parallel_tool_calls else ""
    if not request.tools or choice == "none":
        return ANSWER_ONLY
    if capabilities.grammar and choice != "auto":
        named = [t for t in request.tools if t.name == choice] if choice != "required" else request.tools
        return CALL_ONLY.format(
            tools=render_tools(named or request.tools), parallel=parallel, arguments=ARGUMENTS
        )
    return INSTRUCTIONS.format(tools=render_tools(request.tools), parallel=parallel, arguments=ARGUMENTS)


def read_decision(content: str | None) -> tuple[list[ToolCall], str | None, list[str]]:
    """(calls, answer, errors) from the model's JSON reply."""
    if not content or not content.strip():
        return [], None, ["the reply is empty"]
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        value = json_repair.loads(content)  # a remote model without enforcement may still wrap or cut it
    if not isinstance(value, dict):
        return [], None, [f"the reply is not a JSON object: {content[:200]!r}"]
    if isinstance(value.get("tool_calls"), list):
        calls = []
        for item in value["tool_calls"]:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                args = item.get("arguments")
                calls.append(
                    ToolCall(
                        id=new_call_id(),
                        name=item["name"],
                        arguments=args if isinstance(args, dict) else None,
                        raw_arguments=json.dumps(args, ensure_ascii=False),
                    )
                )
        if calls:
            return calls, None, []
    if isinstance(value.get("answer"), str):
        return [], value["answer"], []
    return [], None, [f"the reply has neither tool_calls nor answer: {content[:200]!r}"]


class SchemaWay(SingleCallWay):
    name = "schema"

    def __init__(self, tuning: DecisionTuning | None = None):
        self.tuning = tuning or DecisionTuning()  # the gate's bar, one call at a time, grounding

    def prepare(self, request: ModelRequest, capabilities: Capabilities) -> ModelRequest:
        messages = [as_text(m) for m in request.messages]
        text = instructions(request, capabilities)
        if messages and messages[0].role == "system":
            messages[0] = Message(role="system", content=f"{messages[0].content}\n\n{text}")
        else:
            messages.insert(0, Message(role="system", content=text))
        schema = decision_schema(request.tools, str(request.tool_choice), request.parallel_tool_calls)
        return request.model_copy(
            update={
                "messages": messages,
                "tools": [],
                "tool_choice": "auto",
                "response_format": ResponseFormat(name="decision", json_schema=schema, strict=False),
            }
        )

    def decide(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        """With a scoring provider, first decide whether to call (relevance.py), then let the
        grammar hold the model to that decision: only calls, or only an answer. Where parallel
        calls are allowed, the calls are written one at a time (_call_by_call)."""
        if not capabilities.scoring or not request.tools or has_tool_results(request.messages):
            return self.decide_at_once(request, capabilities, call)
        gate, first = None, None
        one_by_one = request.parallel_tool_calls and self.tuning.more_calls_margin is not None
        if request.tool_choice == "auto":
            fitting, gate = relevant_tools(request, self.tuning, call, self.name)
            # every tool listed: a later call may do a part of the request the gate, asked about
            # the whole, did not find (where it was asked part by part, its findings hold)
            if fitting and one_by_one and not gate.parts:
                listed = fitting + [t for t in request.tools if t not in fitting]
                update = {"tool_choice": "required", "tools": listed[: shortlist.SHORTLIST]}
                first = fitting
            else:
                update = {"tool_choice": "required", "tools": fitting} if fitting else {"tool_choice": "none"}
            request = request.model_copy(update=update)
        if request.tool_choice != "none" and one_by_one:
            # each part matched to a tool gets a call of it (parts.py), in the parts' order
            owed = [
                t for name in (gate.matched.values() if gate else []) for t in request.tools if t.name == name
            ]
            turn = self.call_by_call(request, capabilities, call, first=first, owed=owed)
        else:
            turn = self.decide_at_once(request, capabilities, call)
        return turn.model_copy(update={"gate": gate}) if gate else turn

    def decide_at_once(
        self, request: ModelRequest, capabilities: Capabilities, call: ModelCall, note: str | None = None
    ) -> ModelTurn:
        return call(
            self.name,
            self.prepare(request, capabilities),
            lambda turn: self.read(turn, request, capabilities),
            with_held(note, request, capabilities),
        )

    def read(self, turn: ModelTurn, request: ModelRequest, capabilities: Capabilities) -> ModelTurn:
        """interpret, then drop invented optional arguments where the provider asks for it."""
        turn = self.interpret(turn, request)
        if self.tuning.ground_optional_arguments and turn.tool_calls:
            grounded = ground_calls(turn.tool_calls, request.tools, request.messages)
            turn = turn.model_copy(update={"tool_calls": grounded})
        return turn

    def call_by_call(
        self,
        request: ModelRequest,
        capabilities: Capabilities,
        call: ModelCall,
        first: list[ToolSpec] | None = None,
        owed: list[ToolSpec] | None = None,
    ) -> ModelTurn:
        """Write the call list one call at a time, and after each one score whether the list
        goes on ("," next) or ends ("]" next).

        Left to write the list at once, a small model closes it after the first call almost
        every time, yet the log-probability of "," against "]" after that call separates "one
        call" from "more calls" well. A "how many calls?" question scored over the digits counted
        worse (docs/research/realworld-notebook.md). Each step reuses the previous one's prompt
        from the KV cache, so a further call costs its own tokens, not another read of the prompt.

        With `first` (the tools the gate found fitting), the first call is held to those, and
        the list goes on over every tool listed: a request for the weather and an employee's
        phone gets its second call from a tool the gate, asked about the whole request, did not
        pick.

        With `owed` (the tools matched to the request's parts), each of them gets a call before
        the "another call?" check has a say: the match found a part for it, and that check,
        asked after the first call, often closes a list whose second part is still open.
        """
        threshold = self.tuning.more_calls_margin
        assert threshold is not None
        sent = self.prepare(request, capabilities)
        # a named tool stays named
        choice = "required" if request.tool_choice == "auto" else str(request.tool_choice)
        prefix, calls, turn = OPEN_CALLS, [], None
        for index in range(MAX_CALLS):
            due = [t for t in owed or [] if all(c.name != t.name for c in calls)]
            if index:
                if not due and not self._goes_on(sent, prefix, index, call, threshold):
                    break
                prefix += ", "
            held = due[:1] or (first if first and not index else request.tools)
            label = f"call {index + 1}" + (f", for the part matched to {due[0].name}" if due else "")
            turn = self._write_call(request, capabilities, call, sent, prefix, held, choice, calls, label)
            if len(turn.tool_calls) <= len(calls):
                break  # unreadable, or a repeat of an earlier call: the list is complete
            calls = turn.tool_calls
            # The list goes on from the calls as they will run (invented arguments dropped), so
            # the model sees the cleaned calls and is not led on by its own guesses.
            prefix = OPEN_CALLS + ", ".join(_as_json(c) for c in calls)
        assert turn is not None
        return turn

    def _write_call(
        self,
        request: ModelRequest,
        capabilities: Capabilities,
        call: ModelCall,
        sent: ModelRequest,
        prefix: str,
        held: list[ToolSpec],
        choice: str,
        calls: list[ToolCall],
        label: str,
    ) -> ModelTurn:
        """One more call after `prefix`, its grammar holding it to the `held` tools."""
        item = decision_schema(held, choice, True)["properties"]["tool_calls"]["items"]
        one_call = ResponseFormat(name="call", json_schema=item, strict=False)
        return call(
            self.name,
            sent.model_copy(update={"assistant_prefix": prefix, "response_format": one_call}),
            lambda raw: self._extended(raw, calls, request, capabilities),
            label,
        )

    def _goes_on(
        self, sent: ModelRequest, prefix: str, index: int, call: ModelCall, threshold: float
    ) -> bool:
        """After call `index`, whether the model would write another: "," against "]" next."""
        asked = sent.model_copy(
            update={
                "assistant_prefix": prefix,
                "response_format": None,
                "score_options": [",", "]"],
                "max_tokens": 1,
            }
        )
        scores = call(self.name, asked, None, f"another call after call {index}?").scores or {}
        return scores.get(",", float("-inf")) - scores.get("]", 0.0) > threshold

    def _extended(
        self, raw: ModelTurn, earlier: list[ToolCall], request: ModelRequest, capabilities: Capabilities
    ) -> ModelTurn:
        """One written call read as the whole list so far: the earlier calls as first read (with
        what was dropped from them), then the new one unless it repeats one of them. So each
        "call N" step holds the round's decision up to there, and the last one the decision:
        re-runs and replays read it from the record as it was."""
        turn = self.read(
            raw.model_copy(update={"content": (raw.content or "") + "]}"}), request, capabilities
        )
        calls = list(earlier)
        for written in turn.tool_calls[len(earlier) :]:
            if not _same_call(written, calls):
                calls.append(written)
        return turn.model_copy(update={"tool_calls": calls})

    def interpret(self, turn: ModelTurn, request: ModelRequest) -> ModelTurn:
        calls, answer, errors = read_decision(turn.content)
        turn = turn.model_copy(
            update={
                "tool_calls": calls,
                "content": answer if not calls else None,
                "parse_errors": turn.parse_errors + errors,
            }
        )
        return honour_choice(turn, request)  # for providers that do not enforce the schema strictly


def _as_json(call: ToolCall) -> str:
    return json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)


def _same_call(new: ToolCall, earlier: list[ToolCall]) -> bool:
    return any(new.name == c.name and new.arguments == c.arguments for c in earlier)


def relevant_tools(
    request: ModelRequest, tuning: DecisionTuning, call: ModelCall, way: str
) -> tuple[list[ToolSpec], GateReading]:
    """The tools the model says can handle the request, best first (one scoring call each), at
    most SHORTLIST of them: the decision lists every one in its prompt, and 64 long tool docs
    overflow a small model's context. With them, what the gate read (kept with the decision).

    Where no tool fits the whole request and it has several parts (parts.py), one more call
    matches each part to a tool: a tool known to only read fits the part it is matched to, any
    other must also pass the gate's question on that part (parts.checked_on_its_part)."""
    text = last_user_text(request.messages)
    scored, pieces = (
        score_tools(request, call, way, tuning.relevance_with_examples, tuning.call_margin),
        request_parts(text),
    )
    if any(value > tuning.call_margin for value, _ in scored) or len(pieces) < 2:
        pieces = []
    best = {tool.name: (value, tool) for value, tool in scored}
    matched: dict[str, str] = {}
    listed = [tool for _, tool in scored]
    for number, (part, tool) in enumerate(
        zip(pieces, match_parts(listed, text, pieces, call, way) if pieces else []), 1
    ):
        if tool is None:
            continue
        if not checked_on_its_part(tool):
            matched[part] = tool.name
            continue
        ask = lambda asked, label, interpret=None: call(way, asked, interpret, label)  # noqa: E731
        value = tool_margin(
            ask, tool, part, tuning.relevance_with_examples, tuning.call_margin, f" part {number} ({part})"
        )
        best[tool.name] = max(best[tool.name], (value, tool), key=lambda pair: pair[0])
        if value > tuning.call_margin:
            matched[part] = tool.name
    scored = sorted(best.values(), key=lambda pair: -pair[0])
    fitting = [tool for value, tool in scored if value > tuning.call_margin or tool.name in matched.values()]
    return fitting[: shortlist.SHORTLIST], reading(scored, tuning.call_margin, pieces, matched)
