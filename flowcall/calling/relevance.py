"""Deciding *whether* to call: ask the model, tool by tool, "can this function handle the
request?" and compare the log-probabilities of yes and no.

Small models call readily and well but cannot keep quiet: sampled greedily, Qwen 0.5B calls a
tool for "what is 2+2?". A yes/no question scored in one forward pass separates relevant from
irrelevant requests far better (AUC 0.96 on BFCL samples, against ~0.7 for the first token of
the decision JSON), and the threshold is the provider's calibrated `call_margin`.

The question shows the function's purpose, the first sentence of its description, not the
whole text. Real MCP servers and OpenAPI documents follow that sentence with usage notes,
caveats and examples, and those drown the one thing the question is about. On 168 real-world
requests (benchmarks/data/realworld, the calibration half) the short form separated better
than the whole description (AUC 0.768 against 0.759; the right tool ranked first among several
on 74% against 70%; 71.5% balanced accuracy, family left out, against 68.6%) and left BFCL's
one-sentence docs as they were; the threshold best on BFCL's even split alone (0.77) is also
the best on the real-world half, so the calibration carries over. A null-prompt baseline, the
request placed first, and the decision's own first token all separated worse
(benchmarks/relevance_features.py; results in benchmarks/results/).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flowcall.calling.grounding import DOC_CHECK_PREFIX
from flowcall.calling.shortlist import shortlist, summary
from flowcall.errors import ErrorCode
from flowcall.messages import Message, ModelRequest, ToolSpec

if TYPE_CHECKING:
    from flowcall.calling.base import ModelCall

SYSTEM = "You check whether a function can handle a user's request."
QUESTION = ("Function: {name}\nDescription: {description}\nParameters: {parameters}\n\n"
            "User request: {request}\n\nCan this function handle the request? Answer yes or no.")


# How the engine's note after an unreadable call begins (engine.parse_retry_messages). It is
# a user message, but not the user's request: scoring or routing on it would ask "can this
# function handle 'PARSE_FAILED: your tool call could not be read'?".
RETRY_PREFIX = f"{ErrorCode.PARSE_FAILED}: "


def last_user_text(messages: list[Message]) -> str:
    """The user's request: the last user message that is not FlowCall's own retry note."""
    return next((m.content or "" for m in reversed(messages)
                 if m.role == "user" and not (m.content or "").startswith((RETRY_PREFIX, DOC_CHECK_PREFIX))), "")


def has_tool_results(messages: list[Message]) -> bool:
    return any(m.role == "tool" for m in messages)


PURPOSE_MAX = 300  # characters of the description's first sentence that the question shows


def relevance_request(tool: ToolSpec, request_text: str) -> ModelRequest:
    parameters = ", ".join(tool.parameters.get("properties", {})) or "none"
    question = QUESTION.format(name=tool.name, description=summary(tool, PURPOSE_MAX), parameters=parameters,
                               request=request_text)
    return ModelRequest(messages=[Message(role="system", content=SYSTEM), Message(role="user", content=question)],
                        score_options=["yes", "no"], max_tokens=1)


def margin(scores: dict[str, float] | None) -> float:
    """logP(yes) - logP(no); higher means the tool fits the request better."""
    if not scores:
        return float("-inf")
    return scores["yes"] - scores["no"]


def score_tools(request: ModelRequest, call: ModelCall, way: str) -> list[tuple[float, ToolSpec]]:
    """The margins for the last user request, best first (one scoring call each, recorded as a
    step like any model call): of every tool, or of the model's shortlist when many are
    attached (the others count as not fitting)."""
    text = last_user_text(request.messages)
    scored = []
    for tool in shortlist(request.tools, text, call, way):
        turn = call(way, relevance_request(tool, text), None, f"relevance of {tool.name}")
        scored.append((margin(turn.scores), tool))
    return sorted(scored, key=lambda pair: -pair[0])
