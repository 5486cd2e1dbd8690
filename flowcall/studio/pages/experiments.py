"""Experiments: make a dataset (upload a .jsonl or .csv file, or write the items here); run a
dataset version through a flow version with a live progress bar that names the item running
(here, or on the workers when a broker is set); an experiment's results as figures, a table
(question, answer, verdict, the expectations not met) and two charts (pass rate per expectation,
seconds per item); two experiments side by side, item by item. Each item opens its run in the
inspector."""

from __future__ import annotations

import time
import zlib

import pandas as pd
import streamlit as st

from flowcall.core import config
from flowcall.core.datasets import DatasetError, check_name
from flowcall.core.errors import ConfigError, FlowCallError
from flowcall.core.experiment_record import Experiment, compare, summarize
from flowcall.eval.experiments import resume_experiment, run_experiment, submit
from flowcall.rendering import short
from flowcall.service.door import choose
from flowcall.studio.experiments import (
    Progress,
    experiment_label,
    figures,
    latency_chart,
    notes,
    outcome_line,
    pass_rate_chart,
    read_upload,
    read_written,
    refusal,
    results_table,
)
from flowcall.studio.shared import md, service

app = service()
st.title("Experiments")

EXAMPLE = (
    '{"id": "age", "question": "张三今年多大了?", "expect_calls": [{"name": "lookup_employee"}]}\n'
    '{"question": "你好", "expect_no_call": true}'
)
ITEM_HELP = """Each item is a `question` (required) and what its run must show; leave out what does
not matter.

| field | what the run must show |
|---|---|
| `id` | (optional) a name for the item; comparing two experiments pairs items by it, else by question |
| `expect_calls` | these calls, each `{"name": ..., "arguments": {...}}` (at least these arguments) |
| | an argument may be `{"any_of": [a, b]}` (any of these), with `"optional": true` (or absent) |
| `ordered` | `true`: the expected calls in this order |
| `expect_no_call` | `true`: no tool call at all |
| `answer_contains` | the answer holds this text |
| `answer_regex` / `answer_equals` | the answer matches this pattern / equals this value |
| `answer_schema` | the answer is valid against this JSON Schema |
| `grounded` | `true`: every value of the answer comes from a tool result or the question |
| `max_latency_s` | the run takes at most this many seconds |
| `tools` | the item's own tool definitions: only the flow's decision model is asked, nothing runs |

In a CSV file the first line names the columns (the fields above), and `expect_calls`, `answer_schema` and
`tools` cells hold JSON text. `flowcall datasets export` writes both formats."""


def open_runs(run_id: str | None, compare_with: str | None = None) -> None:
    """Open a run (and, beside it, another) in the inspector."""
    if run_id:
        st.session_state["run_id"] = run_id
        if compare_with:
            st.session_state["compare_with"] = compare_with
        st.switch_page("pages/runs.py")


def picked_row(event: object) -> int | None:
    rows = getattr(getattr(event, "selection", None), "rows", None) or []
    return rows[0] if rows else None


def show_results(experiment: Experiment) -> None:
    """The figures, the two charts and the table of items (picking a row opens its run)."""
    summary = experiment.summary or summarize(experiment.items)  # a running one: so far
    texts = app.experiment_runs(experiment.id)
    if summary.runs:
        if experiment.summary is None:
            st.caption("So far: the experiment still runs.")
        shown = figures(summary)
        for first in range(0, len(shown), 4):
            for column, figure in zip(st.columns(4), shown[first : first + 4]):
                column.metric(figure.label, figure.value, help=figure.help)
        for note in notes(summary):
            st.caption(note)
        left, right = st.columns(2)
        if (chart := pass_rate_chart(summary)) is not None:
            left.altair_chart(chart, width="stretch")
        if (chart := latency_chart(experiment.items, texts)) is not None:
            right.altair_chart(chart, width="stretch")
    else:
        st.info("No run of this experiment has ended yet.")
    event = st.dataframe(
        results_table(experiment, texts),
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key=f"items:{experiment.id}",
        column_config={
            "question": st.column_config.TextColumn(width="medium"),
            "verdict": st.column_config.TextColumn(
                width="small",
                help="passed: every expectation met; failed: one was not; error: the run itself "
                "did not succeed",
            ),
            # medium, not large: every column fits the page's width, so none is cut off at its edge
            "failed expectations": st.column_config.TextColumn(
                width="medium", help="Each expectation the run did not meet, and why (hover to read it all)"
            ),
            "answer": st.column_config.TextColumn(width="medium"),
            "seconds": st.column_config.NumberColumn(format="%.2f", help="How long the run took"),
        },
    )
    row = picked_row(event)
    if st.button("Open its run in the inspector", disabled=row is None, key="open-item"):
        open_runs(experiment.items[row].run_id)


tab_run, tab_results, tab_compare, tab_datasets = st.tabs(["Run", "Results", "Compare", "Datasets"])

# ------------------------------------------------------------------ datasets
# drawn first, so that a dataset saved here is offered on the Run tab in the same script run
with tab_datasets:
    known = app.datasets()
    if known:
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "dataset": d["name"],
                        "latest version": d["version"],
                        "items": d["items"],
                        "saved": d["updated_at"],
                        "from": d["source"],
                    }
                    for d in known
                ]
            ),
            hide_index=True,
        )
    st.subheader("New dataset, or a new version of one")
    name = st.text_input(
        "Dataset name",
        help="Saving under a name that exists adds a new version of that "
        "dataset (the same items again add none). Letters, digits, spaces and - _ .",
    )
    way = st.radio("The items", ["Upload a file", "Write them here"], horizontal=True)
    upload = written = None
    if way == "Upload a file":
        upload = st.file_uploader(
            "Dataset file (.jsonl or .csv)",
            type=["jsonl", "ndjson", "csv"],
            help="The format `flowcall datasets import` reads: JSON Lines (one item per "
            "line) or CSV (a header line naming the fields). Up to 5 MB here; a bigger "
            "file: `flowcall datasets import FILE --name NAME`",
        )
    else:
        written = st.text_area(
            "Items, one JSON object per line",
            height=160,
            placeholder=EXAMPLE,
            help="The JSON Lines format of a .jsonl file: one item per line",
        )
    with st.expander("What an item holds"):
        st.markdown(ITEM_HELP)
    if st.button("Save the dataset", type="primary"):
        try:
            if not name.strip():
                raise ConfigError("Give the dataset a name first.")
            check_name(name.strip())
            if upload is not None:
                items, source = read_upload(upload.name, upload.getvalue()), f"uploaded {upload.name}"
            elif written and written.strip():
                items, source = read_written(written), "written in the studio"
            else:
                raise ConfigError(
                    "Choose a file first."
                    if way == "Upload a file"
                    else "Write at least one item first: one JSON object per line, with a question."
                )
            saved = app.save_dataset(name.strip(), items, source=source)
        except DatasetError as exc:
            st.error(refusal(exc))
        except ConfigError as exc:
            st.error(md(exc))
        else:
            st.session_state["dataset-saved"] = name.strip()
            count = f"{len(items)} item{'s' if len(items) != 1 else ''}"
            st.success(
                md(
                    f"Saved {name.strip()} as version {saved.version} with {count}."
                    if saved.created
                    else f"{name.strip()} version {saved.version} already has exactly these {count}; "
                    "no new version."
                )
                + " Pick it on the Run tab."
            )

# ------------------------------------------------------------------ run
with tab_run:
    flows, datasets = app.list_flows(), app.datasets()
    if not flows:
        st.info("An experiment needs a saved flow: make one on the Flows page.")
    elif not datasets:
        st.info(
            "An experiment needs a dataset: make one on the Datasets tab (upload a file or write the items)."
        )
    else:
        c1, c2, c3, c4 = st.columns([3, 1, 3, 1])
        flow_name = c1.selectbox("Flow", [f["name"] for f in flows])
        flow_versions = [v["version"] for v in app.flow_versions(flow_name)]
        flow_version = c2.selectbox("Flow version", sorted(flow_versions, reverse=True))
        dataset_names = [d["name"] for d in datasets]
        just_saved = st.session_state.get("dataset-saved")
        dataset_name = c3.selectbox(
            "Dataset",
            dataset_names,
            index=dataset_names.index(just_saved) if just_saved in dataset_names else 0,
        )
        latest = next(d for d in datasets if d["name"] == dataset_name)["version"]
        dataset_version = c4.selectbox("Dataset version", list(range(latest, 0, -1)))
        repeat = st.number_input("Runs per item", min_value=1, max_value=10, value=1)
        on_workers = bool(config.broker_url()) and st.toggle(
            "On the workers",
            value=True,
            help="Hand the runs to `flowcall worker` (FLOWCALL_BROKER_URL); the bar "
            "follows them from the database, and leaving this page does not stop them",
        )
        if st.button("Run the experiment", type="primary"):
            flow = app.get_flow(flow_name, flow_version)[0]
            progress = Progress(st.progress(0.0, text="recording the experiment…"))
            try:
                app.require_trust(flow, flow_name)
                if on_workers:
                    workers = choose(app, None, queue=True)
                    experiment = submit(
                        app, flow, flow_name, dataset_name, dataset_version, int(repeat), door=workers
                    )
                    progress.started(experiment, app)
                    progress.waiting()
                    seen: set[tuple[int, int]] = set()
                    while experiment.status.value == "running":
                        time.sleep(0.5)
                        experiment = app.experiment(experiment.id)
                        for item in experiment.items:
                            if item.passed is not None and (item.position, item.attempt) not in seen:
                                seen.add((item.position, item.attempt))
                                progress.scored(item)
                        if experiment.status.value == "running":
                            if now := app.experiment_running_item(experiment.id):
                                progress.running(*now)
                            else:
                                progress.waiting()
                else:
                    experiment = run_experiment(
                        app,
                        flow,
                        flow_name,
                        dataset_name,
                        dataset_version,
                        repeat=int(repeat),
                        on_start=lambda e: progress.started(e, app),
                        on_begin=progress.begins,
                        on_item=progress.scored,
                    )
            except (FlowCallError, ConfigError) as exc:
                st.error(md(exc))
            else:
                st.session_state["experiment"] = experiment.id
                st.success(md(outcome_line(experiment)) + " See the Results tab.")

# ------------------------------------------------------------------ results
found = app.experiments(200)
ids = [e.id for e in found]
labels = {e.id: experiment_label(e) for e in found}
with tab_results:
    if not found:
        st.info("No experiments yet.")
    else:
        wanted = st.session_state.get("experiment")
        chosen = st.selectbox(
            "Experiment",
            ids,
            index=ids.index(wanted) if wanted in ids else 0,
            format_func=labels.get,
            # the browser keeps showing a picked label as it was drawn: a key that
            # changes with the labels draws the picker anew when an experiment moves on
            key=f"results-experiment:{zlib.crc32(chr(10).join(labels.values()).encode())}",
        )
        st.session_state["experiment"] = chosen  # the picker drawn anew keeps this choice
        experiment = app.experiment(chosen)
        if "resumed" in st.session_state:
            st.success(md(st.session_state.pop("resumed")))
        st.markdown(
            md(
                f"{experiment.flow_name} v{experiment.flow_version} × {experiment.dataset_name} "
                f"v{experiment.dataset_version} · {experiment.model} [{experiment.calling_way}] · "
                f"{experiment.status.value}"
            )
        )
        if experiment.error:
            st.warning(md(experiment.error))
        if experiment.status.value == "running" and st.button(
            "Resume it here",
            key=f"resume:{experiment.id}",
            help="If the process that ran it stopped (closed, killed, a restart): the scored items are "
            "kept, a run cut off goes on from its last step, the rest run here",
        ):
            left = sum(item.passed is None for item in experiment.items)
            progress = Progress(st.progress(0.0, text=f"{left} runs left…"))
            try:
                experiment = resume_experiment(
                    app,
                    experiment.id,
                    on_item=progress.scored,
                    on_begin=progress.begins,
                    on_start=lambda e: progress.started(e, app, runs=left),
                )
            except (FlowCallError, ConfigError) as exc:
                st.error(md(exc))
            else:
                # drawn again, so the header and the picker above say "finished", not "running"
                st.session_state["resumed"] = outcome_line(experiment)
                st.rerun()
        show_results(experiment)

# ------------------------------------------------------------------ compare
with tab_compare:
    if len(found) < 2:
        st.info("Comparing needs two experiments.")
    else:
        c1, c2 = st.columns(2)
        before = app.experiment(c1.selectbox("Before", ids, index=1, format_func=labels.get))
        after = app.experiment(c2.selectbox("After", ids, index=0, format_func=labels.get))
        result = compare(before, after)
        broke = sum(c.broke for c in result.changes)
        st.markdown(
            f"**{broke}** pass→fail · **{len(result.changes) - broke}** fail→pass · {result.same} unchanged"
        )
        pairs = {(i.item_key, i.attempt): i for i in after.items}
        side = [(b, pairs.get((b.item_key, b.attempt))) for b in before.items]
        changed = {(c.key, c.attempt) for c in result.changes}
        show_all = st.toggle("Every item (not only the changed ones)", value=False)
        rows = [(b, a) for b, a in side if show_all or (b.item_key, b.attempt) in changed]
        verdict = {True: "pass", False: "FAIL", None: "-"}
        event = st.dataframe(
            pd.DataFrame(
                [
                    {
                        "item": short(b.item_key, 60),
                        "before": verdict[b.passed],
                        "after": verdict[a.passed] if a else "(absent)",
                        "change": (
                            "pass→fail"
                            if b.passed and a and a.passed is False
                            else "fail→pass"
                            if b.passed is False and a and a.passed
                            else ""
                        ),
                        "before run": (b.run_id or "")[:8],
                        "after run": (a.run_id or "")[:8] if a else "",
                    }
                    for b, a in rows
                ],
                columns=["item", "before", "after", "change", "before run", "after run"],
            ),
            hide_index=True,
            on_select="rerun",
            selection_mode="single-row",
            key="compare-items",
        )
        row = picked_row(event)
        if st.button("Open both runs in the inspector (Compare tab)", disabled=row is None, key="open-pair"):
            b, a = rows[row]
            open_runs(a.run_id if a else b.run_id, b.run_id if a else None)
