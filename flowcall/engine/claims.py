"""Does an answer say something was done? Claims of an action ("has been lent", "I've added",
"已预订") read out of an answer, and which of them no tool call of the run did.

A small model asked to lend a book may write "Book 5 has been successfully lent to Bob" without
ever calling the loan tool. The run must not show that as done. A claim is a sentence in which a
verb of doing (lend, create, book, send, delete, ...) is said as finished ("has been", "was",
"successfully", "I've", 已, 成功) and not negated ("could not", "was not", 未, 没有, 无法).

A claim is backed when a tool that changes something (not read-only) gave a result in the run
and its name says that kind of action (create_loan for "lent"), or says no kind this module knows
(a tool named `do_it` may have done it: benefit of the doubt, never a false alarm on a real
action). Read-only tools never back a claim: looking up is not doing.

Only the kinds of action the flow offers a tool for are checked: a weather report saying "the sky
has cleared" claims nothing in a flow whose tools only look things up, and a flow that can drop
rows is the one where "3 rows were dropped" must be backed by a call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from flowcall.tools.base import Tool
from flowcall.tools.execute import CallOutcome

# kind of action -> (English finished forms, Chinese verbs, stems a tool's name has for it)
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "lend": (
        ("lent", "loaned", "checked out"),
        ("借出", "借给", "借阅"),
        ("loan", "lend", "borrow", "checkout"),
    ),
    "create": (
        ("created", "added", "set up", "registered", "recorded", "noted down", "saved", "logged"),
        ("添加", "创建", "记下", "记录", "保存", "登记", "新建", "加入"),
        (
            "create",
            "add",
            "new",
            "insert",
            "save",
            "register",
            "record",
            "note",
            "log",
            "make",
            "put",
            "post",
        ),
    ),
    "book": (
        ("booked", "reserved", "scheduled"),
        ("预订", "预定", "预约", "订好", "安排好"),
        ("book", "reserv", "schedul", "appoint"),
    ),
    "send": (
        ("sent", "emailed", "messaged", "texted", "notified"),
        ("发送", "发出", "发给", "通知"),
        ("send", "email", "mail", "message", "sms", "notify", "post"),
    ),
    "delete": (
        ("deleted", "removed", "cleared", "erased", "dropped"),
        ("删除", "移除", "清除", "删掉"),
        ("delete", "remove", "clear", "drop", "purge", "erase"),
    ),
    "cancel": (("cancelled", "canceled", "called off"), ("取消",), ("cancel", "delete", "void")),
    "update": (
        ("updated", "changed", "modified", "renamed"),
        ("更新", "修改", "更改"),
        ("update", "edit", "modify", "change", "set", "patch", "rename"),
    ),
    "pay": (
        ("paid", "transferred", "refunded", "charged"),
        ("支付", "转账", "付款", "退款"),
        ("pay", "transfer", "refund", "charge"),
    ),
    "order": (
        ("ordered", "purchased", "bought", "placed an order"),
        ("下单", "购买", "订购"),
        ("order", "purchase", "buy", "checkout"),
    ),
    "submit": (("submitted", "filed"), ("提交",), ("submit", "file", "create")),
}

_SENTENCES = re.compile(r"[^.!?。！？\n;；]+")
# said as finished: a perfect or passive, an adverb of success, or a first person doing it
_DONE_EN = re.compile(
    r"\b(has|have|had|was|were|is now|are now|been|successfully|i've|i have|i just|we've|"
    r"all set|done)\b|^\s*(i|we)\b",
    re.IGNORECASE,
)
_NOT_EN = re.compile(
    r"\b(not|never|no|cannot|can't|couldn't|wasn't|weren't|hasn't|haven't|didn't|unable|"
    r"failed|without|if|would|could|should|will|can|to be|please|want)\b|n't\b",
    re.IGNORECASE,
)
_DONE_ZH = "已|已经|成功|好了|完成|了"
_NOT_ZH = re.compile(r"未|没有|没|无法|不能|不能够|失败|不可以|请|是否|吗|可以帮|要不要|需要")


@dataclass(frozen=True)
class Claim:
    kind: str  # a key of KINDS
    words: str  # the words that claim it, as the answer wrote them


def _english(sentence: str) -> list[Claim]:
    found = []
    for kind, (forms, _, _) in KINDS.items():
        for form in forms:
            match = re.search(rf"\b{re.escape(form)}\b", sentence, re.IGNORECASE)
            if match is None:
                continue
            before = sentence[: match.start()]
            if _DONE_EN.search(sentence) and not _NOT_EN.search(before):
                found.append(Claim(kind, form))
                break
    return found


def _chinese(sentence: str) -> list[Claim]:
    found = []
    for kind, (_, verbs, _) in KINDS.items():
        for verb in verbs:
            at = sentence.find(verb)
            if at < 0:
                continue
            near = sentence[max(0, at - 4) : at + len(verb) + 3]
            done = re.search(rf"(?:{_DONE_ZH}).{{0,2}}{verb}|{verb}.{{0,2}}(?:{_DONE_ZH})", near)
            if done and not _NOT_ZH.search(sentence[: at + len(verb) + 3]):
                found.append(Claim(kind, verb))
                break
    return found


def claims(answer: Any) -> list[Claim]:
    """The actions an answer says were done: of a text, or of every string in a JSON answer."""
    found: list[Claim] = []
    for text in _texts(answer):
        for sentence in _SENTENCES.findall(text):
            for claim in _english(sentence) + _chinese(sentence):
                if claim not in found:
                    found.append(claim)
    return found


def _texts(answer: Any) -> Iterable[str]:
    if isinstance(answer, str):
        yield answer
    elif isinstance(answer, dict):
        for value in answer.values():
            yield from _texts(value)
    elif isinstance(answer, list):
        for value in answer:
            yield from _texts(value)


def actions_done(done: list[CallOutcome]) -> list[CallOutcome]:
    """The calls that changed something: a tool not marked read-only that gave a result."""
    return [
        o for o in done if o.error_code is None and not (o.tool is not None and o.tool.annotations.read_only)
    ]


def _kinds_of(tool_name: str) -> set[str]:
    name = tool_name.lower()
    return {kind for kind, (_, _, stems) in KINDS.items() if any(stem in name for stem in stems)}


def undone_claims(answer: Any, done: list[CallOutcome], offered: Iterable[Tool]) -> list[Claim]:
    """The claims of `answer` that no call of the run backs (see the module doc), of the kinds
    the `offered` tools that change something could do: "the sky has cleared" claims nothing of
    a flow whose tools only look things up."""
    performed = [_kinds_of(o.call.name) for o in actions_done(done)]
    if any(not kinds for kinds in performed):
        return []  # a tool that changed something in a way we cannot name: it may be what was claimed
    backed = set().union(*performed) if performed else set()
    possible = [_kinds_of(t.name) for t in offered if not t.annotations.read_only]
    if not possible:
        return []
    # an offered action of a kind we cannot name may be any kind
    checked = set(KINDS) if any(not kinds for kinds in possible) else set().union(*possible)
    return [claim for claim in claims(answer) if claim.kind in checked and claim.kind not in backed]


def undone_reason(claim: Claim) -> str:
    return f"the answer says '{claim.words}', and no tool call in this run did that"


def mark_claims(provenance: list[dict[str, Any]] | None, words: list[str]) -> list[dict[str, Any]] | None:
    """The answer's traced values, each string holding a claim no tool backs marked with it
    (`"claim"`): the studio's card flags that value, and it counts as not backed."""
    if not provenance or not words:
        return provenance
    marked = []
    for entry in provenance:
        value = entry.get("value")
        said = [w for w in words if isinstance(value, str) and w.lower() in value.lower()]
        marked.append({**entry, "claim": said[0]} if said else entry)
    return marked
