"""Runs and the inspector: a filterable list; a run's timeline replayed step by step (the
exact request, the prompt the local model read, the response, calls, results, errors, tokens,
time); charts per step; a step-aligned comparison with another run; re-run from a step with
edited arguments or prompt; export and import."""

from __future__ import annotations

import json
from datetime import datetime, time, timedelta

import streamlit as st

from flowcall.core.errors import ConfigError, FlowCallError
from flowcall.core.steps import RunStatus, StepKind, is_reused
from flowcall.engine.compare import align, latency_ms, summary
from flowcall.engine.rerun import RERUNNABLE
from flowcall.rendering import run_seconds, status_text, step_ref, sub_run_of
from flowcall.service.door import Refused, choose, enter
from flowcall.studio.active import going_on, show_active, show_going_on
from flowcall.studio.graph import draw_run, node_detail, path_summary, run_flow, svg_of_run
from flowcall.studio.shared import as_json, md, service, show_answer, show_step, step_label, steps_table
from flowcall.workers.runner import runner_for

app = service()
runner = runner_for(app)  # the studio's runner: a re-run goes on there, whatever this page does
st.title("Runs & inspector")
show_active(app, runner, key="runs-page", always=True)  # live: every queued and running run, with Stop

# ------------------------------------------------------------------ import
with st.expander("Import a run (JSON exported from an inspector)"):
    upload = st.file_uploader("Run file", type=["json"], key="import_run")
    if upload is not None and upload.file_id != st.session_state.get("imported_run_file"):
        st.session_state["imported_run_file"] = upload.file_id
        try:
            imported = app.import_run(upload.getvalue().decode("utf-8", errors="replace"), source=upload.name)
            st.session_state["run_id"] = imported.id
            st.success(md(f"Imported run {imported.id[:8]} ({len(imported.steps)} steps)."))
            if app.last_import_note:  # its flow's name was taken: stored beside it, the saved flow unchanged
                st.warning(md(f"Its flow: {app.last_import_note}."))
        except (FlowCallError, ConfigError) as exc:
            st.error(f"{md(exc)}. Nothing was imported.")

# ------------------------------------------------------------------ filters and list
c0, c1, c2, c3, c4 = st.columns([2, 2, 2, 2, 2])
search = c0.text_input("Question contains", placeholder="e.g. 成都")
flow_names = ["(all)"] + [f["name"] for f in app.list_flows()]
flow_filter = c1.selectbox("Flow", flow_names)
status_filter = c2.selectbox("Status", ["(all)"] + [s.value for s in RunStatus])
model_filter = c3.selectbox("Model", ["(all)"] + app.run_models())
days = c4.date_input("Dates", value=(), help="Pick a first and a last day")
since = until = None
if isinstance(days, tuple) and len(days) == 2:
    since = datetime.combine(days[0], time.min).astimezone()
    until = datetime.combine(days[1] + timedelta(days=1), time.min).astimezone()
runs = app.list_runs(
    flow_name=None if flow_filter == "(all)" else flow_filter,
    status=None if status_filter == "(all)" else status_filter,
    model=None if model_filter == "(all)" else model_filter,
    since=since,
    until=until,
    text=search.strip() or None,
    limit=200,
)
linked = st.query_params.get("run")  # the page writes the run it shows there too: that one is no link
linked = linked if linked != st.session_state.get("inspector:linked") else None
if linked and linked not in {r.id for r in runs} and (found := app.find_run(linked)) is not None:
    runs = [found, *runs]  # a link opens its run, also one older than the list or filtered out
if not runs:
    st.info("No runs match. Run a flow on the Run page, or with `flowcall run FLOW QUESTION`.")
    st.stop()
st.dataframe(
    [
        {
            "started": r.started_at,
            "flow": r.flow_name,
            "status": status_text(r),
            "question": r.question[:60],
            "id": r.id[:8],
        }
        for r in runs
    ],
    hide_index=True,
)


def run_label(r) -> str:
    return (
        f"{r.started_at:%Y-%m-%d %H:%M:%S} · {status_text(r)} · {r.flow_name} · {r.question[:40]} · "
        f"{r.id[:8]}"
    )


ids = [r.id for r in runs]
if linked:
    st.session_state["run_id"] = linked  # a link to a run (?run=ID) opens it, in any tab
wanted = st.session_state.get("run_id")
picked = st.selectbox(
    "Run",
    ids,
    index=ids.index(wanted) if wanted in ids else 0,
    format_func=lambda i: run_label(next(r for r in runs if r.id == i)),
)
st.session_state["run_id"] = picked
st.query_params["run"] = st.session_state["inspector:linked"] = picked
run = app.get_run(picked)

# ------------------------------------------------------------------ the run
st.subheader(md(f"Run {run.id[:8]}"))  # a run file from elsewhere sets its id, flow name, trace and question
st.markdown(
    f"**{md(run.flow_name)}** · {md(status_text(run))} · trace {md(run.trace_id)} · "
    f"{run.tokens_in}+{run.tokens_out} tokens · {run_seconds(run):.2f} s"
)
st.markdown(f"Question: {md(run.question)}")
if run.parent_run_id:  # a sub-flow's run: the run whose tool call started it
    st.page_link(
        "pages/runs.py",
        label=md(f"A sub-flow's run, started by a call of run {run.parent_run_id[:8]}: open that run"),
        icon=":material/arrow_upward:",
        query_params={"run": run.parent_run_id},
    )
if run.context:
    with st.expander(f"The chat before the question ({len(run.context)} messages)"):
        for turn in run.context:
            st.markdown(f"**{turn.role}**: {md(turn.content)}")
if going_on(runner, run):  # followed live until it ends or waits; then the inspector shows it
    show_going_on(app, runner, run.id)
    st.stop()
if run.status in (RunStatus.INTERRUPTED, RunStatus.WAITING_APPROVAL):
    why = {
        RunStatus.INTERRUPTED: "was interrupted: the process running it stopped before it ended. It can go "
        "on from its last committed step.",
        RunStatus.WAITING_APPROVAL: "waits for a person to approve a tool call.",
    }[run.status]
    st.info(f"This run {why}")
    go, stop, _ = st.columns([2, 1, 4])
    go.page_link(  # a link: opens the run under its own flow, in this tab or a new one
        "pages/run.py",
        label="Continue it on the Run page",
        icon=":material/play_arrow:",
        query_params={"run": run.id},
    )
    if stop.button("Cancel the run", key=f"cancel:{run.id}"):
        try:
            app.cancel(run.id, by="studio")
        except ConfigError as exc:  # it ended meanwhile
            st.error(md(exc))
        else:
            st.rerun()
show_answer(run)
st.download_button(
    "Export run as JSON",
    json.dumps(app.export_run(run.id), ensure_ascii=False, indent=2),
    file_name=f"run-{run.id[:8]}.json",
    mime="application/json",
)

tab_timeline, tab_charts, tab_compare, tab_table = st.tabs(["Timeline", "Charts", "Compare", "All steps"])

with tab_timeline:
    if not run.steps:
        st.caption("This run has no steps.")
    else:
        n = len(run.steps)
        cursor = f"cursor:{run.id}"
        st.session_state.setdefault(cursor, 1)
        graph_col, detail_col = st.columns([3, 2])
        with graph_col:
            node = draw_run(app, run, key=f"inspector-graph:{run.id}", height=300)
        with detail_col:
            st.caption("Click a node: the timeline goes to its steps.")
            its_steps = node_detail(app, run, node) if node else []
        if (
            its_steps and st.session_state.get(f"{cursor}:node") != node
        ):  # a new node picked: go to its first step
            st.session_state[f"{cursor}:node"] = node
            st.session_state[cursor] = (
                run.steps.index(next(s for s in run.steps if s.seq == its_steps[0])) + 1
            )
        prev, slider, nxt = st.columns([1, 6, 1])

        def move(by: int) -> None:  # a callback: it runs before the page, so both buttons see the new step
            st.session_state[cursor] = min(n, max(1, st.session_state[cursor] + by))

        prev.button("◀ Previous", disabled=st.session_state[cursor] <= 1, on_click=move, args=(-1,))
        nxt.button("Next ▶", disabled=st.session_state[cursor] >= n, on_click=move, args=(1,))
        if n > 1:
            slider.slider("Step", 1, n, key=cursor)
        step = run.steps[st.session_state[cursor] - 1]
        st.markdown(f"#### {step_label(step)}")
        show_step(step)
        if child := sub_run_of(step):  # a sub-flow call: the sub-flow ran as a run of its own
            st.page_link(
                "pages/runs.py",
                label=md(f"Open the sub-flow's run {child[:8]}"),
                icon=":material/subdirectory_arrow_right:",
                query_params={"run": child},
            )

        if step.kind in RERUNNABLE and run.flow_version_id is not None:
            with st.expander(f"Re-run from step {step.seq}"):
                flow = app.flow_of(run)
                edits: dict = {}
                if step.kind == StepKind.TOOL_CALL:
                    text = st.text_area(
                        "Arguments", as_json(step.arguments), key=f"rerun_args:{run.id}:{step.seq}"
                    )
                    st.caption(
                        "The decision and the calls before this one are kept; this call (with these "
                        "arguments) and the ones after it run again, then the run goes on live."
                    )
                elif step.kind == StepKind.MODEL_CALL:
                    text = st.text_area(
                        "Decision system prompt",
                        flow.decision.system_prompt,
                        key=f"rerun_prompt:{run.id}:{step.seq}",
                    )
                    st.caption("Earlier rounds are kept; this round is decided again, live.")
                else:
                    text = st.text_area(
                        "Polish system prompt",
                        flow.polish.system_prompt if flow.polish else "",
                        key=f"rerun_polish:{run.id}:{step.seq}",
                    )
                    st.caption("Every round is kept; only the polish model runs again.")
                if st.button("Re-run from this step", type="primary", key=f"rerun:{run.id}:{step.seq}"):
                    try:
                        if step.kind == StepKind.TOOL_CALL:
                            edits["arguments"] = json.loads(text)
                            if not isinstance(edits["arguments"], dict):
                                raise ValueError("the arguments must be a JSON object")
                        elif step.kind == StepKind.MODEL_CALL:
                            edits["decision_prompt"] = text
                        else:
                            edits["polish_prompt"] = text
                    except ValueError as exc:
                        st.error(
                            f"Nothing was run: {md(exc)}. Fix the arguments (a JSON object) and try again."
                        )
                    else:
                        try:  # recorded first, then handed to the runner (or the workers)
                            door = choose(app, runner)
                            new = enter(app, door, lambda: [app.queue_rerun(run.id, step.seq, **edits).id])
                        except Refused as exc:  # the broker did not take it: the new run says so
                            st.error(md(exc))
                        except (FlowCallError, ConfigError) as exc:
                            st.error(f"Nothing was re-run: {md(exc)}")
                            st.stop()
                        else:  # the new run is followed here, live; then compared with this one
                            st.session_state["run_id"] = new.run_ids[0]
                            st.session_state["compare_with"] = run.id
                            st.rerun()

with tab_charts:
    # a step a re-run reused spent its tokens and time in the run it re-ran: none here
    rows = [
        {
            "step": f"{s.seq:02d} {s.kind.value}",
            "tokens in": 0 if is_reused(s) else s.tokens_in,
            "tokens out": 0 if is_reused(s) else s.tokens_out,
            "latency ms": 0.0 if is_reused(s) else round(s.latency_ms, 1),
        }
        for s in run.steps
    ]
    if rows:
        st.caption("Tokens per step")
        st.bar_chart(rows, x="step", y=["tokens in", "tokens out"], stack=True)
        st.caption("Latency per step (ms)")
        st.bar_chart(rows, x="step", y="latency ms")

with tab_compare:
    others = [i for i in ids if i != run.id]
    if not others:
        st.caption("Only one run listed; run the flow again (or change the filters) to compare.")
    else:
        default = st.session_state.get("compare_with")
        other_id = st.selectbox(
            "Compare with",
            others,
            index=others.index(default) if default in others else 0,
            format_func=lambda i: run_label(next(r for r in runs if r.id == i)),
        )
        other = app.get_run(other_id)
        left, right = st.columns(2)
        for where, shown in ((left, run), (right, other)):
            drawn = run_flow(app, shown)
            calls = (
                ", ".join(
                    f"{k.removeprefix('tool:')} ×{v}"
                    for k, v in path_summary(shown, drawn).items()
                    if k.startswith("tool:")
                )
                or "no tool calls"
            )
            where.caption(md(f"Run {shown.id[:8]} · {status_text(shown)} · {calls}"))
            where.image(svg_of_run(drawn, shown))
        figures = summary(run, other)
        st.dataframe(
            [{"": k, "this run": str(a), "other run": str(b)} for k, (a, b) in figures.items()],
            hide_index=True,
        )
        pairs = align(run, other)

        def step_ms(step) -> str:  # a reused step took its time in the run it was reused from
            return "reused" if step is not None and is_reused(step) else str(latency_ms(step))

        st.caption(f"{sum(p.same for p in pairs)} of {len(pairs)} aligned steps are the same.")
        st.dataframe(
            [
                {
                    "this": p.left and step_ref(p.left),
                    "other": p.right and step_ref(p.right),
                    "differences": "; ".join(p.differences) or "same",
                    "tokens": f"{p.left.tokens_in + p.left.tokens_out if p.left else '-'} / "
                    f"{p.right.tokens_in + p.right.tokens_out if p.right else '-'}",
                    "latency ms": f"{step_ms(p.left)} / {step_ms(p.right)}",
                }
                for p in pairs
            ],
            hide_index=True,
        )

with tab_table:
    st.dataframe(steps_table(run), hide_index=True)
    if st.button("Replay with the recorded model answers (tools run for real)"):
        with st.spinner("Replaying…"):
            try:
                original, replayed = app.replay(run.id)
            except (FlowCallError, ConfigError) as exc:
                st.error(md(exc))
            else:
                st.session_state["run_id"], st.session_state["compare_with"] = replayed.id, original.id
                st.rerun()
