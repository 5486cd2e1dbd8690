"""The run's answer: written by the polish model from the tool results (validated against the
flow's JSON Schema, corrected while the retry budget lasts), or, with no polish model, the
decision model's own last word, which must be text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import json_repair

from flowcall.calling.base import calls_from_text
from flowcall.core import schemas
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ResponseFormat
from flowcall.core.spec import Flow
from flowcall.core.steps import StepKind
from flowcall.core.variables import fill_variables
from flowcall.engine.model_calls import ModelCaller, RunFailed
from flowcall.tools.base import Tool
from flowcall.tools.execute import CallOutcome

POLISH_SYSTEM = (
    "You write the final answer to the user's question from the tool results below. "
    "Use only facts from the tool results; say so if they do not answer the question."
)
UNBACKED_NOTE = "no tool result backs this answer: "  # the polish step's note, then the reasons
UNDONE_NOTE = (
    "Some parts of the question got no tool result (listed below). Answer the parts the tool results "
    "cover; for the others say plainly, in the user's language, that they could not be done."
)
NO_ACTION_NOTE = (
    "No tool changed anything in this run: nothing was created, added, sent, booked, lent, paid or "
    "deleted. Never say that it was."
)
DRAFT_LABEL = "A first answer, written before the tool results were checked:"
# what the polish model reads as section labels, and FlowCall's older ones: a model that copies
# one into its answer has it taken out, so no internal label ever reaches the user
INTERNAL_LABELS = (
    DRAFT_LABEL,
    "The decision model's draft answer:",
    "Tool results:",
    "Parts of the question no tool did:",
    "Actions done by tools: none.",
)
CALL_TAG = "<tool_call>"  # a call the embedded model writes as text: the answer is the text before it
LONGEST_REPEAT = 400  # characters of a block written back to back that a streamed answer holds back
_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")
# how an undone part's reason reads, in the words the answer's last line uses
_WHY = (
    ("no call of it was made", "no call was made", "没有调用"),
    ("was denied", "the call was denied", "调用被拒绝"),
    ("was not run", "the call was not run", "调用未执行"),
    ("failed", "the call failed", "调用失败"),
)
NO_TOOL_RESULT_NOTE = (
    "No tool gave a result for this question, so you have no facts from tools. Do not state "
    "weather, times, prices, names, numbers or any other fact as if a tool had looked it up. "
    "Say plainly that it could not be looked up and why, in the user's language."
)
ANSWER_NOW = [
    Message.note(
        "Do not call a tool now. Answer my question in plain sentences, using only the tool results above."
    )
]


@dataclass
class Gaps:
    """What the tools did not do, for the answer to say: why no tool result backs it (None: one
    does), the parts of the request that got no result, and whether the flow offered tools that
    change something and none of them did anything."""

    unbacked: list[str] | None = None
    undone: list[str] = field(default_factory=list)
    no_action: bool = False


def polish(
    flow: Flow,
    polisher: ModelCaller,
    question: str,
    done: list[CallOutcome],
    draft: str | None,
    gaps: Gaps | None = None,
) -> Any:
    """The polish model's answer; with a schema, a value valid against it. A text answer ends
    with a line saying which parts were not done (with_gaps)."""
    assert flow.polish is not None
    gaps = gaps or Gaps()
    schema = flow.polish.output_schema
    messages = [
        Message(role="system", content=_polish_system(flow, polisher, gaps)),
        Message(role="user", content=_polish_brief(question, done, draft, gaps)),
    ]
    response_format = ResponseFormat(name="answer", json_schema=schema) if schema else None
    note = f"{UNBACKED_NOTE}{'; '.join(gaps.unbacked)}" if gaps.unbacked is not None else None
    budget = flow.retry_budget
    while True:
        turn = _polish_call(flow, polisher, messages, response_format, note)
        if not schema:
            return with_gaps(turn.content or "", gaps, question)
        answer, problem = structured(turn.content, schema)
        if problem is None:
            return without_labels(answer)
        polisher.rec.record(
            StepKind.ERROR,
            error_code=str(ErrorCode.INVALID_ARGUMENT),
            error_message=f"polish output does not match the schema: {problem}",
        )
        if budget <= 0:
            raise RunFailed(
                ErrorCode.INVALID_ARGUMENT, f"the polish model's answer never matched the schema: {problem}"
            )
        budget -= 1
        messages += [
            Message(role="assistant", content=turn.content or ""),
            Message.note(
                f"That JSON is not valid against the schema: {problem}. Reply again with corrected JSON only."
            ),
        ]


def _polish_call(
    flow: Flow,
    polisher: ModelCaller,
    messages: list[Message],
    response_format: ResponseFormat | None,
    note: str | None,
) -> ModelTurn:
    """One call of the polish model, recorded as a step; a provider's failure ends the run."""
    assert flow.polish is not None
    request = ModelRequest(
        messages=list(messages),
        response_format=response_format,
        temperature=flow.polish.temperature,
        max_tokens=flow.polish.max_tokens,
    )
    try:
        return polisher.call(StepKind.POLISH, 0, None, request, note=note)
    except ProviderError as exc:
        raise RunFailed(exc.code, exc.message) from exc


def _polish_system(flow: Flow, polisher: ModelCaller, gaps: Gaps) -> str:
    assert flow.polish is not None
    schema = flow.polish.output_schema
    system = fill_variables(flow.polish.system_prompt or POLISH_SYSTEM)
    if gaps.unbacked is not None:
        system += "\n" + NO_TOOL_RESULT_NOTE
    elif gaps.undone:
        system += "\n" + UNDONE_NOTE
    if gaps.no_action:
        system += "\n" + NO_ACTION_NOTE
    # where the provider enforces the schema (grammar, json_schema), its text in the prompt only costs tokens
    if schema and not polisher.provider.capabilities.json_schema_output:
        system += (
            "\nReply with one JSON object valid against this JSON Schema, and nothing else:\n"
            + json.dumps(schema, ensure_ascii=False)
        )
    return system


def _polish_brief(question: str, done: list[CallOutcome], draft: str | None, gaps: Gaps) -> str:
    lines = [f"Question: {question}", "", "Tool results:"]
    lines += [f"- {o.call.name}({o.call.arguments_json()}) -> {o.content_for_model()}" for o in done] or [
        "(no tool was called)"
    ]
    if gaps.unbacked is not None:
        lines += ["", "No tool result came back, because:", *(f"- {reason}" for reason in gaps.unbacked)]
    elif gaps.undone:
        lines += ["", "Parts of the question no tool did:", *(f"- {reason}" for reason in gaps.undone)]
    if gaps.no_action:
        lines += ["", "Actions done by tools: none."]
    # a draft with no tool result behind it is the model's guess ("Book 5 has been lent"): never passed on
    if draft and gaps.unbacked is None:
        lines += ["", DRAFT_LABEL, draft]
    return "\n".join(lines)


def with_gaps(answer: str, gaps: Gaps, question: str) -> str:
    """A text answer with no internal label left in it, ending with a line, in the user's
    language, that names each part of the request no tool did."""
    answer = _without_labels(answer)
    if not gaps.undone:
        return answer
    chinese = _chinese(question)
    parts = [_undone_part(reason, chinese) for reason in gaps.undone]
    line = (
        ("未能完成的部分:" + ";".join(parts) + "。") if chinese else ("Not done: " + "; ".join(parts) + ".")
    )
    return f"{answer.rstrip()}\n\n{line}" if answer.strip() else line


def with_undone_claims(answer: str, words: list[str], question: str) -> str:
    """A text answer that says something was done which no tool did, ending with a line, in the
    user's language, that says so."""
    if not words:
        return answer
    quoted = ", ".join(f"'{w}'" for w in words)
    line = (
        f"注意:回答中说已{'、'.join(words)},但本次运行没有任何工具执行过这一操作。"
        if _chinese(question)
        else f"Note: no tool did what this answer calls {quoted} in this run."
    )
    return f"{answer.rstrip()}\n\n{line}" if answer.strip() else line


def _chinese(text: str) -> bool:
    return len(_CJK.findall(text)) > len(_LATIN_WORD.findall(text))


def _undone_part(reason: str, chinese: bool) -> str:
    """One undone part, from its reason ("get_weather failed: ...", "x fits the request, and no call...")."""
    name = reason.split(" ", 1)[0]
    for marker, en, zh in _WHY:
        if marker in reason:
            return f"{name} {zh}" if chinese else f"{name} ({en})"
    return f"{name} 没有结果" if chinese else f"{name} (no result)"


def _without_labels(text: str) -> str:
    cleaned = text
    for label in INTERNAL_LABELS:
        cleaned = re.sub(re.escape(label) + r"\s*", "", cleaned, flags=re.IGNORECASE)
    return cleaned.strip() if cleaned != text else text


def settled_text(written: str) -> str:
    """The part of a polish model's text, as written so far, that the run's text answer surely
    begins with, whatever the model writes next: labels taken out as `_without_labels` takes
    them out, less all that may still change (_before, _unechoed). A text that begins with
    white space is held whole: it is stripped only if a label comes."""
    if not written or written[0].isspace():
        return ""
    cleaned = _unechoed(_before(written, CALL_TAG))
    for label in INTERNAL_LABELS:
        cleaned = re.sub(re.escape(label) + r"\s*", "", cleaned, flags=re.IGNORECASE)
    return _before(cleaned, *INTERNAL_LABELS).rstrip()  # the end is stripped before a line is added


def _before(text: str, *marks: str) -> str:
    """`text` up to the first of `marks`, less a tail that may be the start of one."""
    for mark in marks:
        text = re.split(re.escape(mark), text, flags=re.IGNORECASE)[0]
    tail = text[-max(map(len, marks)) :].lower()
    begun = max((n for m in marks for n in range(1, len(m)) if tail.endswith(m[:n].lower())), default=0)
    return text[: len(text) - begun]


def _unechoed(text: str) -> str:
    """`text` less a tail that repeats what stands a block before it: the embedded model,
    stopped in a loop, keeps the first copy of the block and drops the rest (repetition.py)."""
    echoed = 0
    for block in range(1, min(LONGEST_REPEAT, len(text) - 1) + 1):
        if len(text) - block <= echoed:
            break
        echoed = max(echoed, _echo(text, block))
    return text[: len(text) - echoed]


def _echo(text: str, block: int) -> int:
    """How many characters at the end of `text` are the same as those `block` before them."""
    n, same = len(text), 0
    while (
        same + 2 * block <= n
        and text[n - same - block : n - same] == text[n - same - 2 * block : n - same - block]
    ):
        same += block
    while same + block < n and text[n - 1 - same] == text[n - 1 - same - block]:
        same += 1
    return same


def without_labels(value: Any) -> Any:
    """A structured answer with no internal label left in its strings."""
    if isinstance(value, str):
        return _without_labels(value)
    if isinstance(value, dict):
        return {k: without_labels(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_labels(v) for v in value]
    return value


def structured(content: str | None, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """Parse (repairing if needed) and validate a structured answer."""
    if not content or not content.strip():
        return None, "the answer is empty"
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        value = json_repair.loads(content)
    errors = sorted(
        schemas.validator(schema, "polish.output_schema").iter_errors(value), key=lambda e: e.path
    )
    if errors:
        return value, "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:5])
    return value, None


def last_word(turn: ModelTurn, tools: dict[str, Tool], flow: Flow, done: list[CallOutcome]) -> str:
    """The decision model's last word after max_rounds, with no polish model: it must be text.

    Asked without tools, a model may still write a call (as text: a small model's habit) or
    nothing. Neither is an answer, so the run fails with MAX_ROUNDS instead of succeeding with
    an empty answer or a call's JSON; the message quotes the last tool result, so the person
    still sees what the tools found. (A success made of a raw tool result would hand a client,
    say an MCP host, something no model ever phrased as an answer.)"""
    offered = ModelRequest(messages=[], tools=[t.spec() for t in tools.values()])
    read = calls_from_text(turn, offered)
    if (turn.content or "").strip() and not read.tool_calls and not read.parse_errors:
        return turn.content or ""
    wrote = "a tool call" if (turn.content or "").strip() else "nothing"
    last = (
        f"; the last tool result ({done[-1].call.name}): {done[-1].content_for_model()[:300]}" if done else ""
    )
    raise RunFailed(
        ErrorCode.MAX_ROUNDS,
        f"after {flow.max_rounds} rounds of tools, asked to answer without "
        f"them, the decision model wrote {wrote} instead of an answer, and the "
        f"flow has no polish model to write one{last}",
    )
