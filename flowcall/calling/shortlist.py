"""Which tools the relevance gate asks about when many are attached.

The gate (relevance.py) asks one question per tool, and each question holds the user's
request, so a decision's time grows with the tool list: 65 model calls for 64 tools. Above
SHORTLIST tools, the gate scores only a shortlist, merged from two rankings:

- the model's own choice: it names the tool that fits best, a grammar holding it to the
  attached names, over a compact listing (name and first sentence of each description) that
  is the same on every run and so is read from the prompt cache;
- word overlap between the request and each tool's name and description (BM25), which
  needs no model call and catches the near-equals the model's one choice leaves out.

Asked for a second and third choice the same way, a small model picks by the first token of
the name ("math_..." again, then any "f..." tool) and misses the obvious one; BM25 does not.
A pick that cannot be read (a provider that does not hold to the grammar) means every tool
is scored: a tool is never left out by a fault.
"""

from __future__ import annotations

import json
import re

from flowcall.calling.base import ModelCall
from flowcall.calling.doc_text import plain
from flowcall.core.messages import Message, ModelRequest, ResponseFormat, ToolSpec

# At most this many tools are scored: a cost cap, not a tuned figure. BFCL's cases attach at
# most 4 functions, so the gate's calibration never meets a shortlist.
SHORTLIST = 8
SYSTEM = (
    "You pick the function that best fits a user's request. The functions, one per line:\n{listing}\n\n"
    'Reply with the name of the function that fits best, as JSON: {{"name": "<function name>"}}.'
)
PICK_PREFIX = '{"name": '
# a full stop ends a sentence before a space, unless it ends "e.g." or "i.e."; 。！？ end one anyway
FIRST_SENTENCE = re.compile(r"(.+?(?:(?<!e\.g)(?<!i\.e)[.!?](?=\s|$)|[。！？]))")


def summary(tool: ToolSpec, limit: int = 160) -> str:
    """The first sentence of the description, on one line: what a tool is for, not how."""
    text = " ".join(plain(tool.description).split())
    match = FIRST_SENTENCE.match(text)
    text = match.group(1) if match else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def listing(tools: list[ToolSpec]) -> str:
    return "\n".join(f"- {t.name}: {summary(t)}" for t in tools)


def pick_request(tools: list[ToolSpec], request_text: str, remaining: list[str]) -> ModelRequest:
    return ModelRequest(
        messages=[
            Message(role="system", content=SYSTEM.format(listing=listing(tools))),
            Message(role="user", content=request_text),
        ],
        assistant_prefix=PICK_PREFIX,
        max_tokens=64,
        temperature=0.0,
        response_format=ResponseFormat(name="pick", json_schema={"enum": remaining}, strict=False),
    )


def read_pick(content: str | None, remaining: list[str]) -> str | None:
    text = (content or "").removeprefix(PICK_PREFIX).strip().rstrip("}").strip()
    try:
        name = json.loads(text)
    except json.JSONDecodeError:
        return None
    return name if name in remaining else None


def words(text: str) -> list[str]:
    """Lower-case words, snake_case split, and each CJK character on its own (Chinese has no
    spaces between words)."""
    return re.findall(r"[a-z0-9]+|[\u3400-\u9fff]", text.replace("_", " ").lower())


def by_overlap(tools: list[ToolSpec], request_text: str) -> list[ToolSpec]:
    """The tools by BM25 score of the request against name + description, best first (ties in
    the order attached)."""
    from rank_bm25 import BM25Okapi

    corpus = [words(f"{t.name} {plain(t.description)}") or ["-"] for t in tools]
    scores = BM25Okapi(corpus).get_scores(words(request_text))
    order = sorted(range(len(tools)), key=lambda i: -scores[i])
    return [tools[i] for i in order]


def shortlist(
    tools: list[ToolSpec], request_text: str, call: ModelCall, way: str, size: int | None = None
) -> list[ToolSpec]:
    """Up to `size` (SHORTLIST) tools, the model's choice first; all of them if there are no
    more, or if the model's choice cannot be read."""
    size = SHORTLIST if size is None else size
    if len(tools) <= size:
        return list(tools)
    names = [t.name for t in tools]
    turn = call(
        way, pick_request(tools, request_text, names), None, f"shortlist: the best of {len(tools)} tools"
    )
    name = read_pick(turn.content, names)
    if name is None:
        return list(tools)
    chosen = next(t for t in tools if t.name == name)
    return [chosen, *[t for t in by_overlap(tools, request_text) if t.name != name][: size - 1]]
