"""A run drawn on its flow's graph, in the studio: each tool with its call count, errors in red,
a call waiting for a person in amber, tokens and time per model. Used by the Run page (live, as
steps commit, and after) and the inspector (click a node to go to its steps)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from flowcall.core.config import model_label
from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.spec import Flow
from flowcall.core.steps import Run
from flowcall.service.front import FlowCall
from flowcall.studio import flowgraph as fg
from flowcall.studio.canvas import canvas
from flowcall.studio.shared import as_json, md


def run_flow(app: FlowCall, run: Run) -> Flow | None:
    """The flow version the run ran, drawn where its flow's nodes sit today; None when gone."""
    try:
        flow = app.flow_of(run)
    except ConfigError:
        return None
    try:
        layout = app.get_flow(run.flow_name)[0].layout
    except NotFoundError:
        layout = None
    return flow.model_copy(update={"layout": layout})


def run_canvas(flow: Flow | None, run: Run) -> tuple[fg.CanvasState, dict[str, fg.NodeMark]]:
    """The graph and each node's part in the run. A tool the run called that the flow (as
    drawn) does not hold gets a node of its own, so nothing the run did goes undrawn."""
    marks = fg.run_marks(run, flow)
    if flow is None:
        state = fg.CanvasState(
            settings={"name": run.flow_name},
            nodes=[
                fg.CanvasNode(
                    id=kind,
                    kind=kind,
                    x=fg.default_position(kind)[0],
                    y=fg.default_position(kind)[1],
                    config={"provider": "?", "model": "?"} if kind == "decision" else {},
                )
                for kind in ("question", "decision", "answer")
            ],
        )
    else:
        state = fg.to_canvas(flow)
    for node_id in marks:
        if node_id.startswith("tool:") and state.node(node_id) is None:
            state = fg.add_node(state, "tool", {"ref": node_id.removeprefix("tool:")})
    return state, marks


def svg_of_run(flow: Flow | None, run: Run) -> str:
    """The picture of a run so far: drawn on each step as it commits (no widget, so no rerun)."""
    state, marks = run_canvas(flow, run)
    return fg.to_svg(state, marks)


# The Run page's graph: tall enough that a flow of five nodes fits at a readable size.
RUN_GRAPH_PX = 480


def draw_run(app: FlowCall, run: Run, key: str, height: int = 340) -> str | None:
    """The run on its graph; returns the node the person last clicked (kept per run)."""
    state, marks = run_canvas(run_flow(app, run), run)
    chosen_key = f"{key}:node"
    selected = st.session_state.get(chosen_key)
    event = canvas(
        fg.node_view(state, selected=selected, marks=marks, model_label=model_label),
        fg.edge_view(state, marks),
        key=key,
        height=height,
        fit_token=run.id,
    )
    if event and event.get("kind") == "select":
        picked = event.get("id")
        st.session_state[chosen_key] = picked if isinstance(picked, str) and state.node(picked) else None
        st.rerun()
    return selected if selected and state.node(selected) else None


def node_detail(app: FlowCall, run: Run, node_id: str) -> list[int]:
    """What the run did at one node: calls, time, the last arguments and result or error.
    Returns the numbers of its steps."""
    state, marks = run_canvas(run_flow(app, run), run)
    mark, node = marks.get(node_id), state.node(node_id)
    if node is None:
        return []
    title = fg.bare_name(node.config["ref"]) if node.kind == "tool" else fg.LABELS[node.kind]
    if mark is None or not mark.steps:
        st.caption(md(f"{title}: the run did not reach it."))
        return []
    if node.kind == "tool":
        st.markdown(
            f"**{md(title)}** · {mark.calls} call{'s' if mark.calls != 1 else ''} · "
            f"steps {', '.join(map(str, mark.steps))}"
        )
        if mark.status == "waiting":
            st.warning("A call to this tool waits for your approval.")
        if mark.last_arguments is not None:
            st.caption("Last arguments")
            st.code(as_json(mark.last_arguments), language="json")
        if mark.last_error:
            st.error(md(mark.last_error))
        elif mark.last_result is not None:
            st.caption("Last result")
            st.code(as_json(mark.last_result), language="json")
    else:
        st.markdown(
            f"**{md(title)}** · {mark.calls} call{'s' if mark.calls != 1 else ''} · {mark.tokens} tokens · "
            f"{mark.latency_ms / 1000:.1f} s · steps {', '.join(map(str, mark.steps))}"
        )
        if mark.last_error:
            st.error(md(mark.last_error))
    return mark.steps


def path_summary(run: Run, flow: Flow | None) -> dict[str, Any]:
    """Which nodes a run went through, and how often, for a side-by-side comparison."""
    return {node_id: m.calls for node_id, m in fg.run_marks(run, flow).items() if m.steps}
