"""What the studio's pages share: the service, the example flows, and how a step or an answer
is drawn. Pages stay thin; everything that is not drawing lives in the flowcall package.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from typing import Any

import streamlit as st

from flowcall.core.spec import HTTPToolSource, MCPServerConfig
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, Run, RunStatus, Step, StepKind, is_reused
from flowcall.engine.provenance import unbacked_value
from flowcall.rendering import held_notes, provenance_rows, provenance_summary, reused_from, source_line
from flowcall.service.front import FlowCall
from flowcall.trust.consent import KINDS, TrustItem

# A question per example flow, so a newcomer can press Run at once.
EXAMPLE_QUESTIONS = {
    "commute-weather": "我明天要在成都上下班通勤,会下雨吗?",
    "create-task": "添加任务:写周报,优先级高,截止 2026-11-27",
    "current-time": "现在几点了?",
    "employee-lookup": "张三今年多大了?",
    "clean-data": "Load orders_sample.csv and drop the rows with missing values.",
}


# Where the API page keeps a key it just made, the one time it is shown: until the person hides
# it, or opens another page (app.py drops it then).
NEW_KEY_STATE = "api:new-key"

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
# GFM turns bare URLs, www. names and e-mail addresses into links even when their punctuation is
# escaped (remark-gfm links them after parsing), so a word joiner (U+2060, invisible) is put
# inside each trigger: "://", "www." and "@".
_AUTOLINK = re.compile(r"://|www(?=\.)|@", re.IGNORECASE)


def md(value: Any) -> str:
    """Text from a model, a tool, an MCP server, a flow or a run file, made safe to put into
    Markdown (st.markdown, captions, alerts, labels, metrics): every ASCII punctuation
    character is backslash-escaped, so it shows as written and makes no link, image, heading,
    emoji, colour or formula, and bare URLs are kept from becoming links."""
    text = _AUTOLINK.sub(lambda m: m.group(0) + "\u2060", str(value))
    return _PUNCTUATION.sub(r"\\\1", text).replace("\n", "  \n")  # two spaces: keep the line break


WARMING_NOTE = (
    "The embedded model's prompt cache is being warmed in the background. Runs on it work "
    "meanwhile; until it is done they read their whole prompt, so they are slower."
)


def service() -> FlowCall:
    return FlowCall.open()  # cheap: the store behind it is opened once per database URL


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def step_label(step: Step) -> str:
    """The step's heading, as Markdown: its name, arguments and error code are escaped."""
    what = step.name or ""
    if step.kind == StepKind.TOOL_CALL:
        what += "(" + json.dumps(step.arguments or {}, ensure_ascii=False)[:60] + ")"
    flag = f" ⚠ {md(step.error_code)}" if step.error_code else ""
    return f"[{step.seq}] {step.kind.value} · {md(what)}{flag}"


def steps_table(run: Run) -> list[dict[str, Any]]:
    """One row per step; a step a re-run reused has no latency here (its note says from which
    run): this run spent no time on it."""
    return [
        {
            "seq": s.seq,
            "round": s.round,
            "kind": s.kind.value,
            "name": s.name,
            "way": s.calling_way,
            "error": s.error_code,
            "tokens in": s.tokens_in,
            "tokens out": s.tokens_out,
            "latency ms": None if is_reused(s) else round(s.latency_ms, 1),
            "note": s.note,
        }
        for s in run.steps
    ]


def show_step(step: Step) -> None:
    """Everything recorded for one step: the exact request, the prompt the local model read,
    the response, the calls, the results, errors, tokens and time."""
    _step_figures(step)
    if step.error_code:
        st.error(md(f"{step.error_code}: {step.error_message or ''}"))
    if step.request:
        _show_request(step)
    if step.rendered_prompt:
        with st.expander("Rendered prompt (what the local model read)"):
            st.code(step.rendered_prompt, language=None)
    if step.tool_calls:
        st.markdown("**Tool calls**")
        st.code(as_json(step.tool_calls), language="json")
    if step.arguments is not None:
        st.markdown("**Arguments**")
        st.code(as_json(step.arguments), language="json")
    if step.result is not None:
        st.markdown("**Result**" if step.kind == StepKind.TOOL_CALL else "**Text**")
        st.code(step.result if isinstance(step.result, str) else as_json(step.result), language="json")
    if step.response:
        with st.expander("Response (raw)"):
            st.code(as_json(step.response), language="json")
    if step.retries:
        with st.expander(f"Retries ({len(step.retries)})"):
            st.code(as_json(step.retries), language="json")


def _step_figures(step: Step) -> None:
    """Tokens, time and round, then what kind of step it was."""
    cols = st.columns(4)
    cols[0].metric("Tokens in", step.tokens_in)
    cols[1].metric("Tokens out", step.tokens_out)
    if is_reused(step):
        cols[2].metric(
            "Latency",
            "reused",
            help=f"Reused from run {md(reused_from(step))}: it took its time there, not in this run",
        )
    else:
        cols[2].metric("Latency", f"{step.latency_ms / 1000:.2f} s")
    cols[3].metric("Round", step.round)
    st.caption(
        md(
            f"{step.kind.value} · {step.name or ''} · way: {step.calling_way or '-'}"
            + (f" · {step.note}" if step.note else "")
        )
    )


def _show_request(step: Step) -> None:
    """The request exactly as sent: its settings, messages and tools, then whatever else it held."""
    request = step.request
    with st.expander("Request (exactly as sent)", expanded=step.kind != StepKind.TOOL_CALL):
        for held in held_notes(step):  # enforced outside the request: said beside it, not added to it
            st.info(md(f"Not in the request: {held}."), icon=":material/lock:")
        parts = {
            k: request[k] for k in ("tool_choice", "parallel_tool_calls", "response_format") if k in request
        }
        if parts:
            st.code(as_json(parts), language="json")
        if "messages" in request:
            st.markdown("**messages**")
            st.code(as_json(request["messages"]), language="json")
        if "tools" in request:
            st.markdown(f"**tools** ({len(request['tools'])})")
            st.code(as_json(request["tools"]), language="json")
        shown = ("messages", "tools", *parts, *(("prompt",) if step.rendered_prompt else ()))
        rest = {k: v for k, v in request.items() if k not in shown}  # the prompt has its own expander
        if rest:
            st.code(as_json(rest), language="json")


# Words in a key that say its number is a share of one (rain_probability, confidence): only
# those read better as a percentage. A price of 0.5 or a distance of 0.7 km is not 50% or 70%.
_SHARE_WORDS = {
    "probability",
    "probabilities",
    "prob",
    "ratio",
    "ratios",
    "percent",
    "percentage",
    "pct",
    "share",
    "confidence",
}


def _is_share(key: str | None) -> bool:
    words = re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", key or "").lower())
    return any(word in _SHARE_WORDS for word in words)


def _card_value(value: Any, key: str | None = None) -> str:
    """A value for Markdown: numbers and yes/no as FlowCall formats them, text escaped. A
    number between 0 and 1 shows as a percentage only where `key` says it is a share of one."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and 0 <= value <= 1 and _is_share(key):
        return f"{value:.0%}"
    if isinstance(value, (int, float)):
        return str(value)
    return md(value)


UNBACKED = "⚠ from the model"  # an answer value no tool result or question gave


def _pointer(at: str, key: Any) -> str:
    """A JSON Pointer one level down (RFC 6901: "~" and "/" in a key escaped)."""
    return f"{at}/{str(key).replace('~', '~0').replace('/', '~1')}"


def answer_card(
    answer: dict[str, Any], sources: dict[str, dict[str, Any]] | None = None, at: str = ""
) -> None:
    """A structured answer as a card (the seeds' commute weather card): short fields as
    metrics, nested objects as their own rows, long text as text. Every key and value is
    the model's text, so all of it goes through `md`. With `sources` (provenance entries by
    JSON Pointer), each value says on hover where it came from; one only the model gave is
    marked ⚠."""
    src = _Provenance(sources or {}, at)
    with st.container(border=True):
        flat = {k: v for k, v in answer.items() if not isinstance(v, (dict, list))}
        _card_title(flat, src)
        _card_fields(flat, src)
        _card_nested(answer, src)


@dataclass
class _Provenance:
    """Where a card's values came from: provenance entries by JSON Pointer, the card's own
    pointer `at`. `origin` is said on hover; a value only the model gave is `unbacked`, and
    marked on the card itself."""

    sources: dict[str, dict[str, Any]]
    at: str

    def origin(self, key: Any, where: str | None = None) -> str | None:
        entry = self.sources.get(_pointer(self.at if where is None else where, key))
        return md(source_line(entry)) if entry is not None else None

    def unbacked(self, key: Any, where: str | None = None) -> bool:
        entry = self.sources.get(_pointer(self.at if where is None else where, key))
        return entry is not None and unbacked_value(entry)


def _card_title(flat: dict[str, Any], src: _Provenance) -> None:
    """A title, date or name field as the card's heading (taken out of `flat`)."""
    title_key = next((k for k in ("title", "location", "name", "city") if k in flat), None)
    if title_key:
        title = [title_key, *(["date"] if "date" in flat else [])]
        flag = f" {UNBACKED[0]}" if any(src.unbacked(k) for k in title) else ""
        st.subheader(
            md(" · ".join(str(flat.pop(k)) for k in title)) + flag,
            help="  \n".join(filter(None, map(src.origin, title))) or None,
        )


def _card_fields(flat: dict[str, Any], src: _Provenance) -> None:
    """The flat fields: metrics for numbers, yes/no and words; sentences as text (a metric cuts them off)."""
    short = {k: v for k, v in flat.items() if not isinstance(v, str) or len(v) <= 10}
    for chunk in range(0, len(short), 4):
        cols = st.columns(4)
        for col, (key, value) in zip(cols, list(short.items())[chunk : chunk + 4]):
            col.metric(
                md(key.replace("_", " ")),
                _card_value(value, key),
                help=src.origin(key),
                delta=UNBACKED if src.unbacked(key) else None,
                delta_color="orange",
                delta_arrow="off",
            )
    for key, value in flat.items():
        if key not in short:
            flag = f" · *{UNBACKED}*" if src.unbacked(key) else ""
            st.markdown(
                f"**{md(key.replace('_', ' '))}**: {_card_value(value, key)}{flag}", help=src.origin(key)
            )


def _card_nested(answer: dict[str, Any], src: _Provenance) -> None:
    """Nested objects as cards of their own, lists as bullets."""
    for key, value in answer.items():
        if isinstance(value, dict):
            st.markdown(f"**{md(key.replace('_', ' '))}**")
            answer_card(value, src.sources, _pointer(src.at, key))
        elif isinstance(value, list):
            st.markdown(f"**{md(key.replace('_', ' '))}**")
            inner = _pointer(src.at, key)
            for index, item in enumerate(value):
                text = md(as_json(item)) if isinstance(item, (dict, list)) else _card_value(item, key)
                flag = f" · *{UNBACKED}*" if src.unbacked(index, inner) else ""
                st.markdown(f"- {text}{flag}", help=src.origin(index, inner))


def show_outcome(run: Run) -> None:
    """A run whose answer no tool result backs, or only partly: a warning with the reasons,
    never a plain success."""
    if run.outcome is None:
        return
    reasons = "".join(f"\n- {md(reason)}" for reason in run.outcome_reasons)
    head = (
        "**Answered without tools**: no tool result backs this answer."
        if run.outcome == ANSWERED_WITHOUT_TOOLS
        else "**Partly done**: not every part of the request was done by a tool."
    )
    st.warning(head + (f"\n{reasons}" if reasons else ""), icon=":material/warning:")


def show_provenance(run: Run) -> None:
    """Under the answer: how much of it tools back, and where each value came from (a click)."""
    line = provenance_summary(run.provenance)
    if line is None:
        return
    st.caption(md(line))
    with st.expander("Where each value came from"):
        st.table(
            [
                {
                    "field": md(row["field"]),
                    "value": md(row["value"]),
                    "source": md(
                        row["source"]
                        if row["source"] not in ("model", "wrong source", "mixed")
                        else f"⚠ {row['source']}"
                    ),
                    "where": md(row["where"]),
                }
                for row in provenance_rows(run.provenance)
            ]
        )


def show_answer(run: Run) -> None:
    if run.status == RunStatus.FAILED:
        st.error(f"The run failed: {md(run.error)}. Open it in Runs to see the step that failed.")
        return
    if run.status != RunStatus.SUCCEEDED:
        return
    show_outcome(run)
    if isinstance(run.final_answer, dict):
        sources = {entry.get("path"): entry for entry in run.provenance or [] if entry.get("path")}
        card, raw = st.columns([3, 2])
        with card:
            answer_card(run.final_answer, sources)
        with raw:
            st.caption("Raw JSON (valid against the polish schema)")
            st.json(run.final_answer)
    elif isinstance(run.final_answer, list):
        st.json(run.final_answer)
    elif run.outcome is not None:  # not green: nothing, or not everything, backs it
        with st.container(border=True):
            st.markdown(md(run.final_answer) if run.final_answer else "(empty answer)")
    else:
        st.success(md(run.final_answer) if run.final_answer else "(empty answer)")
    show_provenance(run)


# ------------------------------------------------------------------ the Flows page's editor


def reach_lines(servers: list[MCPServerConfig], sources: list[HTTPToolSource]) -> list[str]:
    """What each MCP server and OpenAPI source of a flow would start or reach, plain text."""
    lines = []
    for server in servers:
        what = (
            f"starts the program {json.dumps(server.command)}"
            if server.command
            else f"connects to {server.url}"
        )
        env = f", environment {', '.join(sorted(server.env))}" if server.env else ""
        trusted = "; TRUSTED: its tools run without asking a person" if server.trusted else ""
        lines.append(f"MCP server '{server.name}' {what}{env}{trusted}")
    for source in sources:
        target = f", requests to {source.base_url}" if source.base_url else ""
        hosts = (
            f"; ALLOW_HOSTS: may reach the internal hosts {', '.join(source.allow_hosts)}"
            if source.allow_hosts
            else ""
        )
        lines.append(f"HTTP tools '{source.name}' load {source.openapi}{target}{hosts}")
    return lines


# ------------------------------------------------------------------ consent (the Run page)


def show_trust_items(items: list[TrustItem]) -> None:
    """What a flow would start or reach, one line each, exactly as a grant would cover it."""
    if not items:
        st.caption("Everything it needs is granted now.")
        return
    st.markdown(
        "\n".join(f"- **{md(KINDS.get(item.kind, item.kind))}**: {md(item.summary)}" for item in items)
    )
