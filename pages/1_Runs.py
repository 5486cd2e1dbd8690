"""Recorded runs: newest first; pick one to see its steps. (The full inspector is a later issue.)"""

from __future__ import annotations

import json

import streamlit as st

from flowcall.service import FlowCall


def service() -> FlowCall:
    return FlowCall.open()  # cheap: the store behind it is opened once per database URL


st.title("Runs")
runs = service().store.list_runs(limit=100)
if not runs:
    st.info("No runs yet: run a flow on the FlowCall page, or with `flowcall run FLOW QUESTION`.")
    st.stop()
labels = {f"{r.started_at:%Y-%m-%d %H:%M:%S} · {r.status.value} · {r.flow_name} · {r.question[:40]}": r.id for r in runs}
picked = st.selectbox("Run", list(labels))
run = service().store.get_run(labels[picked])
st.write(f"**{run.flow_name}** · {run.status.value} · trace `{run.trace_id}`")
st.write(f"Question: {run.question}")
if run.error:
    st.error(run.error)
st.dataframe(
    [{"seq": s.seq, "kind": s.kind.value, "name": s.name, "way": s.calling_way, "error": s.error_code,
      "tokens in": s.tokens_in, "tokens out": s.tokens_out, "latency ms": round(s.latency_ms, 1)} for s in run.steps],
    hide_index=True,
)
st.download_button("Export run as JSON", json.dumps(run.model_dump(mode="json"), ensure_ascii=False, indent=2),
                   file_name=f"run-{run.id[:8]}.json", mime="application/json")
