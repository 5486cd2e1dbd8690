"""What the studio's pages share: the service, the example flows, and how a step or an answer
is drawn. Pages stay thin; everything that is not drawing lives in the flowcall package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import streamlit as st

from flowcall.errors import ConfigError
from flowcall.service import FlowCall
from flowcall.spec import load_flow
from flowcall.steps import Run, RunStatus, Step, StepKind

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "flows"
# A question per example flow, so a newcomer can press Run at once.
EXAMPLE_QUESTIONS = {
    "commute-weather": "我明天要在成都上下班通勤,会下雨吗?",
    "create-task": "添加任务:写周报,优先级高,截止 2026-11-27",
    "current-time": "现在几点了?",
    "employee-lookup": "张三今年多大了?",
    "clean-data": "Load orders_sample.csv and drop the rows with missing values.",
}


def service() -> FlowCall:
    return FlowCall.open()  # cheap: the store behind it is opened once per database URL


def seed_examples(app: FlowCall) -> list[str]:
    """On an empty database, save the example flows, so the studio opens with something to run."""
    if app.store.list_flows():
        return []
    seeded = []
    for path in sorted(EXAMPLES_DIR.glob("*.json")):
        try:
            flow = load_flow(path)
        except ConfigError:
            continue  # a broken example must not keep the studio from opening
        app.store.save_flow(flow)
        seeded.append(flow.name)
    return seeded


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def step_label(step: Step) -> str:
    what = step.name or ""
    if step.kind == StepKind.TOOL_CALL:
        what += "(" + json.dumps(step.arguments or {}, ensure_ascii=False)[:60] + ")"
    flag = f" ⚠ {step.error_code}" if step.error_code else ""
    return f"[{step.seq}] {step.kind.value} · {what}{flag}"


def steps_table(run: Run) -> list[dict[str, Any]]:
    return [{"seq": s.seq, "round": s.round, "kind": s.kind.value, "name": s.name, "way": s.calling_way,
             "error": s.error_code, "tokens in": s.tokens_in, "tokens out": s.tokens_out,
             "latency ms": round(s.latency_ms, 1), "note": s.note} for s in run.steps]


def show_step(step: Step) -> None:
    """Everything recorded for one step: the exact request, the prompt the local model read,
    the response, the calls, the results, errors, tokens and time."""
    cols = st.columns(4)
    cols[0].metric("Tokens in", step.tokens_in)
    cols[1].metric("Tokens out", step.tokens_out)
    cols[2].metric("Latency", f"{step.latency_ms / 1000:.2f} s")
    cols[3].metric("Round", step.round)
    st.caption(f"{step.kind.value} · {step.name or ''} · way: {step.calling_way or '-'}"
               + (f" · {step.note}" if step.note else ""))
    if step.error_code:
        st.error(f"{step.error_code}: {step.error_message or ''}")
    if step.request:
        request = step.request
        with st.expander("Request (exactly as sent)", expanded=step.kind != StepKind.TOOL_CALL):
            parts = {k: request[k] for k in ("tool_choice", "parallel_tool_calls", "response_format") if k in request}
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


def _card_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and 0 <= value <= 1:
        return f"{value:.0%}"  # probabilities read better as percentages
    return str(value)


def answer_card(answer: Any) -> None:
    """A structured answer as a card (the seeds' commute weather card): short fields as
    metrics, nested objects as their own rows, long text as text."""
    with st.container(border=True):
        flat = {k: v for k, v in answer.items() if not isinstance(v, (dict, list))}
        title_key = next((k for k in ("title", "location", "name", "city") if k in flat), None)
        if title_key:
            st.subheader(f"{flat.pop(title_key)}" + (f" · {flat.pop('date')}" if "date" in flat else ""))
        # metrics for numbers, yes/no and words; sentences as text (a metric cuts them off)
        short = {k: v for k, v in flat.items() if not isinstance(v, str) or len(v) <= 10}
        for chunk in range(0, len(short), 4):
            cols = st.columns(4)
            for col, (key, value) in zip(cols, list(short.items())[chunk:chunk + 4]):
                col.metric(key.replace("_", " "), _card_value(value))
        for key, value in flat.items():
            if key not in short:
                st.markdown(f"**{key.replace('_', ' ')}**: {value}")
        for key, value in answer.items():
            if isinstance(value, dict):
                st.markdown(f"**{key.replace('_', ' ')}**")
                answer_card(value)
            elif isinstance(value, list):
                st.markdown(f"**{key.replace('_', ' ')}**")
                for item in value:
                    st.markdown(f"- {_card_value(item) if not isinstance(item, dict) else as_json(item)}")


def show_answer(run: Run) -> None:
    if run.status == RunStatus.FAILED:
        st.error(f"The run failed: {run.error}. Open it in Runs to see the step that failed.")
        return
    if run.status != RunStatus.SUCCEEDED:
        return
    if isinstance(run.final_answer, dict):
        card, raw = st.columns([3, 2])
        with card:
            answer_card(run.final_answer)
        with raw:
            st.caption("Raw JSON (valid against the polish schema)")
            st.json(run.final_answer)
    elif isinstance(run.final_answer, list):
        st.json(run.final_answer)
    else:
        st.success(run.final_answer or "(empty answer)")
