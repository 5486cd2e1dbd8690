"""Runs going on: the one a page follows, live, and the list of every queued and running run.

Both are fragments that redraw themselves from the database (and from the runner, for a run's
place in line and the text a model is writing), so the page around them stays as it is, and a
click elsewhere leaves the run alone: only Stop stops it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import streamlit as st

from flowcall.core import config
from flowcall.core.errors import ConfigError
from flowcall.core.steps import Run, RunStatus, utcnow
from flowcall.rendering import describe_step, short
from flowcall.service.front import FlowCall
from flowcall.studio.graph import RUN_GRAPH_PX, draw_run, node_detail
from flowcall.studio.shared import md
from flowcall.workers.runner import Runner

RUN_PAGE = "pages/run.py"
LISTED = 50  # queued and running runs listed, of each


def going_on(runner: Runner, run: Run) -> bool:
    """Is the run queued or running, or handed to the runner to go on (a resume or a person's
    decisions not yet taken up)?"""
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        return True
    return runner.holds(run.id) and run.status in (RunStatus.WAITING_APPROVAL, RunStatus.INTERRUPTED)


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def where_it_is(runner: Runner, run: Run) -> str:
    """Where a run that goes on is, in words: "2nd in line for the embedded model", "running"."""
    place = runner.place(run.id)
    if place:
        return f"{ordinal(place)} in line for the embedded model"
    if runner.holds(run.id):
        return "running" if run.status == RunStatus.RUNNING or place == 0 else "starting"
    if run.status == RunStatus.RUNNING:
        return f"running in another process ({run.owner})"
    if config.broker_url():
        return "waiting for a worker"
    return "queued, and nothing here runs it (the studio was restarted): start it again"


def elapsed(run: Run, now: datetime | None = None) -> str:
    """How long the run has gone on (or waited, if it has not started): "12 s", "3 min 5 s"."""
    since = run.queued_at if run.status == RunStatus.QUEUED and run.queued_at else run.started_at
    since = since if since.tzinfo else since.replace(tzinfo=UTC)  # SQLite gives naive UTC
    seconds = max(0, int(((now or utcnow()) - since).total_seconds()))
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60} s"


def stop_button(app: FlowCall, run: Run, key: str, where=st) -> None:
    if where.button("Stop", key=key, help="Stop this run; it is recorded as cancelled"):
        try:
            app.cancel(run.id, by="studio")
        except ConfigError as exc:  # it ended meanwhile
            st.warning(md(exc))
        st.rerun()


def orphan(runner: Runner, run: Run) -> bool:
    """A queued run that nothing will start: not in this runner, and no workers to take it."""
    return run.status == RunStatus.QUEUED and not runner.holds(run.id) and not config.broker_url()


@st.fragment(run_every=1.0)
def show_going_on(app: FlowCall, runner: Runner, run_id: str) -> None:
    """A run as it goes on, redrawn every second: where it is, Stop, the text the model is
    writing, and the real graph (click a node for its calls). When it ends or waits for a
    person, the whole page is drawn again to show it."""
    run = app.get_run(run_id)
    if not going_on(runner, run):
        st.rerun()
    head, stop = st.columns([6, 1], vertical_alignment="center")
    head.info(
        md(f"Run {run.id[:8]}: {where_it_is(runner, run)} · {elapsed(run)} · {len(run.steps)} steps so far")
    )
    stop_button(app, run, f"stop:{run.id}", stop)
    if problem := runner.problems.get(run.id):  # e.g. another tab or the CLI took it first
        st.error(f"What you asked for could not be done: {md(problem)}")
    if orphan(runner, run) and st.button("Start it", type="primary", key=f"start:{run.id}"):
        runner.hand_over([run.id])  # an orphan: no broker, so the runner is its door
        st.rerun()
    if writing := runner.writing.get(run.id):
        st.caption(md(f"{writing.label} · {time.monotonic() - writing.since:.1f} s · writing"))
        st.text(writing.text or "…")
    graph_col, detail_col = st.columns([3, 2])
    with graph_col:
        node = draw_run(app, run, key=f"run-graph:{run.id}", height=RUN_GRAPH_PX)
    with detail_col:
        if node:
            node_detail(app, run, node)
    with st.expander(f"Steps so far ({len(run.steps)})"):
        for step in run.steps:
            st.text(describe_step(step))


@st.fragment(run_every=2.0)
def show_active(
    app: FlowCall, runner: Runner, *, key: str, skip: str | None = None, always: bool = False
) -> None:
    """Every queued and running run, redrawn every two seconds: its flow and question, where
    it is, how long it has gone on, a link to follow it and Stop. `skip`: a run the page shows
    already; `always`: say so when none goes on (else draw nothing)."""
    found = app.list_runs(status=RunStatus.RUNNING, limit=LISTED)
    found += app.list_runs(status=RunStatus.QUEUED, limit=LISTED)
    active = [r for r in found if r.id != skip and r.status in (RunStatus.QUEUED, RunStatus.RUNNING)]
    if not active:
        if always:
            st.caption("No run is queued or running.")
        return
    with st.container(border=True):
        st.markdown(f"**Going on now ({len(active)})**")
        for run in active:
            text, link, stop = st.columns([6, 1, 1], vertical_alignment="center")
            text.markdown(
                md(f"{short(run.flow_name, 40)} · {where_it_is(runner, run)} · {elapsed(run)}")
                + f"  \n{md(short(run.question, 120))}"
            )
            with link:
                st.page_link(
                    RUN_PAGE, label="Follow", query_params={"run": run.id}, icon=":material/visibility:"
                )
            stop_button(app, run, f"{key}:stop:{run.id}", stop)
