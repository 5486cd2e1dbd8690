"""FlowCall studio (minimal): pick a flow, ask a question, watch the steps, see the answer.

The full studio (editor, inspector, replay, diff) comes with its own issue; this page only
reads and writes through the flowcall package.
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from flowcall.cli import describe_step
from flowcall.errors import ConfigError
from flowcall.service import FlowCall
from flowcall.spec import load_flow
from flowcall.steps import RunStatus, Step

FLOWS_DIR = Path(__file__).parent / "flows"
EXAMPLES = {
    "commute_weather.json": "我明天要在成都上下班通勤,会下雨吗?",
    "create_task.json": "添加任务:写周报,优先级高,截止 2026-11-27",
    "current_time.json": "现在几点了?",
    "employee_lookup.json": "张三今年多大了?",
}


def service() -> FlowCall:
    return FlowCall.open()  # cheap: the store behind it is opened once per database URL


st.set_page_config(page_title="FlowCall", page_icon="🛠️", layout="wide")
st.title("FlowCall")
st.caption("question → decision model → plugin tools → polish model → answer, recorded step by step")

files = sorted(p.name for p in FLOWS_DIR.glob("*.json"))
choice = st.selectbox("Flow", files, index=files.index("commute_weather.json") if "commute_weather.json" in files else 0)
try:
    flow = load_flow(FLOWS_DIR / choice)
except ConfigError as exc:
    st.error(str(exc))
    st.stop()
st.write(flow.description)
with st.expander("Flow JSON"):
    st.code(flow.to_json(), language="json")

question = st.text_input("Question", value=EXAMPLES.get(choice, ""))
if st.button("Run", type="primary", disabled=not question.strip()):
    with st.status("Running the flow…", expanded=True) as status:
        def show(step: Step) -> None:
            st.write(describe_step(step))

        run = service().run(flow, question, on_step=show)
        status.update(label=f"Run {run.status.value} · {len(run.steps)} steps",
                      state="complete" if run.status == RunStatus.SUCCEEDED else "error")
    st.session_state["last_run"] = run.id

if run_id := st.session_state.get("last_run"):
    run = service().store.get_run(run_id)
    if run.status == RunStatus.SUCCEEDED:
        st.subheader("Answer")
        if isinstance(run.final_answer, (dict, list)):
            st.json(run.final_answer)
        else:
            st.success(run.final_answer)
    else:
        st.error(f"The run failed: {run.error}")
    st.subheader("Steps")
    st.dataframe(
        [{"seq": s.seq, "kind": s.kind.value, "name": s.name, "error": s.error_code, "tokens in": s.tokens_in,
          "tokens out": s.tokens_out, "latency ms": round(s.latency_ms, 1)} for s in run.steps],
        hide_index=True,
    )
    for s in run.steps:
        with st.expander(f"[{s.seq}] {s.kind.value} {s.name or ''}"):
            if s.rendered_prompt:
                st.caption("Rendered prompt (what the local model read)")
                st.code(s.rendered_prompt)
            st.caption("Request / arguments")
            st.code(json.dumps(s.request or s.arguments, ensure_ascii=False, indent=2), language="json")
            st.caption("Response / result")
            st.code(json.dumps(s.response if s.kind.value != "tool_call" else s.result, ensure_ascii=False, indent=2,
                               default=str), language="json")
