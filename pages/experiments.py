"""Experiments: run a dataset version through a flow version with a live progress bar (here, or
on the workers when a broker is set); an experiment's results as a table and charts (pass rate
per expectation, latency distribution); two experiments side by side, item by item. Each item
opens its run in the inspector."""

from __future__ import annotations

import time
import zlib

import altair as alt
import pandas as pd
import streamlit as st

from flowcall import config
from flowcall.errors import ConfigError, FlowCallError
from flowcall.experiment_record import Experiment, compare
from flowcall.experiments import resume_experiment, run_experiment, submit
from flowcall.rendering import experiment_line, short, summary_lines
from flowcall.store.datasets import list_datasets
from flowcall.store.experiments import get_experiment, list_experiments
from flowcall.studio import md, service

app = service()
st.title("Experiments")


def open_runs(run_id: str | None, compare_with: str | None = None) -> None:
    """Open a run (and, beside it, another) in the inspector."""
    if run_id:
        st.session_state["run_id"] = run_id
        if compare_with:
            st.session_state["compare_with"] = compare_with
        st.switch_page("pages/runs.py")


def items_table(experiment: Experiment) -> pd.DataFrame:
    return pd.DataFrame([{
        "item": f"#{i.position + 1}" + (f" (run {i.attempt + 1})" if i.attempt else ""),
        "key": short(i.item_key, 60),
        "verdict": {True: "pass", False: "FAIL", None: "not run"}[i.passed],
        "status": i.status or "queued",
        "latency s": round(i.latency_ms / 1000, 2) if i.latency_ms is not None else None,
        "failed expectations": short("; ".join(f"{v.expectation}: {v.reason}" for v in i.verdicts or []
                                               if not v.passed), 160),
        "run": (i.run_id or "")[:8],
    } for i in experiment.items])


def picked_row(event: object) -> int | None:
    rows = getattr(getattr(event, "selection", None), "rows", None) or []
    return rows[0] if rows else None


tab_run, tab_results, tab_compare = st.tabs(["Run", "Results", "Compare"])

# ------------------------------------------------------------------ run
with tab_run:
    flows, datasets = app.store.list_flows(), list_datasets(app.store)
    if not flows or not datasets:
        st.info("An experiment needs a saved flow and a dataset: `flowcall datasets import FILE --name NAME`.")
    else:
        c1, c2, c3, c4 = st.columns([3, 1, 3, 1])
        flow_name = c1.selectbox("Flow", [f["name"] for f in flows])
        flow_versions = [v["version"] for v in app.store.flow_versions(flow_name)]
        flow_version = c2.selectbox("Flow version", sorted(flow_versions, reverse=True))
        dataset_name = c3.selectbox("Dataset", [d["name"] for d in datasets])
        latest = next(d for d in datasets if d["name"] == dataset_name)["version"]
        dataset_version = c4.selectbox("Dataset version", list(range(latest, 0, -1)))
        repeat = st.number_input("Runs per item", min_value=1, max_value=10, value=1)
        on_workers = bool(config.broker_url()) and st.toggle(
            "On the workers", value=True, help="Hand the runs to `flowcall worker` (FLOWCALL_BROKER_URL); the bar "
            "follows them from the database, and leaving this page does not stop them")
        if st.button("Run the experiment", type="primary"):
            flow = app.store.get_flow(flow_name, flow_version)[0]
            bar = st.progress(0.0, text="starting…")
            done: list[bool] = []

            def scored(result) -> None:
                done.append(bool(result.passed))
                bar.progress(len(done) / total[0], text=f"{len(done)} of {total[0]} runs · {done.count(False)} failed")

            total = [1]
            try:
                app.require_trust(flow, flow_name)
                if on_workers:
                    experiment = submit(app, flow, flow_name, dataset_name, dataset_version, int(repeat))
                    total[0] = max(1, len(experiment.items))
                    seen: set[tuple[int, int]] = set()
                    while experiment.status.value == "running":
                        time.sleep(0.5)
                        experiment = get_experiment(app.store, experiment.id)
                        for item in experiment.items:
                            if item.passed is not None and (item.position, item.attempt) not in seen:
                                seen.add((item.position, item.attempt))
                                scored(item)
                else:
                    experiment = run_experiment(
                        app, flow, flow_name, dataset_name, dataset_version, repeat=int(repeat),
                        on_start=lambda e: total.__setitem__(0, max(1, len(e.items))), on_item=scored)
            except (FlowCallError, ConfigError) as exc:
                st.error(md(exc))
            else:
                st.session_state["experiment"] = experiment.id
                st.success(md(experiment_line(experiment)) + " · see Results")

# ------------------------------------------------------------------ results
found = list_experiments(app.store, 200)
ids = [e.id for e in found]
labels = {e.id: experiment_line(e) for e in found}
with tab_results:
    if not found:
        st.info("No experiments yet.")
    else:
        wanted = st.session_state.get("experiment")
        chosen = st.selectbox("Experiment", ids, index=ids.index(wanted) if wanted in ids else 0,
                              format_func=labels.get,
                              # the browser keeps showing a picked label as it was drawn: a key that
                              # changes with the labels draws the picker anew when an experiment moves on
                              key=f"results-experiment:{zlib.crc32(chr(10).join(labels.values()).encode())}")
        st.session_state["experiment"] = chosen  # the picker drawn anew keeps this choice
        experiment = get_experiment(app.store, chosen)
        if "resumed" in st.session_state:
            st.success(md(st.session_state.pop("resumed")))
        st.markdown(md(f"{experiment.flow_name} v{experiment.flow_version} × {experiment.dataset_name} "
                       f"v{experiment.dataset_version} · {experiment.model} [{experiment.calling_way}] · "
                       f"{experiment.status.value}"))
        if experiment.error:
            st.warning(md(experiment.error))
        if experiment.status.value == "running" and st.button(
                "Resume it here", key=f"resume:{experiment.id}",
                help="If the process that ran it stopped (closed, killed, a restart): the scored items are kept, a "
                "run cut off goes on from its last step, the rest run here"):
            left = sum(item.passed is None for item in experiment.items)
            bar = st.progress(0.0, text=f"{left} runs left…")
            resumed: list[bool] = []

            def went_on(result) -> None:
                resumed.append(bool(result.passed))
                bar.progress(len(resumed) / max(1, left), text=f"{len(resumed)} of {left} runs · "
                             f"{resumed.count(False)} failed")
            try:
                experiment = resume_experiment(app, experiment.id, on_item=went_on)
            except (FlowCallError, ConfigError) as exc:
                st.error(md(exc))
            else:
                # drawn again, so the header and the picker above say "finished", not "running"
                st.session_state["resumed"] = experiment_line(experiment)
                st.rerun()
        if experiment.summary is not None:
            st.text("\n".join(summary_lines(experiment.summary)))
            rates = pd.DataFrame([{"expectation": name, "pass rate": c["passed"] / c["total"]}
                                  for name, c in experiment.summary.by_expectation.items() if c["total"]])
            latencies = pd.DataFrame({"latency s": [i.latency_ms / 1000 for i in experiment.items
                                                    if i.latency_ms is not None]})
            left, right = st.columns(2)
            if not rates.empty:
                left.altair_chart(alt.Chart(rates, title="Pass rate per expectation").mark_bar().encode(
                    x=alt.X("pass rate:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
                    y=alt.Y("expectation:N", sort="-x")), width="stretch")
            if not latencies.empty:
                right.altair_chart(alt.Chart(latencies, title="Latency distribution").mark_bar().encode(
                    x=alt.X("latency s:Q", bin=alt.Bin(maxbins=30)), y="count()"), width="stretch")
        event = st.dataframe(items_table(experiment), hide_index=True, on_select="rerun",
                             selection_mode="single-row", key=f"items:{experiment.id}")
        row = picked_row(event)
        if st.button("Open its run in the inspector", disabled=row is None, key="open-item"):
            open_runs(experiment.items[row].run_id)

# ------------------------------------------------------------------ compare
with tab_compare:
    if len(found) < 2:
        st.info("Comparing needs two experiments.")
    else:
        c1, c2 = st.columns(2)
        before = get_experiment(app.store, c1.selectbox("Before", ids, index=1, format_func=labels.get))
        after = get_experiment(app.store, c2.selectbox("After", ids, index=0, format_func=labels.get))
        result = compare(before, after)
        broke = sum(c.broke for c in result.changes)
        st.markdown(f"**{broke}** pass→fail · **{len(result.changes) - broke}** fail→pass · "
                    f"{result.same} unchanged")
        pairs = {(i.item_key, i.attempt): i for i in after.items}
        side = [(b, pairs.get((b.item_key, b.attempt))) for b in before.items]
        changed = {(c.key, c.attempt) for c in result.changes}
        show_all = st.toggle("Every item (not only the changed ones)", value=False)
        rows = [(b, a) for b, a in side if show_all or (b.item_key, b.attempt) in changed]
        verdict = {True: "pass", False: "FAIL", None: "-"}
        event = st.dataframe(pd.DataFrame([{
            "item": short(b.item_key, 60),
            "before": verdict[b.passed], "after": verdict[a.passed] if a else "(absent)",
            "change": ("pass→fail" if b.passed and a and a.passed is False else
                       "fail→pass" if b.passed is False and a and a.passed else ""),
            "before run": (b.run_id or "")[:8], "after run": (a.run_id or "")[:8] if a else "",
        } for b, a in rows], columns=["item", "before", "after", "change", "before run", "after run"]),
            hide_index=True, on_select="rerun", selection_mode="single-row", key="compare-items")
        row = picked_row(event)
        if st.button("Open both runs in the inspector (Compare tab)", disabled=row is None, key="open-pair"):
            b, a = rows[row]
            open_runs(a.run_id if a else b.run_id, b.run_id if a else None)
