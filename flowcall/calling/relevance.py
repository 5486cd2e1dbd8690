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

from typing import TYPE_CHECKING, Callable

from flowcall.calling.shortlist import FIRST_SENTENCE, shortlist
from flowcall.messages import Message, ModelRequest, ModelTurn, ToolSpec

if TYPE_CHECKING:
    from flowcall.calling.base import ModelCall

SYSTEM = "You check whether a function can handle a user's request."
QUESTION = ("Function: {name}\nDescription: {description}\nParameters: {parameters}\n\n"
            "User request: {request}\n\nCan this function handle the request? Answer yes or no.")


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
        joined = f"{kept} {sentence}".strip() if kept and not kept.endswith(("。", "！", "？")) else kept + sentence
        if len(joined) > limit:
            return kept or sentence[: limit - 1] + "…"
        kept, rest = joined, rest[len(sentence):].lstrip()
    return kept


def relevance_request(tool: ToolSpec, request_text: str) -> ModelRequest:
    parameters = ", ".join(tool.parameters.get("properties", {})) or "none"
    question = QUESTION.format(name=tool.name, description=purpose(tool), parameters=parameters,
                               request=request_text)
    return ModelRequest(messages=[Message(role="system", content=SYSTEM), Message(role="user", content=question)],
                        score_options=["yes", "no"], max_tokens=1)


# Worked examples for the second reading of the question (DecisionTuning.relevance_with_examples):
# made-up tools of families in neither half of the real-world set, half of them near misses
# (the same tool, another action). (name, description, parameters, request, answer)
EXAMPLES = [
    ("send_sms", "Send an SMS text message to a phone number through Twilio. Messages longer than 160 "
     "characters are split into several.", "to, body",
     "can u text my brother at +1 415 555 0134 that im running 10 min late", "yes"),
    ("send_sms", "Send an SMS text message to a phone number through Twilio. Messages longer than 160 "
     "characters are split into several.", "to, body", "How many texts did I send last month?", "no"),
    ("create_task", "Create a task in the user's Todoist inbox or in a given project. Due dates may be "
     "written in natural language, e.g. 'tomorrow at 5pm'.", "content, project_id, due_string, priority",
     "remind me to renew the passport next friday", "yes"),
    ("create_task", "Create a task in the user's Todoist inbox or in a given project. Due dates may be "
     "written in natural language, e.g. 'tomorrow at 5pm'.", "content, project_id, due_string, priority",
     "把收件箱里已经完成的任务都删掉", "no"),
    ("query_train_tickets", "查询12306火车票余票信息,按出发站、到达站和日期。", "from_station, to_station, date, train_type",
     "下周三北京到上海还有高铁票吗", "yes"),
    ("get_order", "Retrieve one order by its ID, with its line items, customer and fulfillment status.",
     "order_id, fields", "refund order #1042, the customer got a broken mug", "no"),
]


def after_examples(request: ModelRequest) -> ModelRequest:
    """The same question asked after the worked examples, as earlier turns of the chat (one
    fixed prefix: the provider's prompt cache reads it once)."""
    turns = []
    for name, description, parameters, text, answer in EXAMPLES:
        turns += [Message(role="user", content=QUESTION.format(name=name, description=description,
                                                               parameters=parameters, request=text)),
                  Message(role="assistant", content=answer)]
    system, question = request.messages
    return request.model_copy(update={"messages": [system, *turns, question]})


def margin(scores: dict[str, float] | None) -> float:
    """logP(yes) - logP(no); higher means the tool fits the request better."""
    if not scores:
        return float("-inf")
    return scores["yes"] - scores["no"]


def tool_margin(ask: Callable[[ModelRequest, str], ModelTurn], tool: ToolSpec, text: str,
                with_examples: bool = False) -> float:
    """How well `tool` fits `text`: the margin of the question, or with `with_examples` the mean
    of the question asked plainly and asked after the worked examples. `ask(request, label)`
    runs one scoring call."""
    asked = relevance_request(tool, text)
    value = margin(ask(asked, f"relevance of {tool.name}").scores)
    if with_examples:
        again = ask(after_examples(asked), f"relevance of {tool.name}, after worked examples")
        value = (value + margin(again.scores)) / 2
    return value


def score_tools(request: ModelRequest, call: ModelCall, way: str,
                with_examples: bool = False) -> list[tuple[float, ToolSpec]]:
    """The margins for the last user request, best first (each scoring call recorded as a step
    like any model call): of every tool, or of the model's shortlist when many are attached
    (the others count as not fitting)."""
    text = last_user_text(request.messages)
    ask = lambda asked, label: call(way, asked, None, label)  # noqa: E731
    scored = [(tool_margin(ask, tool, text, with_examples), tool) for tool in shortlist(request.tools, text, call, way)]
    return sorted(scored, key=lambda pair: -pair[0])
