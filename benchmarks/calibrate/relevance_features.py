"""Score every way of asking "does a tool fit?" on the tuning data, once, and keep the numbers,
so that ways of deciding can be compared offline (issue 14, point 2). Changes nothing.

    .venv/bin/python benchmarks/calibrate/relevance_features.py collect OUT.jsonl \\
        [--per-category 20 --irrelevance 80]
    .venv/bin/python benchmarks/calibrate/relevance_features.py analyze OUT.jsonl

Tuning data only: BFCL's even split and the real-world CALIBRATION half (never the report half).
Per tool it records the margin logP(yes) - logP(no) of
  fr      the function with its whole description, then the request (the gate until issue 14);
  rf      the request first, then the function (one cached prefix serves every tool);
  null    `fr` with an empty request: what the model says of the tool alone;
and, with `more` (a second pass over the same rows),
  short   the function's purpose only, the first sentence of its description (the gate now);
  asks    the purpose, asked as "Is the user asking for what this function does?";
and per item `dec`, logP("tool") - logP("answer") for the first word of the schema way's
decision after '{"', with every tool listed: the decision's own "no call" option.

`variants SRC OUT` scores, per tool, the plain gate question (`lead`) and the same question after
worked examples (`shots`: relevance.EXAMPLES, made-up tools of families in neither real-world
half, half of them near misses); `analyze` adds `both`, their mean (the gate of a provider with
relevance_with_examples).

`intent SRC OUT` adds a restatement of each request written by the model (INTENT_SYSTEM) and the
gate's readings with it (`lead_i`, `shots_i`, their mean `both_i`, `lead_o` on the restatement
alone, `four`, the mean of all four readings, and `both_o`, the mean of `lead`, `shots` and `lead_o`).
`dec SRC OUT` adds `dec` to rows collected before; `analyze` then adds `lead+dec` and `both+dec`
(the sums of two log-odds) and the band rule (the bar, and between 0 and the bar the decision's word).
`plain SRC OUT` adds `lead_h`/`shots_h` (`both_h`): the gate's readings with HTML docs read as text.
`anchor SRC OUT` adds each tool's own scale (`pos_l`/`pos_s`, `null_l`/`null_s`: the gate's readings
of a request the model writes for the tool and of an empty one); `analyze` then adds `both_m`
(above the midpoint of the two: 0 needs no fitting), `both_a` (the same as a fraction), `both_n`
and `both_p` (against either anchor alone).
`first SRC OUT` adds `lead_f`/`shots_f` (`both_f`): the gate's readings of the first sentence alone.
`realshots SRC OUT` adds `shots_r` (`both_r` with `lead`, `three_r` with `lead` and `shots`): the
gate's question after worked examples taken from the real-world calibration half itself, one
request that needs its tool and one near miss from each family, never from the row's own family
(so a family's reading is one of a tool list the examples never showed).
`channel SRC OUT` adds the request's own log-likelihood as the reply to prompts about each tool
(`can`, `cannot`; per row `generic`); `analyze` then adds `chan`, `contrast` and their sums with `both`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tqdm import tqdm  # noqa: E402

from flowcall.calling import relevance  # noqa: E402
from flowcall.calling.schema import SchemaWay  # noqa: E402
from flowcall.core.messages import Message, ModelRequest, ToolSpec  # noqa: E402

REQUEST_FIRST = (
    "User request: {request}\n\nFunction: {name}\nDescription: {description}\nParameters: {parameters}\n\n"
    "Can this function handle the request? Answer yes or no."
)


def whole_description(tool: ToolSpec, text: str, template: str = relevance.QUESTION) -> ModelRequest:
    parameters = ", ".join(tool.parameters.get("properties", {})) or "none"
    question = template.format(
        name=tool.name, description=tool.description, parameters=parameters, request=text
    )
    return ModelRequest(
        messages=[Message(role="system", content=relevance.SYSTEM), Message(role="user", content=question)],
        score_options=["yes", "no"],
        max_tokens=1,
    )


ASKS = (
    "Function: {name}: {summary}\nParameters: {parameters}\n\nUser request: {request}\n\n"
    "Is the user asking for what this function does? Answer yes or no."
)


def asks_request(tool: ToolSpec, text: str) -> ModelRequest:
    from flowcall.calling.shortlist import summary

    parameters = ", ".join(tool.parameters.get("properties", {})) or "none"
    question = ASKS.format(
        name=tool.name, summary=summary(tool, relevance.PURPOSE_MAX), parameters=parameters, request=text
    )
    return ModelRequest(
        messages=[Message(role="system", content=relevance.SYSTEM), Message(role="user", content=question)],
        score_options=["yes", "no"],
        max_tokens=1,
    )


def first_sentence_request(tool: ToolSpec, text: str) -> ModelRequest:
    from flowcall.calling.shortlist import summary

    return whole_description(
        tool.model_copy(update={"description": summary(tool, relevance.PURPOSE_MAX)}), text
    )


def collect_lead(src: Path, out: Path) -> None:
    """Add `lead`: the leading sentences that fit in PURPOSE_MAX characters (the gate now)."""
    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared()
    done = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    todo = list(rows())
    with out.open("w", encoding="utf-8") as sink:
        for row, (_s, _f, _c, _k, text, _m, tools, _e) in tqdm(list(zip(done, todo)), unit="item"):
            for scored, tool in zip(row["tools"], tools):
                scored["lead"] = relevance.margin(
                    provider.complete(relevance.relevance_request(tool, text)).scores
                )
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            sink.flush()


def collect_variants(src: Path, out: Path) -> None:
    """Per tool: `lead` (the gate as shipped) and `shots` (the same after worked examples);
    `dec` is copied from SRC when it has it. SRC only fixes the rows' order and labels."""
    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared()
    todo = list(rows())
    done = (
        [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
        if src.exists()
        else []
    )
    with out.open("w", encoding="utf-8") as sink:
        for i, (source, family, category, kind, text, _m, tools, expected) in enumerate(
            tqdm(todo, unit="item")
        ):
            per_tool = []
            for tool in tools:
                asked = relevance.relevance_request(tool, text)
                per_tool.append(
                    {
                        "name": tool.name,
                        "lead": relevance.margin(provider.complete(asked).scores),
                        "shots": relevance.margin(provider.complete(relevance.after_examples(asked)).scores),
                    }
                )
            row = {
                "source": source,
                "family": family,
                "category": category,
                "kind": kind,
                "question": text,
                "expected": expected,
                "tools": per_tool,
            }
            if i < len(done) and "dec" in done[i]:
                row["dec"] = done[i]["dec"]
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            sink.flush()


def extend_rows(src: Path, out: Path, add, provider: bool = True) -> None:
    """Rows collected before (same order as rows()), each with what `add(provider, row, text,
    tools, messages)` puts in it, written to OUT as they come."""
    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared() if provider else None
    done = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    todo = list(rows())
    assert len(done) == len(todo)
    with out.open("w", encoding="utf-8") as sink:
        for row, (_s, _f, _c, _k, text, messages, tools, _e) in tqdm(list(zip(done, todo)), unit="item"):
            add(provider, row, text, tools, messages)
            sink.write(json.dumps(row, ensure_ascii=False) + "\n")
            sink.flush()


def collect_more(src: Path, out: Path) -> None:
    """Add the short-description variants to rows collected before (same order as rows())."""

    def add(provider, row, text, tools, _messages):
        for scored, tool in zip(row["tools"], tools):
            scored["short"] = relevance.margin(provider.complete(first_sentence_request(tool, text)).scores)
            scored["asks"] = relevance.margin(provider.complete(asks_request(tool, text)).scores)

    extend_rows(src, out, add)


# A second set of worked examples for a third reading (`shots2`): made-up tools of families in
# neither real-world half and none of relevance.EXAMPLES, half of them near misses.
EXAMPLES_2 = [
    (
        "get_stock_quote",
        "Get the latest price, day change and volume of a stock by its ticker symbol.",
        "symbol, exchange",
        "how's NVDA doing today",
        "yes",
    ),
    (
        "get_stock_quote",
        "Get the latest price, day change and volume of a stock by its ticker symbol.",
        "symbol, exchange",
        "buy 10 shares of NVDA at market",
        "no",
    ),
    (
        "book_meeting_room",
        "Reserve a meeting room in the office for a time slot. Rooms hold 4 to 20 people.",
        "room, start, end, attendees",
        "need a room for 6 people tomorrow 2-3pm",
        "yes",
    ),
    (
        "book_meeting_room",
        "Reserve a meeting room in the office for a time slot. Rooms hold 4 to 20 people.",
        "room, start, end, attendees",
        "which rooms have a projector?",
        "no",
    ),
    (
        "translate_text",
        "把文本翻译成目标语言,支持中英日韩等 30 种语言。",
        "text, target_lang, source_lang",
        "帮我把'明天见'翻成日语",
        "yes",
    ),
    (
        "translate_text",
        "把文本翻译成目标语言,支持中英日韩等 30 种语言。",
        "text, target_lang, source_lang",
        "你好呀,最近怎么样",
        "no",
    ),
]


def collect_shots2(src: Path, out: Path) -> None:
    """Add `shots2`: the gate's question after EXAMPLES_2, to rows collected by `variants`."""
    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared()
    done = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    todo = list(rows())
    assert len(done) == len(todo)
    saved = relevance.EXAMPLES
    relevance.EXAMPLES = EXAMPLES_2
    try:
        with out.open("w", encoding="utf-8") as sink:
            for row, (_s, _f, _c, _k, text, _m, tools, _e) in tqdm(list(zip(done, todo)), unit="item"):
                for scored, tool in zip(row["tools"], tools):
                    asked = relevance.after_examples(relevance.relevance_request(tool, text))
                    scored["shots2"] = relevance.margin(provider.complete(asked).scores)
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                sink.flush()
    finally:
        relevance.EXAMPLES = saved


# `intent`: the request restated first, in one short sentence the model writes itself (the action
# and what it acts on), so that chatty, pasted or misspelt requests reach the
# gate's question in one plain form. Per tool: `lead_i`/`shots_i`, the gate's two readings of the
# request followed by the restatement, and `lead_o`, the plain reading of the restatement alone.
INTENT_SYSTEM = (
    "Say in one short English sentence what the user wants done: the action and what it acts on. "
    "Do not answer the request."
)
INTENT_PREFIX = "The user wants to"


def restate(provider, text: str) -> str:
    """The model's one-sentence restatement (its reply opened with INTENT_PREFIX; the first line)."""
    asked = ModelRequest(
        messages=[Message(role="system", content=INTENT_SYSTEM), Message(role="user", content=text)],
        max_tokens=40,
        assistant_prefix=INTENT_PREFIX,
    )
    lines = (provider.complete(asked).content or "").strip().splitlines()
    return " ".join(lines[0].split()) if lines else ""


def collect_intent(src: Path, out: Path) -> None:
    """Add `intent` per row and `lead_i`, `shots_i`, `lead_o` per tool to rows collected by `variants`."""

    def add(provider, row, text, tools, _messages):
        intent = row["intent"] = restate(provider, text)
        for scored, tool in zip(row["tools"], tools):
            asked = relevance.relevance_request(tool, f"{text}\n(In short: {intent})")
            scored["lead_i"] = relevance.margin(provider.complete(asked).scores)
            scored["shots_i"] = relevance.margin(provider.complete(relevance.after_examples(asked)).scores)
            scored["lead_o"] = relevance.margin(
                provider.complete(relevance.relevance_request(tool, intent)).scores
            )

    extend_rows(src, out, add)


# `anchor`: each tool's own scale, read once per tool (cacheable with the tool): the gate's two
# readings of a request the model writes for that tool (`pos_l`, `pos_s`) and of an empty request
# (`null_l`, `null_s`). `analyze` adds `both_a`, where the request's mean reading falls between the
# tool's empty-request and own-request readings (0 at the first, 1 at the second): a tool whose
# readings run low everywhere is read on its own scale, and the midpoint 0.5 needs no fitting.
ANCHOR_SYSTEM = (
    "Write one message that a user would send to an assistant with this function, asking for "
    "something the function does. Write only the message."
)


def anchor_request(provider, tool: ToolSpec) -> str:
    parameters = ", ".join(tool.parameters.get("properties", {})) or "none"
    asked = ModelRequest(
        messages=[
            Message(role="system", content=ANCHOR_SYSTEM),
            Message(
                role="user",
                content=f"Function: {tool.name}\nDescription: "
                f"{relevance.purpose(tool)}\nParameters: {parameters}",
            ),
        ],
        max_tokens=48,
    )
    lines = [line for line in (provider.complete(asked).content or "").strip().splitlines() if line.strip()]
    return " ".join(lines[0].strip().strip('"').split()) if lines else ""


def collect_anchor(src: Path, out: Path) -> None:
    """Add `anchor` (the written request), `pos_l`, `pos_s`, `null_l`, `null_s` per tool."""
    cache: dict[str, dict] = {}

    def readings(provider, tool: ToolSpec, text: str) -> tuple[float, float]:
        asked = relevance.relevance_request(tool, text)
        return (
            relevance.margin(provider.complete(asked).scores),
            relevance.margin(provider.complete(relevance.after_examples(asked)).scores),
        )

    def add(provider, row, _text, tools, _messages):
        for scored, tool in zip(row["tools"], tools):
            key = json.dumps(tool.model_dump(), sort_keys=True)
            if key not in cache:
                written = anchor_request(provider, tool)
                pos, null = readings(provider, tool, written), readings(provider, tool, "")
                cache[key] = {
                    "anchor": written,
                    "pos_l": pos[0],
                    "pos_s": pos[1],
                    "null_l": null[0],
                    "null_s": null[1],
                }
            scored.update(cache[key])

    extend_rows(src, out, add)


def collect_plain(src: Path, out: Path) -> None:
    """Add `lead_h`/`shots_h`: the gate's two readings with the description read as plain text
    (doc_text.plain, as the decision's listing reads it); read again only where the docs look like HTML."""
    from flowcall.calling.doc_text import _LOOKS_HTML, plain

    def add(provider, row, text, tools, _messages):
        for scored, tool in zip(row["tools"], tools):
            if _LOOKS_HTML.search(tool.description or ""):
                as_text = tool.model_copy(update={"description": plain(tool.description)})
                asked = relevance.relevance_request(as_text, text)
                scored["lead_h"] = relevance.margin(provider.complete(asked).scores)
                scored["shots_h"] = relevance.margin(
                    provider.complete(relevance.after_examples(asked)).scores
                )
            else:
                scored["lead_h"], scored["shots_h"] = scored["lead"], scored["shots"]

    extend_rows(src, out, add)


# `channel`: the request read as text the tool explains, not as a question put to the model
# (the "noisy channel" reading of zero-shot classification). Per tool, the request's
# log-likelihood as the reply to "write a message this function can handle" (`can`) and to
# "write a message about the same things that this function cannot handle" (`cannot`); per item,
# as the reply to "write a message to an assistant" (`generic`). `analyze` adds `chan`
# (can - generic: how much the tool explains the request) and `contrast` (can - cannot: is it
# likelier as a request the tool handles than as a near miss; 0 needs no fitting).
CHANNEL_SYSTEM = "You write messages that users send to an assistant. Write only the message."
CHANNEL_CAN = (
    "The assistant has this function:\nFunction: {name}\nDescription: {description}\n"
    "Parameters: {parameters}\n\nWrite a message a user might send that this function can handle."
)
CHANNEL_CANNOT = (
    "The assistant has this function:\nFunction: {name}\nDescription: {description}\n"
    "Parameters: {parameters}\n\nWrite a message a user might send on a related subject that this "
    "function cannot handle."
)
CHANNEL_GENERIC = "Write a message a user might send to an assistant."


class RequestLikelihood:
    """log P(text | prompt) as the assistant's reply, on a model of its own that keeps every
    position's logits (the shared provider keeps only the last), reusing the longest prefix."""

    def __init__(self, n_ctx: int = 4096):
        from llama_cpp import Llama

        from flowcall.core import config
        from flowcall.providers import local_model

        self.llm = Llama(
            model_path=str(local_model.require(config.model_path())),
            n_ctx=n_ctx,
            logits_all=True,
            n_threads=config.model_threads(),
            n_threads_batch=config.model_threads(),
            verbose=False,
            seed=42,
            n_batch=256,
            n_ubatch=256,
        )

    def __call__(self, system: str, user: str, text: str) -> float:
        import numpy as np

        head = (
            f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )
        context = self.llm.tokenize(head.encode(), add_bos=False, special=True)
        reply = self.llm.tokenize(text.encode(), add_bos=False, special=False)
        reply = reply[: self.llm.n_ctx() - len(context) - 2] + self.llm.tokenize(
            b"<|im_end|>", add_bos=False, special=True
        )
        tokens = context + reply
        common = 0
        for a, b in zip(self.llm._input_ids[: self.llm.n_tokens], tokens):
            if a != b:
                break
            common += 1
        self.llm.n_tokens = min(common, len(context))  # eval drops the KV cache from here on
        self.llm.eval(tokens[self.llm.n_tokens :])
        logits = np.asarray(self.llm.scores[len(context) - 1 : len(tokens) - 1], dtype=np.float64)
        peak = logits.max(axis=1, keepdims=True)
        logprobs = logits - (peak + np.log(np.exp(logits - peak).sum(axis=1, keepdims=True)))
        return round(float(logprobs[np.arange(len(reply)), reply].sum()), 4)


def collect_channel(src: Path, out: Path) -> None:
    """Add `generic` per row and `can`, `cannot` per tool to rows collected before."""
    score = RequestLikelihood()

    def add(_provider, row, text, tools, _messages):
        row["generic"] = score(CHANNEL_SYSTEM, CHANNEL_GENERIC, text)
        for scored, tool in zip(row["tools"], tools):
            fields = {
                "name": tool.name,
                "description": relevance.purpose(tool),
                "parameters": ", ".join(tool.parameters.get("properties", {})) or "none",
            }
            scored["can"] = score(CHANNEL_SYSTEM, CHANNEL_CAN.format(**fields), text)
            scored["cannot"] = score(CHANNEL_SYSTEM, CHANNEL_CANNOT.format(**fields), text)

    extend_rows(src, out, add, provider=False)


def collect_first(src: Path, out: Path) -> None:
    """Add `lead_f`/`shots_f` (`both_f`): the gate's two readings with the description cut to its first
    sentence, read as text (shortlist.summary): what the tool is for, without the caveats that follow."""
    from flowcall.calling.shortlist import summary

    def add(provider, row, text, tools, _messages):
        for scored, tool in zip(row["tools"], tools):
            first = tool.model_copy(update={"description": summary(tool, relevance.PURPOSE_MAX)})
            asked = relevance.relevance_request(first, text)
            scored["lead_f"] = relevance.margin(provider.complete(asked).scores)
            scored["shots_f"] = relevance.margin(provider.complete(relevance.after_examples(asked)).scores)

    extend_rows(src, out, add)


def calibration_examples() -> dict[str, list[tuple]]:
    """Per real-world family, the (name, description, parameters, request, answer) examples of
    the other families: each family's first single-call item with its tool ("yes") and its first
    no-fit item with its first tool ("no"), families interleaved in file order."""
    from flowcall.core.datasets import parse_jsonl

    items, _ = parse_jsonl((ROOT / "benchmarks/data/realworld/calibration.jsonl").read_text(encoding="utf-8"))
    per_family: dict[str, list[tuple]] = {}
    for item in items:
        family, rest = item.id.split("/", 1)
        kind = "yes" if rest.startswith("single-") else "no" if rest.startswith("nofit-") else None
        chosen = per_family.setdefault(family, [])
        if kind is None or any(answer == kind for *_, answer in chosen):
            continue
        tool = item.tools[0].spec()
        chosen.append(
            (
                tool.name,
                relevance.purpose(tool),
                ", ".join(tool.parameters.get("properties", {})) or "none",
                item.question,
                kind,
            )
        )
    families = list(per_family)
    return {
        family: [
            example
            for other in families
            if other != family
            for example in sorted(per_family[other], key=lambda e: e[4] != "yes")
        ]
        for family in [*families, "bfcl"]
    }


def collect_realshots(src: Path, out: Path) -> None:
    """Add `shots_r`: the gate's question after calibration_examples() of the other families."""
    examples = calibration_examples()

    def add(provider, row, text, tools, _messages):
        saved, relevance.EXAMPLES = relevance.EXAMPLES, examples[row["family"]]
        try:
            for scored, tool in zip(row["tools"], tools):
                asked = relevance.after_examples(relevance.relevance_request(tool, text))
                scored["shots_r"] = relevance.margin(provider.complete(asked).scores)
        finally:
            relevance.EXAMPLES = saved

    extend_rows(src, out, add)


def rows():
    """(source, family, category, kind, question, messages, tools, expected tool names)"""
    from flowcall.core.datasets import parse_jsonl
    from flowcall.eval import load_cases

    args = rows.args
    for name in ("irrelevance", "simple", "multiple", "parallel", "parallel_multiple"):
        count = args.irrelevance if name == "irrelevance" else args.per_category
        for case in load_cases(name)[::2][:count]:
            expected = sorted(
                {
                    shown
                    for shown, original in case.name_map.items()
                    for answer in case.ground_truth
                    if original in answer
                }
            )
            yield (
                "bfcl",
                "bfcl",
                name,
                "quiet" if name == "irrelevance" else "call",
                relevance.last_user_text(case.messages),
                case.messages,
                case.tools,
                expected,
            )
    items, problems = parse_jsonl(
        (ROOT / "benchmarks/data/realworld/calibration.jsonl").read_text(encoding="utf-8")
    )
    assert not problems, problems[:3]
    for item in items:
        family, rest = item.id.split("/", 1)
        category = rest.rsplit("-", 1)[0]
        expected = sorted({c.name for c in item.expect_calls or []})
        yield (
            "realworld",
            family,
            category,
            "quiet" if item.expect_no_call else "call",
            item.question,
            [Message(role="user", content=item.question)],
            [t.spec() for t in item.tools],
            expected,
        )


def decision_scores(provider, messages: list[Message], tools: list[ToolSpec]) -> dict[str, float]:
    """logP of "tool" and "answer" as the first word of the schema way's decision after '{"'."""
    asked = ModelRequest(messages=messages, tools=tools, tool_choice="auto")
    sent = (
        SchemaWay()
        .prepare(asked, provider.capabilities)
        .model_copy(
            update={
                "assistant_prefix": '{"',
                "response_format": None,
                "score_options": ["tool", "answer"],
                "max_tokens": 1,
            }
        )
    )
    return provider.complete(sent).scores or {}


def collect_dec(src: Path, out: Path) -> None:
    """Add `dec` (the decision's own "no call" option) to rows collected before."""

    def add(provider, row, _text, tools, messages):
        scores = decision_scores(provider, messages, tools)
        row["dec"] = scores.get("tool", 0.0) - scores.get("answer", 0.0)

    extend_rows(src, out, add)


def collect(out: Path) -> None:
    from flowcall.providers.local import LocalProvider

    provider = LocalProvider.shared()
    null_cache: dict[str, float] = {}
    todo = list(rows())
    with out.open("w", encoding="utf-8") as sink:
        for source, family, category, kind, text, messages, tools, expected in tqdm(todo, unit="item"):
            per_tool = []
            for tool in tools:
                key = json.dumps(tool.model_dump(), sort_keys=True)
                if key not in null_cache:
                    null_cache[key] = relevance.margin(provider.complete(whole_description(tool, "")).scores)
                per_tool.append(
                    {
                        "name": tool.name,
                        "fr": relevance.margin(provider.complete(whole_description(tool, text)).scores),
                        "rf": relevance.margin(
                            provider.complete(whole_description(tool, text, REQUEST_FIRST)).scores
                        ),
                        "null": null_cache[key],
                    }
                )
            scores = decision_scores(provider, messages, tools)
            sink.write(
                json.dumps(
                    {
                        "source": source,
                        "family": family,
                        "category": category,
                        "kind": kind,
                        "question": text,
                        "expected": expected,
                        "tools": per_tool,
                        "dec": scores.get("tool", 0.0) - scores.get("answer", 0.0),
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
            sink.flush()


# --- analysis ------------------------------------------------------------------------------


def item_score(row: dict, method: str) -> float:
    """One number per item: how strongly the best tool fits, by `method`."""
    tools = row["tools"]
    if method == "dec":
        return row["dec"]
    if method.endswith("+dec"):  # two log-odds read as independent evidence: their sum
        return max(t[method.removesuffix("+dec")] for t in tools) + row["dec"]
    if method.endswith("-null"):
        base = method.removesuffix("-null")
        return max(t[base] - t["null"] for t in tools)
    return max(t[method] for t in tools)


def balanced(quiet: list[float], call: list[float], t: float) -> float:
    return (sum(m <= t for m in quiet) / len(quiet) + sum(m > t for m in call) / len(call)) / 2


def best_threshold(rows_: list[dict], method: str) -> float:
    quiet = [item_score(r, method) for r in rows_ if r["kind"] == "quiet"]
    call = [item_score(r, method) for r in rows_ if r["kind"] == "call"]
    candidates = sorted(set(round(v, 2) for v in quiet + call))
    return max(candidates, key=lambda t: balanced(quiet, call, t))


def scores_at(rows_: list[dict], method: str, t: float) -> tuple[float, float, float]:
    quiet = [item_score(r, method) for r in rows_ if r["kind"] == "quiet"]
    call = [item_score(r, method) for r in rows_ if r["kind"] == "call"]
    q = sum(m <= t for m in quiet) / len(quiet)
    c = sum(m > t for m in call) / len(call)
    return q, c, (q + c) / 2


def auc(rows_: list[dict], method: str) -> float:
    quiet = [item_score(r, method) for r in rows_ if r["kind"] == "quiet"]
    call = [item_score(r, method) for r in rows_ if r["kind"] == "call"]
    wins = sum((c > q) + 0.5 * (c == q) for c in call for q in quiet)
    return wins / (len(call) * len(quiet))


def top_pick(rows_: list[dict], method: str) -> float:
    """Of calling items with several tools, how often the best-scored tool is an expected one."""
    several = [r for r in rows_ if r["kind"] == "call" and len(r["tools"]) > 1 and r["expected"]]
    if not several or method == "dec":  # dec speaks of the item, not of one tool
        return float("nan")
    base = method.removesuffix("-null").removesuffix("+dec")
    key = (lambda t: t[base] - t["null"]) if method.endswith("-null") else (lambda t: t[base])
    return sum(max(r["tools"], key=key)["name"] in r["expected"] for r in several) / len(several)


def analyze(path: Path) -> None:
    data = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in data:
        for tool in row["tools"]:
            if "lead" in tool and "shots" in tool:
                tool["both"] = (tool["lead"] + tool["shots"]) / 2
            if "lead_i" in tool:
                tool["both_i"] = (tool["lead_i"] + tool["shots_i"]) / 2
                tool["four"] = (tool["lead"] + tool["shots"] + tool["lead_i"] + tool["shots_i"]) / 4
                tool["both_o"] = (tool["lead"] + tool["shots"] + tool["lead_o"]) / 3
            if "lead_h" in tool:
                tool["both_h"] = (tool["lead_h"] + tool["shots_h"]) / 2
            if "pos_l" in tool:
                pos, null = (tool["pos_l"] + tool["pos_s"]) / 2, (tool["null_l"] + tool["null_s"]) / 2
                tool["both_m"] = tool["both"] - (pos + null) / 2  # above the tool's own midpoint
                tool["both_a"] = (tool["both"] - null) / max(pos - null, 0.1) - 0.5
                tool["both_n"] = tool["both"] - null
                tool["both_p"] = tool["both"] - pos
            if "lead_f" in tool:
                tool["both_f"] = (tool["lead_f"] + tool["shots_f"]) / 2
            if "can" in tool:
                tool["chan"] = tool["can"] - row["generic"]
                tool["contrast"] = tool["can"] - tool["cannot"]
                if "both" in tool:
                    tool["both+con"] = tool["both"] + tool["contrast"]
                    tool["both+chan"] = tool["both"] + tool["chan"] / 10
            if "shots_r" in tool:
                tool["both_r"] = (tool["lead"] + tool["shots_r"]) / 2
                tool["three_r"] = (tool["lead"] + tool["shots"] + tool["shots_r"]) / 3
            if "shots2" in tool:
                tool["three"] = (tool["lead"] + tool["shots"] + tool["shots2"]) / 3
    bfcl = [r for r in data if r["source"] == "bfcl"]
    real = [r for r in data if r["source"] == "realworld"]
    families = sorted({r["family"] for r in real})
    methods = [
        m
        for m in [
            "fr",
            "rf",
            "null",
            "fr-null",
            "rf-null",
            "dec",
            "short",
            "asks",
            "lead",
            "shots",
            "both",
            "shots2",
            "three",
            "lead_i",
            "shots_i",
            "both_i",
            "lead_o",
            "four",
            "both_o",
            "lead+dec",
            "both+dec",
            "both_m",
            "both_a",
            "both_n",
            "both_p",
            "both_h",
            "chan",
            "contrast",
            "both+con",
            "both+chan",
            "lead_f",
            "shots_f",
            "both_f",
            "shots_r",
            "both_r",
            "three_r",
        ]
        if ("dec" in m and "dec" in data[0] and m.split("+")[0] in ("dec", *data[0]["tools"][0]))
        or m.removesuffix("-null") in data[0]["tools"][0]
    ]
    print(
        f"{len(bfcl)} BFCL even cases, {len(real)} real-world calibration items in {len(families)} families"
    )
    print(
        f"{'method':8} {'AUC bfcl':>8} {'AUC real':>8} {'pick bfcl':>9} {'pick real':>9}  threshold-free "
        "(0): bfcl q/c/bal | real q/c/bal"
    )
    for m in methods:
        qb = scores_at(bfcl, m, 0.0)
        qr = scores_at(real, m, 0.0)
        print(
            f"{m:8} {auc(bfcl, m):8.3f} {auc(real, m):8.3f} {top_pick(bfcl, m):9.2f} "
            f"{top_pick(real, m):9.2f}  {qb[0]:.0%}/{qb[1]:.0%}/{qb[2]:.1%} | "
            f"{qr[0]:.0%}/{qr[1]:.0%}/{qr[2]:.1%}"
        )
    print(
        "\nleave-one-family-out: threshold fitted on BFCL even + the other families, scored on the one left "
        "out (pooled over families); and BFCL-only threshold scored on all real-world"
    )
    for m in methods:
        held = []  # (kind, score, threshold)
        for fam in families:
            fit = bfcl + [r for r in real if r["family"] != fam]
            t = best_threshold(fit, m)
            held += [(r, t) for r in real if r["family"] == fam]
        quiet = [item_score(r, m) <= t for r, t in held if r["kind"] == "quiet"]
        call = [item_score(r, m) > t for r, t in held if r["kind"] == "call"]
        tb = best_threshold(bfcl, m)
        qr = scores_at(real, m, tb)
        print(
            f"  {m:8} LOFO real q/c/bal "
            f"{sum(quiet) / len(quiet):.0%}/{sum(call) / len(call):.0%}/"
            f"{(sum(quiet) / len(quiet) + sum(call) / len(call)) / 2:.1%} "
            f"  BFCL-fit t={tb:5.2f}: real {qr[0]:.0%}/{qr[1]:.0%}/{qr[2]:.1%}   medians quiet/call real "
            f"{statistics.median(item_score(r, m) for r in real if r['kind'] == 'quiet'):.2f}/"
            f"{statistics.median(item_score(r, m) for r in real if r['kind'] == 'call'):.2f} "
            f"  LOFO bars {min(t for _, t in held):.2f}..{max(t for _, t in held):.2f}"
        )
    print(
        "\nthe bar on the whole mix: the best mean of the two "
        "sources' balanced accuracies (how call_margin is chosen)"
    )
    for m in methods:
        candidates = sorted(set(round(item_score(r, m), 2) for r in data))
        t = max(candidates, key=lambda c: (scores_at(bfcl, m, c)[2] + scores_at(real, m, c)[2]) / 2)
        qb, qr = scores_at(bfcl, m, t), scores_at(real, m, t)
        print(
            f"  {m:8} bar {t:5.2f}: BFCL even {qb[0]:.0%}/{qb[1]:.0%}/{qb[2]:.1%}   real "
            f"{qr[0]:.0%}/{qr[1]:.0%}/{qr[2]:.1%}"
        )


def band(data: list[dict]) -> None:
    """The gate's bar, and between the veto (0) and the bar the decision's own first word: call
    there when "tool" is likelier than "answer" (no second threshold)."""
    bfcl = [r for r in data if r["source"] == "bfcl"]
    real = [r for r in data if r["source"] == "realworld"]

    def rates(rows_: list[dict], base: str, t: float) -> tuple[float, float, float]:
        calls = {id(r): item_score(r, base) > t or (item_score(r, base) > 0 and r["dec"] > 0) for r in rows_}
        q = [not calls[id(r)] for r in rows_ if r["kind"] == "quiet"]
        c = [calls[id(r)] for r in rows_ if r["kind"] == "call"]
        return sum(q) / len(q), sum(c) / len(c), (sum(q) / len(q) + sum(c) / len(c)) / 2

    def fit(rows_: list[dict], base: str) -> float:
        b = [r for r in rows_ if r["source"] == "bfcl"]
        w = [r for r in rows_ if r["source"] == "realworld"]
        candidates = sorted(set(round(item_score(r, base), 2) for r in rows_ if item_score(r, base) > 0))
        return max(candidates, key=lambda t: (rates(b, base, t)[2] + rates(w, base, t)[2]) / 2)

    print("\nthe bar, and in the band (0, bar] the decision's own word (call when logP(tool) > logP(answer))")
    for base in ("lead", "both"):
        if base not in data[0]["tools"][0]:
            continue
        t = fit(data, base)
        qb, qr = rates(bfcl, base, t), rates(real, base, t)
        held_q, held_c = [], []
        for fam in sorted({r["family"] for r in real}):
            tf = fit(bfcl + [r for r in real if r["family"] != fam], base)
            q, c, _ = rates([r for r in real if r["family"] == fam], base, tf)
            n_q = sum(r["kind"] == "quiet" for r in real if r["family"] == fam)
            n_c = sum(r["kind"] == "call" for r in real if r["family"] == fam)
            held_q.append((q, n_q))
            held_c.append((c, n_c))
        lq = sum(q * n for q, n in held_q) / sum(n for _, n in held_q)
        lc = sum(c * n for c, n in held_c) / sum(n for _, n in held_c)
        print(
            f"  {base:6} bar {t:5.2f}: BFCL even {qb[0]:.0%}/{qb[1]:.0%}/{qb[2]:.1%}   real "
            f"{qr[0]:.0%}/{qr[1]:.0%}/{qr[2]:.1%}   family left out {lq:.0%}/{lc:.0%}/{(lq + lc) / 2:.1%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "command",
        choices=[
            "collect",
            "more",
            "lead",
            "variants",
            "shots2",
            "intent",
            "dec",
            "anchor",
            "plain",
            "channel",
            "first",
            "realshots",
            "analyze",
        ],
    )
    parser.add_argument("path", type=Path)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--per-category", type=int, default=20)
    parser.add_argument("--irrelevance", type=int, default=80)
    args = parser.parse_args()
    rows.args = args
    if args.command == "collect":
        collect(args.path)
    elif args.command == "more":
        collect_more(args.path, args.out)
    elif args.command == "lead":
        collect_lead(args.path, args.out)
    elif args.command == "variants":
        collect_variants(args.path, args.out)
    elif args.command == "dec":
        collect_dec(args.path, args.out)
    elif args.command == "plain":
        collect_plain(args.path, args.out)
    elif args.command == "anchor":
        collect_anchor(args.path, args.out)
    elif args.command == "first":
        collect_first(args.path, args.out)
    elif args.command == "realshots":
        collect_realshots(args.path, args.out)
    elif args.command == "channel":
        collect_channel(args.path, args.out)
    elif args.command == "intent":
        collect_intent(args.path, args.out)
    elif args.command == "shots2":
        collect_shots2(args.path, args.out)
    else:
        analyze(args.path)
        data = [
            json.loads(line) for line in args.path.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        if "dec" in data[0]:
            for row in data:
                for tool in row["tools"]:
                    if "shots" in tool:
                        tool["both"] = (tool["lead"] + tool["shots"]) / 2
            band(data)


if __name__ == "__main__":
    main()
