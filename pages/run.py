"""Run: pick a flow, ask, watch the steps arrive; approve, deny or edit a call that waits for
a person; see the answer (a structured one as a card, with its raw JSON beside it)."""

from __future__ import annotations

import json

import streamlit as st

from flowcall.approval import Decision
from flowcall.cli import describe_step
from flowcall.errors import FlowCallError
from flowcall.steps import Run, RunStatus, Step, StepKind
from flowcall.studio import EXAMPLE_QUESTIONS, as_json, service, show_answer, steps_table

app = service()
st.title("Run a flow")

flows = app.store.list_flows()
if not flows:
    st.info("No flows yet: create one on the Flows page.")
    st.stop()
names = [f["name"] for f in flows]
preferred = st.session_state.get("flow")
name = st.selectbox("Flow", names, index=names.index(preferred) if preferred in names else 0)
flow, _, version = app.store.get_flow(name)
st.caption(f"version {version} · {flow.description}")
question = st.text_area("Question", EXAMPLE_QUESTIONS.get(name, ""), height=80, key=f"question:{name}")


def live(label: str, work) -> Run | None:
    """Run `work(on_step)` inside a status box that fills with the steps as they end."""
    with st.status(label, expanded=True) as status:
        def on_step(step: Step) -> None:
            st.text(describe_step(step))

        try:
            run = work(on_step)
        except FlowCallError as exc:
            status.update(label="Could not run", state="error")
            st.error(f"{exc}")
            return None
        state = {"succeeded": "complete", "failed": "error"}.get(run.status.value, "running")
        status.update(label=f"Run {run.status.value} · {len(run.steps)} steps · "
                            f"{sum(s.latency_ms for s in run.steps) / 1000:.1f} s",
                      state=state, expanded=run.status != RunStatus.SUCCEEDED)
    st.session_state["run_id"] = run.id
    return run


if st.button("Run", type="primary", disabled=not question.strip()):
    live("Running the flow…", lambda on_step: app.run(flow, question.strip(), on_step=on_step))


def waiting_calls(run: Run) -> list[Step]:
    """The calls the paused run waits on: its last approval steps still pending."""
    pending = {c["id"] for c in app.store.get_checkpoint(run.id).get("pending", [])}
    waiting: dict[str, Step] = {}
    for step in run.steps:
        if step.kind == StepKind.APPROVAL and step.tool_call_id in pending and step.note and step.note.startswith("waiting"):
            waiting[step.tool_call_id] = step
    return list(waiting.values())


if run_id := st.session_state.get("run_id"):
    run = app.store.get_run(run_id)
    if run.status == RunStatus.WAITING_APPROVAL:
        st.warning("The run waits for you: these tool calls need a person's approval.")
        with st.form("approval"):
            choices: dict[str, tuple[str, str, str]] = {}
            for step in waiting_calls(run):
                st.markdown(f"**{step.name}** (call `{step.tool_call_id}`)")
                action = st.radio("Decision", ["approve", "edit", "deny"], horizontal=True, key=f"act:{step.tool_call_id}")
                args = st.text_area("Arguments (edit them, then choose edit)", as_json(step.arguments),
                                    key=f"args:{step.tool_call_id}")
                reason = st.text_input("Reason (told to the model when you deny)", key=f"why:{step.tool_call_id}")
                choices[step.tool_call_id] = (action, args, reason)
            go = st.form_submit_button("Continue the run", type="primary")
        if go:
            decisions, problems = {}, []
            for call_id, (action, args, reason) in choices.items():
                if action == "edit":
                    try:
                        edited = json.loads(args)
                    except json.JSONDecodeError as exc:
                        problems.append(f"call {call_id}: the arguments are not valid JSON ({exc.msg}, line {exc.lineno})")
                        continue
                    if not isinstance(edited, dict):
                        problems.append(f"call {call_id}: the arguments must be a JSON object")
                        continue
                    decisions[call_id] = Decision(action="edit", arguments=edited, reason=reason)
                else:
                    decisions[call_id] = Decision(action=action, reason=reason)
            if problems:
                st.error("Nothing was sent: " + "; ".join(problems) + ". Fix the arguments and continue again.")
            else:
                live("Continuing the run…", lambda on_step: app.resume(
                    run.id, approver=lambda call, tool: decisions.get(call.id), on_step=on_step))
                st.rerun()
    else:
        st.subheader("Answer")
        show_answer(run)
    with st.expander(f"Steps of run {run.id[:8]} ({run.tokens_in}+{run.tokens_out} tokens)"):
        st.dataframe(steps_table(run), hide_index=True)
    st.page_link("pages/runs.py", label="Open it in the inspector", icon=":material/manage_search:")
