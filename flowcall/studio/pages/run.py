"""Run: pick a flow, ask, and follow the run as it goes; approve, deny or edit a call that
waits for a person; see the answer (a structured one as a card, with its raw JSON beside it).
A flow that would start a program or reach a server nobody granted first shows what, and runs
only after "Grant and run".

A run is handed to the studio's runner (or to the workers, with a broker) and this page follows
it from the database: a click, another page, a reload or a closed tab never stops it; only Stop
does. Its address (?run=ID) opens it in any tab."""

from __future__ import annotations

import json

import streamlit as st

from flowcall.core.errors import ConfigError, FlowCallError
from flowcall.core.steps import Run, RunStatus, StepKind, waiting_calls
from flowcall.engine.approval import MAYBE_RAN_NOTE, WAITING_NOTE, Decision
from flowcall.service.door import Refused, choose, start_run
from flowcall.studio.active import going_on, show_active, show_going_on
from flowcall.studio.graph import RUN_GRAPH_PX, draw_run, node_detail
from flowcall.studio.shared import (
    EXAMPLE_QUESTIONS,
    WARMING_NOTE,
    as_json,
    md,
    service,
    show_answer,
    show_trust_items,
    steps_table,
)
from flowcall.studio.waiting import show_waiting
from flowcall.trust.consent import TrustRequired
from flowcall.workers.runner import runner_for

app = service()
runner = runner_for(app)  # one per studio process: runs go on there, whatever this page does
st.title("Run a flow")

flows = app.list_flows()
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
        return app.get_run(run_id)
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
flow, version_id, version = app.get_flow(name)
st.caption(md(" · ".join(part for part in (f"version {version}", flow.description) if part)))
st.session_state.setdefault(f"question:{name}", EXAMPLE_QUESTIONS.get(name, ""))
question = st.text_area("Question", height=80, key=f"question:{name}")
if "local" in {flow.decision.provider, flow.polish.provider if flow.polish else None} and (
    app.prompt_cache_warming()
):
    st.caption(WARMING_NOTE)


def ask_consent(flow_version_id: int, question: str | None) -> None:
    """Show the consent panel for this flow version; `question` is what runs once granted
    (None: a paused run, which the person continues after granting)."""
    st.session_state["consent"] = {"version_id": flow_version_id, "question": question}


def start(asked, flow_version_id: int, text: str) -> None:
    """Record the run and hand it over (to the runner, or the workers); the page then follows
    it (below). A broker this store cannot use, or a key not set, is refused before anything
    is recorded; a door that does not take the run leaves it cancelled, saying why."""
    try:
        run = start_run(app, choose(app, runner), asked, text)
    except TrustRequired:  # revoked, or the flow changed, since the grant was checked
        ask_consent(flow_version_id, text)
        st.rerun()
    except Refused as exc:  # the broker did not take it: the run says so, and so does this page
        st.error(md(exc))
        made_here(exc.run_ids[0])
    except (FlowCallError, ConfigError) as exc:
        st.error(f"Nothing was run: {md(exc)}")
    else:
        made_here(run.id)


# Never disabled: a question typed but not yet sent (no Ctrl+Enter, no click elsewhere) reaches
# the page with this click, so a disabled button would swallow the person's first click.
if st.button("Run", type="primary"):
    st.session_state.pop("consent", None)
    if not question.strip():
        st.warning("Type a question first, then press Run.")
    elif any(not granted for _, granted in app.trust_status(flow)):
        ask_consent(version_id, question.strip())  # nothing starts before the person grants it
    else:
        start(flow, version_id, question.strip())


# ------------------------------------------------------------------ consent
def consent_panel(consent: dict) -> None:
    """What the flow version would start or reach, ungranted; runs nothing until "Grant and run"."""
    try:
        asked = app.get_flow_version(consent["version_id"])  # exactly the version shown, not a newer one
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


show_active(app, runner, key="run-page", skip=st.session_state.get("run_id"))


def cancel_button(run: Run, where=st) -> None:
    if where.button("Cancel the run", key=f"cancel:{run.id}"):
        try:
            app.cancel(run.id, by="studio")
        except ConfigError as exc:
            st.error(md(exc))
        else:
            st.rerun()


def approval_form(run: Run) -> None:
    """The calls that wait, each to approve, edit or deny; the run then goes on in the runner."""
    st.warning("The run waits for you: these tool calls need a person's approval.")
    with st.form("approval"):
        choices: dict[str, tuple[str, str, str]] = {}
        for step in waiting_calls(run):
            st.markdown(f"**{md(step.name)}** (call {md(step.tool_call_id)})")
            if step.note == MAYBE_RAN_NOTE:  # started before an interruption: it may have run already
                st.warning(md(step.note))
            elif step.note.startswith(f"{WAITING_NOTE}: "):  # why it waits, so the person can change that
                st.caption(md("Why it waits: " + step.note.removeprefix(f"{WAITING_NOTE}: ")))
            action = st.radio(
                "Decision", ["approve", "edit", "deny"], horizontal=True, key=f"act:{step.tool_call_id}"
            )
            args = st.text_area(
                "Arguments (edit them, then choose edit)",
                as_json(step.arguments),
                key=f"args:{step.tool_call_id}",
            )
            reason = st.text_input("Reason (told to the model when you deny)", key=f"why:{step.tool_call_id}")
            choices[step.tool_call_id] = (action, args, reason)
        go = st.form_submit_button("Continue the run", type="primary")
    if not go:
        return
    decisions, problems = decisions_from(choices)
    if problems:
        st.error("Nothing was sent: " + md("; ".join(problems)) + ". Fix the arguments and continue again.")
        return
    runner.continue_with(run.id, lambda call, tool: decisions.get(call.id))
    st.rerun()


def decisions_from(choices: dict[str, tuple[str, str, str]]) -> tuple[dict[str, Decision], list[str]]:
    """The person's decisions by call id, and what is wrong with edited arguments."""
    decisions, problems = {}, []
    for call_id, (action, args, reason) in choices.items():
        if action != "edit":
            decisions[call_id] = Decision(action=action, reason=reason)
            continue
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
    return decisions, problems


def interrupted(run: Run) -> None:
    """A run whose process stopped: Resume hands it to the runner, from its last committed step."""
    done = sum(1 for s in run.steps if s.kind == StepKind.TOOL_CALL)
    st.warning(
        f"Run {md(run.id[:8])} was interrupted: the process running it stopped after {len(run.steps)} "
        f"steps ({done} tool calls). Resume goes on from its last committed step; a call that may have "
        "run already, and changes something, waits for your approval first."
    )
    c1, c2, _ = st.columns([1, 1, 5])
    if c1.button("Resume", type="primary", key=f"resume:{run.id}"):
        try:
            choose(app, runner).hand_over([run.id])
        except ConfigError as exc:  # the broker did not take it: the run stays interrupted
            st.error(md(exc))
        else:
            st.rerun()
    cancel_button(run, c2)


def what_it_did(run: Run) -> None:
    """The run on the flow's graph (click a node for its calls) and its steps."""
    st.subheader("What the run did")
    st.caption("Click a node to see its calls and to pick out its steps below.")
    graph_col, detail_col = st.columns([3, 2])
    with graph_col:
        node = draw_run(app, run, key=f"run-graph:{run.id}", height=RUN_GRAPH_PX)
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


if run_id := st.session_state.get("run_id"):
    run = app.get_run(run_id)
    st.query_params["run"] = st.session_state["run:linked"] = run.id  # the address opens this run, in any tab
    st.caption(md(f"Run {run.id[:8]} of {run.flow_name}: {run.question}"))
    if going_on(runner, run):
        show_going_on(app, runner, run.id)  # live, until it ends or waits for a person
        st.stop()
    if problem := runner.problems.get(run.id):  # what the runner could not do with it
        st.error(f"The run could not go on: {md(problem)}")
    if run.status == RunStatus.WAITING_APPROVAL:
        approval_form(run)
    elif run.status == RunStatus.INTERRUPTED:
        interrupted(run)
    elif run.status == RunStatus.CANCELLED:
        st.warning(f"Run {md(run.id[:8])} was cancelled: {md(run.error or '')}")
    else:
        st.subheader("Answer")
        show_answer(run)
    what_it_did(run)
