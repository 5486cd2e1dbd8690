"""Deciding *whether* to call: ask the model, tool by tool, "can this function handle the
request?" and compare the log-probabilities of yes and no.

Small models call readily and well but cannot keep quiet: sampled greedily, a small model calls
a tool for "what is 2+2?". A yes/no question scored in one forward pass separates relevant from
irrelevant requests far better than the first token of the decision JSON does, and the
threshold is the provider's calibrated `call_margin`.

The question shows the description as it is when it fits in PURPOSE_MAX characters, and else
its leading sentences that fit: real MCP servers and OpenAPI documents follow a tool's purpose
with usage notes and examples that drown it, while a plugin's short doc, with its "use it when"
hint, stays as written (the first sentence alone would lose that hint).

A provider may ask the question twice (DecisionTuning.relevance_with_examples): as it is, and
after worked examples, made-up fits and near misses (EXAMPLES), then read the mean: two noisy
readings of one question separate better than either alone.

How each choice was measured, on the tuning data only: docs/research/realworld-notebook.md,
"How the relevance gate was chosen".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from flowcall.calling.parts import MATCH_LABEL, NONE
from flowcall.calling.shortlist import FIRST_SENTENCE, shortlist
from flowcall.core.messages import GateReading, Message, ModelRequest, ModelTurn, ToolSpec

if TYPE_CHECKING:
    from flowcall.calling.base import ModelCall

SYSTEM = "You check whether a function can handle a user's request."
QUESTION = (
    "Function: {name}\nDescription: {description}\nParameters: {parameters}\n\n"
    "User request: {request}\n\nCan this function handle the request? Answer yes or no."
)


def last_user_text(messages: list[Message]) -> str:
    """The user's request: the last user message that is not FlowCall's own note (scoring or
    routing on "your tool call could not be read" would weigh the wrong text)."""
    return next((m.content or "" for m in reversed(messages) if m.from_user), "")


def has_tool_results(messages: list[Message]) -> bool:
    return any(m.role == "tool" for m in messages)


PURPOSE_MAX = 300  # characters of the description that the question shows, cut at a sentence's end


def purpose(tool: ToolSpec, limit: int = PURPOSE_MAX) -> str:
    """The description as it is when it fits in `limit` characters (a plugin's doc reads as its
    author wrote it); else its leading sentences that fit, on one line (the first sentence at
    least, cut with an ellipsis if even that is longer)."""
    if len(tool.description or "") <= limit:
        return tool.description or ""
    rest = " ".join((tool.description or "").split())
    kept = ""
    while rest:
        match = FIRST_SENTENCE.match(rest)
        sentence = match.group(1) if match else rest
        joined = (
            f"{kept} {sentence}".strip()
            if kept and not kept.endswith(("。", "！", "？"))
            else kept + sentence
        )
        if len(joined) > limit:
            return kept or sentence[: limit - 1] + "…"
        kept, rest = joined, rest[len(sentence) :].lstrip()
    return kept


def relevance_request(tool: ToolSpec, request_text: str) -> ModelRequest:
    parameters = ", ".join(tool.parameters.get("properties", {})) or "none"
    question = QUESTION.format(
        name=tool.name, description=purpose(tool), parameters=parameters, request=request_text
    )
    return ModelRequest(
        messages=[Message(role="system", content=SYSTEM), Message(role="user", content=question)],
        score_options=["yes", "no"],
        max_tokens=1,
    )


# Worked examples for the second reading of the question (DecisionTuning.relevance_with_examples):
# made-up tools of families in neither half of the real-world set, half of them near misses
# (the same tool, another action). (name, description, parameters, request, answer)
EXAMPLES = [
    (
        "send_sms",
        "Send an SMS text message to a phone number through Twilio. Messages longer than 160 "
        "characters are split into several.",
        "to, body",
        "can u text my brother at +1 415 555 0134 that im running 10 min late",
        "yes",
    ),
    (
        "send_sms",
        "Send an SMS text message to a phone number through Twilio. Messages longer than 160 "
        "characters are split into several.",
        "to, body",
        "How many texts did I send last month?",
        "no",
    ),
    (
        "create_task",
        "Create a task in the user's Todoist inbox or in a given project. Due dates may be "
        "written in natural language, e.g. 'tomorrow at 5pm'.",
        "content, project_id, due_string, priority",
        "remind me to renew the passport next friday",
        "yes",
    ),
    (
        "create_task",
        "Create a task in the user's Todoist inbox or in a given project. Due dates may be "
        "written in natural language, e.g. 'tomorrow at 5pm'.",
        "content, project_id, due_string, priority",
        "把收件箱里已经完成的任务都删掉",
        "no",
    ),
    (
        "query_train_tickets",
        "查询12306火车票余票信息,按出发站、到达站和日期。",
        "from_station, to_station, date, train_type",
        "下周三北京到上海还有高铁票吗",
        "yes",
    ),
    (
        "get_order",
        "Retrieve one order by its ID, with its line items, customer and fulfillment status.",
        "order_id, fields",
        "refund order #1042, the customer got a broken mug",
        "no",
    ),
]


def after_examples(request: ModelRequest) -> ModelRequest:
    """The same question asked after the worked examples, as earlier turns of the chat (one
    fixed prefix: the provider's prompt cache reads it once)."""
    turns = []
    for name, description, parameters, text, answer in EXAMPLES:
        turns += [
            Message(
                role="user",
                content=QUESTION.format(
                    name=name, description=description, parameters=parameters, request=text
                ),
            ),
            Message(role="assistant", content=answer),
        ]
    system, question = request.messages
    return request.model_copy(update={"messages": [system, *turns, question]})


def margin(scores: dict[str, float] | None) -> float:
    """logP(yes) - logP(no); higher means the tool fits the request better."""
    if not scores:
        return float("-inf")
    return scores["yes"] - scores["no"]


GATE_LABEL = "checked whether {name} fits"  # a gate step's note begins so: see tool_margin
AFTER_EXAMPLES = ", after worked examples"


def _verdict(label: str, value: float, bar: float | None, reading: str = "") -> str:
    """A gate step's note: what was asked and, where the bar is known, the answer."""
    what = f"{reading}margin {value:.2f}"
    if bar is None:
        return f"{label}: {what}"
    return f"{label}: {'yes' if value > bar else 'no'}, {what}, bar {bar:.2f}"


def tool_margin(
    ask: Callable[..., ModelTurn],
    tool: ToolSpec,
    text: str,
    with_examples: bool = False,
    bar: float | None = None,
    part: str = "",
) -> float:
    """How well `tool` fits `text`: the margin of the question, or with `with_examples` the mean
    of the question asked plainly and asked after the worked examples; for a tool that may
    change something (ToolSpec.read_only False), the lower of the two: a wrong yes there does
    what nobody asked for, so both readings must say yes. `ask(request, label, interpret)` runs
    one scoring call; each call's step says what it found (against `bar`, the margin a tool must
    pass, where the caller knows it). `part` names the part of the request asked about
    (parts.py), on the step."""
    asked = relevance_request(tool, text)
    label = GATE_LABEL.format(name=tool.name) + part
    first = ask(
        asked,
        label,
        lambda turn: turn.model_copy(
            update={"verdict": _verdict(label, margin(turn.scores), None if with_examples else bar)}
        ),
    )
    value = margin(first.scores)
    if with_examples:
        cautious = tool.read_only is False
        both = (lambda a, b: min(a, b)) if cautious else (lambda a, b: (a + b) / 2)
        again_label = label + AFTER_EXAMPLES
        again = ask(
            after_examples(asked),
            again_label,
            lambda turn: turn.model_copy(
                update={
                    "verdict": _verdict(
                        again_label, both(value, margin(turn.scores)), bar, "lower " if cautious else "mean "
                    )
                }
            ),
        )
        value = both(value, margin(again.scores))
    return value


def score_tools(
    request: ModelRequest,
    call: ModelCall,
    way: str,
    with_examples: bool = False,
    bar: float | None = None,
    part: tuple[int, str] | None = None,
) -> list[tuple[float, ToolSpec]]:
    """The margins for the last user request, best first (each scoring call recorded as a step
    like any model call): of every tool, or of the model's shortlist when many are attached
    (the others count as not fitting). With `part` (its number and text), for that part of it."""
    text = part[1] if part else last_user_text(request.messages)
    named = f" part {part[0]} ({part[1]})" if part else ""
    ask = lambda asked, label, interpret=None: call(way, asked, interpret, label)  # noqa: E731
    scored = [
        (tool_margin(ask, tool, text, with_examples, bar, named), tool)
        for tool in shortlist(request.tools, text, call, way)
    ]
    return sorted(scored, key=lambda pair: -pair[0])


# a match step's note (parts.matches_note): "part 1 (text) name", ", to be checked" for a tool the
# gate's question must confirm
_MATCHED = re.compile(r"part \d+ \((.*?)\) (\S+?)(, to be checked)?(?:; |$)")
_RECORDED = re.compile(
    r"^checked whether (\S+) fits(?: part \d+ \((.*?)\))?(?:, after worked examples)?: "
    r"(yes|no), (?:mean |lower )?margin (-?[\d.]+|-?inf), bar (-?[\d.]+)"
)


def reading_from_notes(notes: list[str | None]) -> GateReading | None:
    """The gate's findings as a round's steps recorded them (a replay or a re-run reads the
    record, not the model): each tool's best verdict, over the whole request and its parts."""
    margins, bar, parts, matched, to_check = {}, None, [], {}, set()
    for note in notes:
        if (note or "").startswith(MATCH_LABEL + ": "):
            for part, name, checked in _MATCHED.findall(note[len(MATCH_LABEL) + 2 :]):
                parts += [part] if part not in parts else []
                if name != NONE and not checked:
                    matched[part] = name
                elif checked:
                    to_check.add((part, name))
            continue
        match = _RECORDED.match(note or "")
        if match and match.group(2) and match.group(2) not in parts:
            parts.append(match.group(2))
        if match:
            name, said, value, bar = (
                match.group(1),
                match.group(3),
                float(match.group(4)),
                float(match.group(5)),
            )
            # the note rounds the margin: the verdict it states is what counted
            value = max(value, bar + 1e-6) if said == "yes" else min(value, bar)
            margins[name] = max(value, margins.get(name, value))
            if said == "yes" and (match.group(2), name) in to_check:  # a match its part's question confirmed
                matched[match.group(2)] = name
    matched = {part: matched[part] for part in parts if part in matched}  # in the parts' order
    return GateReading(margins=margins, bar=bar, parts=parts, matched=matched) if bar is not None else None


def reading(
    scored: list[tuple[float, ToolSpec]],
    bar: float,
    parts: list[str] | None = None,
    matched: dict[str, str] | None = None,
) -> GateReading:
    """The gate's findings, kept with the decision (ModelTurn.gate)."""
    return GateReading(
        margins={tool.name: round(value, 3) for value, tool in scored},
        bar=bar,
        parts=parts or [],
        matched=matched or {},
    )
