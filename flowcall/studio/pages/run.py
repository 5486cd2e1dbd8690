"""Run: pick a flow, ask, watch the steps arrive; approve, deny or edit a call that waits for
a person; see the answer (a structured one as a card, with its raw JSON beside it). A flow that
would start a program or reach a server nobody granted first shows what, and runs only after
"Grant and run". With a broker (FLOWCALL_BROKER_URL) a run can go to the workers instead: its
steps then arrive from the database, and so do those of any queued or running run picked here."""

from __future__ import annotations

import json
from collections.abc import Callable

import streamlit as st

from flowcall.core import config, progress
from flowcall.core.errors import ConfigError, FlowCallError
from flowcall.core.spec import Flow
from flowcall.core.steps import Run, RunStatus, Step, StepKind, waiting_calls
from flowcall.engine.approval import Decision
from flowcall.rendering import describe_step, run_line, run_seconds, status_text
from flowcall.studio.graph import draw_run, node_detail, svg_of_run
from flowcall.studio.shared import (
    EXAMPLE_QUESTIONS,
    WritingBox,
    as_json,
    md,
    service,
    show_answer,
    show_trust_items,
    steps_table,
)
from flowcall.studio.waiting import show_waiting
from flowcall.trust.consent import TrustRequired

app = service()
st.title("Run a flow")

flows = app.store.list_flows()
if not flows:
    st.info("No flows yet: create one on the Flows page.")
    st.stop()
names = [f["name"] for f in flows]


def shown_run() -> Run | None:
    """The run this page shows: the one its address names (?run=ID, so a link opens it in any
    tab), else the one this tab ran or opened last."""
    linked = st.query_params.get("run")
    if linked and linked != st.session_state.get("run:linked"):  # a new address, not the one this page wrote
        st.session_state["run_id"] = linked
        st.session_state["run:linked"] = linked
    if not (run_id := st.session_state.get("run_id")):
        return None
    try:
        return app.store.get_run(run_id)
    except ConfigError as exc:  # a link to a run that is gone, or never was
        let_go()
        st.warning(md(exc))
        return None


def made_here(run_id: str) -> None:
    """Show a run this page just made: it ran the question as typed, so the question box is
    left as it is (a run opened from elsewhere brings its own question)."""
    st.session_state["run_id"] = st.session_state["run:adopted"] = run_id


def let_go() -> None:
    """Another flow picked: the run shown belongs to the flow it was, so it is no longer shown."""
    st.session_state.pop("run_id", None)
    st.query_params.pop("run", None)


# A run is always shown under its own flow and question, however this page was opened.
shown = shown_run()
show_waiting(app, "page", skip=shown.id if shown else None)
if (
    shown is not None
    and shown.flow_name in names
    and (st.session_state.get("run:flow") is None or st.session_state.get("run:adopted") != shown.id)
):
    st.session_state["run:flow"] = shown.flow_name
    st.session_state[f"question:{shown.flow_name}"] = shown.question
    st.session_state["run:adopted"] = shown.id
if (asked_for := st.query_params.pop("start", None)) in names:  # "Run this flow" on the Flows page
    st.session_state["run:flow"] = asked_for
    let_go()
if st.session_state.get("run:flow") not in names:
    preferred = st.session_state.get("flow")  # the flow last open on the Flows page
    st.session_state["run:flow"] = preferred if preferred in names else names[0]
name = st.selectbox("Flow", names, key="run:flow", on_change=let_go)
flow, version_id, version = app.store.get_flow(name)
st.caption(md(f"version {version} · {flow.description}"))
st.session_state.setdefault(f"question:{name}", EXAMPLE_QUESTIONS.get(name, ""))
question = st.text_area("Question", height=80, key=f"question:{name}")
on_worker = bool(config.broker_url()) and st.toggle(
    "On a worker",
    value=True,
    help="Hand the run to the workers (`flowcall worker`, FLOWCALL_BROKER_URL); its "
    "steps show here as the worker commits them, and a click on this page no longer stops it",
)


def ask_consent(flow_version_id: int, question: str | None) -> None:
    """Show the consent panel for this flow version; `question` is what runs once granted
    (None: a paused run, which the person continues after granting)."""
    st.session_state["consent"] = {"version_id": flow_version_id, "question": question}


def live(
    label: str,
    work: Callable,
    consent_for: tuple[int | None, str | None],
    drawn: Flow | None = None,
    so_far: Run | None = None,
) -> Run | None:
    """Run `work(on_step)` inside a status box that fills with the steps as they end, and draw
    the run on the flow's graph as each step commits. A grant missing meanwhile (revoked, or the
    flow changed) shows the consent panel instead."""
    graph = st.empty()
    seen: list[Step] = list(so_far.steps) if so_far else []
    # Streamlit ends the script on any click, and the engine marks a run ended that way
    # `cancelled`: this button is that click, made on purpose (its rerun shows the run). It is
    # there only while the run runs.
    stop = st.empty()
    stop.button("Stop", key="stop-run", help="Stop this run; it is recorded as cancelled")
    problem = None
    try:
        with st.status(label, expanded=True) as status:
            try:
                with progress.watching(WritingBox()):  # the running step's text, as it is written
                    run = work(step_shower(graph, seen, drawn))
            except TrustRequired:
                status.update(label="Nothing was run: it needs your grant", state="error", expanded=True)
                if consent_for[0] is not None:
                    ask_consent(*consent_for)
                    st.rerun()
                problem = "This run's flow version is gone, so there is nothing to grant. Nothing was run."
            except (FlowCallError, ConfigError) as exc:
                status.update(label="Could not run", state="error", expanded=True)
                problem = md(exc)
            else:
                show_ended(status, run)
    finally:
        stop.empty()
    if problem is not None:  # the reason in the open, not inside a box that may close
        st.error(problem)
        return None
    made_here(run.id)
    return run


def step_shower(graph, seen: list[Step], drawn: Flow | None) -> Callable[[Step], None]:
    """The engine's on_step for a run watched here: each ended step as a line of text in the
    status box, and the run so far on the flow's graph."""

    def on_step(step: Step) -> None:
        made_here(step.run_id)  # a stopped run is still shown
        st.text(describe_step(step))
        seen.append(step)
        partial = Run(
            id=step.run_id, flow_name=drawn.name if drawn else "", question="", trace_id="", steps=seen
        )
        graph.image(svg_of_run(drawn, partial))

    return on_step


def show_ended(status, run: Run) -> None:
    """The status box once the run ended: its status, steps and time, amber where the answer
    has no tool result behind it or a part was not done, open unless it simply succeeded."""
    warned = run.outcome is not None  # answered without tools, or partly done: amber, not green
    state = {"succeeded": "error" if warned else "complete", "failed": "error", "cancelled": "error"}.get(
        run.status.value, "running"
    )
    status.update(
        label=f"Run {status_text(run)} · {len(run.steps)} steps · {run_seconds(run):.1f} s",
        state=state,
        expanded=run.status != RunStatus.SUCCEEDED or warned,
    )


def start(asked, flow_version_id: int, text: str) -> None:
    """Run the flow here, watching it, or hand it to the workers (the run is shown below)."""
    if not on_worker:
        live(
            "Running the flow…",
            lambda on_step: app.run(asked, text, on_step=on_step),
            (flow_version_id, text),
            drawn=asked,
        )
        return
    try:
        made_here(app.run_queued(asked, text).id)
    except (FlowCallError, ConfigError) as exc:
        st.error(md(exc))


if st.button("Run", type="primary", disabled=not question.strip()):
    st.session_state.pop("consent", None)
    if any(not granted for _, granted in app.trust_status(flow)):
        ask_consent(version_id, question.strip())  # nothing starts before the person grants it
    else:
        start(flow, version_id, question.strip())


# ------------------------------------------------------------------ consent
def consent_panel(consent: dict) -> None:
    """What the flow version would start or reach, ungranted; runs nothing until "Grant and run"."""
    try:
        asked = app.store.get_flow_version(
            consent["version_id"]
        )  # exactly the version shown, not a newer one
    except ConfigError:  # deleted meanwhile: nothing left to grant or run
        st.session_state.pop("consent", None)
        return
    missing = [item for item, granted in app.trust_status(asked) if not granted]
    panel = st.empty()
    with panel.container(border=True):
        st.warning(
            f"Flow {md(asked.name)} would start or reach the following, and nobody on this machine has "
            "granted it. Nothing has been started or sent. Read it; grant only what you expect."
        )
        show_trust_items(missing)
        c1, c2, _ = st.columns([2, 1, 5])
        grant = c1.button(
            "Grant and run" if consent["question"] is not None else "Grant",
            type="primary",
            key="consent:grant",
        )
        cancel = c2.button("Cancel", key="consent:cancel")
    if not (grant or cancel):
        return
    panel.empty()
    st.session_state.pop("consent", None)
    if cancel:
        st.info("Cancelled: nothing was granted, started or run.")
        return
    app.grant(asked, by="studio")
    if consent["question"] is None:
        st.success("Granted. Continue the run below.")
    else:
        start(asked, consent["version_id"], consent["question"])


if consent := st.session_state.get("consent"):
    consent_panel(consent)


if config.broker_url():
    active = app.store.list_runs(status=RunStatus.QUEUED, limit=50) + app.store.list_runs(
        status=RunStatus.RUNNING, limit=50
    )
    with st.expander(f"Queued and running runs ({len(active)})"):
        if active:
            watched = st.selectbox(
                "Run",
                [r.id for r in active],
                key="active-run",
                format_func=lambda i: run_line(next(r for r in active if r.id == i)),
            )
            if st.button("Watch it", key="watch-run"):
                st.session_state["run_id"] = watched
                st.rerun()  # shown under its own flow
        else:
            st.caption("None: every run has ended or waits for a person.")


@st.fragment(run_every=1.0)
def arriving(run_id: str) -> None:
    """A run that a worker (or another process) executes: its steps as they are committed."""
    run = app.store.get_run(run_id)
    if run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
        st.rerun()  # it ended, paused or was interrupted: the whole page shows it
    where = "waits for a worker" if run.status == RunStatus.QUEUED else f"runs in {run.owner}"
    st.info(md(f"Run {run.id[:8]} {where} · {len(run.steps)} steps so far"))
    st.image(svg_of_run(flow_or_none(run), run))
    for step in run.steps:
        st.text(describe_step(step))


def flow_or_none(run: Run) -> Flow | None:
    try:
        return app.flow_of(run)
    except ConfigError:
        return None


def cancel_button(run: Run, where=st) -> None:
    if where.button("Cancel the run", key=f"cancel:{run.id}"):
        try:
            app.cancel(run.id, by="studio")
        except ConfigError as exc:
            st.error(md(exc))
        else:
            st.rerun()


if run_id := st.session_state.get("run_id"):
    run = app.store.get_run(run_id)
    st.query_params["run"] = st.session_state["run:linked"] = run.id  # the address opens this run, in any tab
    st.caption(md(f"Run {run.id[:8]} of {run.flow_name}: {run.question}"))
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        arriving(run.id)
        cancel_button(run)
        st.stop()
    if run.status == RunStatus.WAITING_APPROVAL:
        st.warning("The run waits for you: these tool calls need a person's approval.")
        with st.form("approval"):
            choices: dict[str, tuple[str, str, str]] = {}
            for step in waiting_calls(run):
                st.markdown(f"**{md(step.name)}** (call {md(step.tool_call_id)})")
                if step.note != "waiting for a person to approve, deny or edit":
                    st.warning(md(step.note))  # e.g. it may have run already, before an interruption
                action = st.radio(
                    "Decision", ["approve", "edit", "deny"], horizontal=True, key=f"act:{step.tool_call_id}"
                )
                args = st.text_area(
                    "Arguments (edit them, then choose edit)",
                    as_json(step.arguments),
                    key=f"args:{step.tool_call_id}",
                )
                reason = st.text_input(
                    "Reason (told to the model when you deny)", key=f"why:{step.tool_call_id}"
                )
                choices[step.tool_call_id] = (action, args, reason)
            go = st.form_submit_button("Continue the run", type="primary")
        if go:
            decisions, problems = {}, []
            for call_id, (action, args, reason) in choices.items():
                if action == "edit":
                    try:
                        edited = json.loads(args)
                    except json.JSONDecodeError as exc:
                        problems.append(
                            f"call {call_id}: the arguments are not valid JSON ({exc.msg}, line {exc.lineno})"
                        )
                        continue
                    if not isinstance(edited, dict):
                        problems.append(f"call {call_id}: the arguments must be a JSON object")
                        continue
                    decisions[call_id] = Decision(action="edit", arguments=edited, reason=reason)
                else:
                    decisions[call_id] = Decision(action=action, reason=reason)
            if problems:
                st.error(
                    "Nothing was sent: " + md("; ".join(problems)) + ". Fix the arguments and continue again."
                )
            else:
                resumed = live(
                    "Continuing the run…",
                    lambda on_step: app.resume(
                        run.id, approver=lambda call, tool: decisions.get(call.id), on_step=on_step
                    ),
                    (run.flow_version_id, None),
                    drawn=flow_or_none(run),
                    so_far=run,
                )
                if (
                    resumed is not None
                ):  # else keep the error on screen, e.g. another tab or the CLI took the run
                    st.rerun()
    elif run.status == RunStatus.INTERRUPTED:
        done = sum(1 for s in run.steps if s.kind == StepKind.TOOL_CALL)
        st.warning(
            f"Run {md(run.id[:8])} was interrupted: the process running it stopped after {len(run.steps)} "
            f"steps ({done} tool calls). Resume goes on from its last committed step; a call that may have "
            "run already, and changes something, waits for your approval first."
        )
        c1, c2, _ = st.columns([1, 1, 5])
        if c1.button("Resume", type="primary", key=f"resume:{run.id}"):
            resumed = live(
                "Resuming the run…",
                lambda on_step: app.resume(run.id, approver=None, on_step=on_step),
                (run.flow_version_id, None),
                drawn=flow_or_none(run),
                so_far=run,
            )
            if resumed is not None:
                st.rerun()
        cancel_button(run, c2)
    elif run.status == RunStatus.CANCELLED:
        st.warning(f"Run {md(run.id[:8])} was cancelled: {md(run.error or '')}")
    else:
        st.subheader("Answer")
        show_answer(run)
    st.subheader("What the run did")
    st.caption("Click a node to see its calls and to pick out its steps below.")
    graph_col, detail_col = st.columns([3, 2])
    with graph_col:
        node = draw_run(app, run, key=f"run-graph:{run.id}")
    with detail_col:
        only = node_detail(app, run, node) if node else []
    rows = steps_table(run)
    if only:
        rows = [row for row, step in zip(rows, run.steps) if step.seq in only]
    label = f"Steps of run {md(run.id[:8])} ({run.tokens_in}+{run.tokens_out} tokens)"
    with st.expander(
        label + (f" · only the {len(rows)} of the node picked" if only else ""), expanded=bool(only)
    ):
        st.dataframe(rows, hide_index=True)
    st.page_link(
        "pages/runs.py",
        label="Open it in the inspector",
        icon=":material/manage_search:",
        query_params={"run": run.id},
    )
