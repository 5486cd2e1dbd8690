"""The runs waiting for a person: paused until someone approves, denies or edits a tool call.

`waiting_runs` lists them through the store, newest pause first; `show_waiting` draws them in
the sidebar of every page (app.py, `waiting_in_sidebar`, redrawn every few seconds: a compact
"Waiting for you (N)" with a link per run, nothing when none waits) or on the Run page (a box
with each run's question, call and wait). A link
opens the run on the Run page (`/ask?run=ID`), where the person answers it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import streamlit as st

from flowcall.core.errors import ConfigError
from flowcall.core.steps import RunStatus, utcnow, waiting_calls
from flowcall.rendering import short
from flowcall.service.front import FlowCall
from flowcall.studio.shared import md

RUN_PAGE = "pages/run.py"
SIDEBAR_SHOWN = 5  # links in the sidebar; the rest are counted
LISTED = 50  # runs read with their steps, at most


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # SQLite gives naive UTC


def waiting_runs(app: FlowCall, limit: int = LISTED) -> list[dict[str, Any]]:
    """The runs that wait for a person, newest pause first: run_id, flow_name, question, tool
    (the first call waiting), calls (each waiting call's tool, call_id and arguments) and since
    (when it paused, UTC). A run resumed or deleted while this reads is left out, and so is a
    sub-flow's run whose parent waits: the parent lists its calls as `<sub-flow> › <tool>`."""
    found = []
    summaries = app.list_runs(status=RunStatus.WAITING_APPROVAL, limit=limit)
    parents = {summary.id for summary in summaries}
    for summary in summaries:
        if summary.parent_run_id in parents:
            continue  # a sub-flow's run: its parent lists its calls, and approving them goes on with both
        try:
            run = app.get_run(summary.id)
        except ConfigError:
            continue  # deleted meanwhile
        if run.status != RunStatus.WAITING_APPROVAL:
            continue  # another tab or the CLI took it meanwhile
        calls = waiting_calls(run)
        if calls:
            since = min(_aware(s.started_at) for s in calls)
        else:  # paused with its calls not recorded as waiting (an older run): its last step
            since = _aware(run.steps[-1].ended_at if run.steps else run.started_at)
        found.append(
            {
                "run_id": run.id,
                "flow_name": run.flow_name,
                "question": run.question,
                "tool": calls[0].name if calls else None,
                "calls": [
                    {"tool": s.name, "call_id": s.tool_call_id, "arguments": s.arguments} for s in calls
                ],
                "since": since,
            }
        )
    return sorted(found, key=lambda w: w["since"], reverse=True)


def waiting_for(since: datetime, now: datetime | None = None) -> str:
    """How long a run has waited, in words: "2 min", "3 h", "since 2026-05-01"."""
    seconds = ((now or utcnow()) - _aware(since)).total_seconds()
    if seconds < 60:
        return "under a minute"
    if seconds < 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h"
    return f"since {since:%Y-%m-%d}"


def _what(waiting: dict[str, Any]) -> str:
    """The calls waiting, plain text: "delete_file", "delete_file and 1 more call"."""
    calls = waiting["calls"]
    if not calls:
        return "a tool call"
    more = len(calls) - 1
    return short(calls[0]["tool"] or "a tool call", 40) + (
        f" and {more} more call{'s' * (more > 1)}" if more else ""
    )


def show_waiting(
    app: FlowCall,
    where: Literal["sidebar", "page"] = "sidebar",
    *,
    skip: str | None = None,
    run_page: Any = RUN_PAGE,
) -> int:
    """Draw the runs waiting for a person, each with a link that opens it on the Run page
    (`run_page`: its file, relative to app.py, or its st.Page). `sidebar`: compact, in
    st.sidebar; `page`: a box in the page's flow. Nothing is drawn when none waits (`skip`: a
    run the page shows already). Returns how many were listed. Flow names, questions and tool
    names are untrusted text: all of it goes through md()."""
    try:
        runs = [w for w in waiting_runs(app) if w["run_id"] != skip]
    except ConfigError:  # the database cannot be read now: the page says so itself
        return 0
    if not runs:
        return 0
    count = f"{len(runs)}+" if len(runs) >= LISTED else str(len(runs))
    if where == "sidebar":
        _in_sidebar(runs, count, run_page)
    else:
        _in_page(runs, count, run_page)
    return len(runs)


@st.fragment(run_every=3.0)
def waiting_in_sidebar(app: FlowCall, run_page: Any = RUN_PAGE) -> None:
    """`show_waiting` in the sidebar, drawn again every 3 s: a run that starts waiting for a
    person, in whatever tab or process, shows in every open tab. Call it inside `st.sidebar`."""
    show_waiting(app, "sidebar", run_page=run_page)


def _in_sidebar(runs: list[dict[str, Any]], count: str, run_page: Any) -> None:
    """The first SIDEBAR_SHOWN waiting runs as links (drawn where the caller is: the sidebar),
    then how many more wait."""
    st.markdown(
        f"**Waiting for you ({count})**",
        help="Runs paused until you approve, deny or edit a tool call. Open one to answer it.",
    )
    for waiting in runs[:SIDEBAR_SHOWN]:
        st.page_link(
            run_page,
            label=md(f"{short(waiting['flow_name'], 24)} · {_what(waiting)}"),
            query_params={"run": waiting["run_id"]},
            icon=":material/front_hand:",
            help=md(f"{short(waiting['question'], 200)} (waiting {waiting_for(waiting['since'])})"),
        )
    if len(runs) > SIDEBAR_SHOWN:
        st.caption(f"and {len(runs) - SIDEBAR_SHOWN} more: see Runs & inspector, status waiting_approval")


def _in_page(runs: list[dict[str, Any]], count: str, run_page: Any) -> None:
    """Every waiting run in a box in the page: its flow, what waits, since when, its question, and a link."""
    with st.container(border=True):
        st.markdown(
            f"**Waiting for you ({count})**: these runs are paused until you approve, deny or edit "
            "a tool call."
        )
        for waiting in runs:
            text, link = st.columns([5, 1], vertical_alignment="center")
            text.markdown(
                f"**{md(short(waiting['flow_name'], 60))}** · {md(_what(waiting))} · waiting "
                f"{md(waiting_for(waiting['since']))}  \n{md(short(waiting['question'], 160))}"
            )
            with link:
                st.page_link(
                    run_page,
                    label="Open",
                    query_params={"run": waiting["run_id"]},
                    icon=":material/front_hand:",
                    help=md(f"Run {waiting['run_id'][:8]}"),
                )
