"""The canvas the studio draws flows and runs on: React Flow (@xyflow/react) in a Streamlit
component. Its source is in frontend/; the built files in build/ ship with FlowCall, so running
it needs no Node and fetches nothing (no CDN). Rebuild after changing the source:
`cd flowcall/studio/canvas/frontend && npm ci && npm run build`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st
import streamlit.components.v1 as components

BUILD = Path(__file__).parent / "build"
_component = components.declare_component("flowcall_canvas", path=str(BUILD))


def canvas(
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    *,
    key: str,
    editable: bool = False,
    height: int = 480,
    export: bool = False,
    fit_token: str = "",
) -> dict[str, Any] | None:
    """Draw a graph (flowgraph.node_view / edge_view); return the event a person just made on it
    (select, move, delete, disconnect, connect, export), once, or None. The component keeps its
    last value across reruns, so each event carries a sequence number and is handed out once."""
    value = _component(
        nodes=nodes,
        edges=edges,
        editable=editable,
        height=height,
        export=export,
        legend=any(n.get("kind") == "tool" for n in nodes),
        fit_token=fit_token,
        selected=next((n["id"] for n in nodes if n.get("selected")), None),
        key=key,
        default=None,
    )
    if not isinstance(value, dict) or not isinstance(value.get("seq"), str):
        return None
    seen = f"{key}:seen"
    if st.session_state.get(seen) == value["seq"]:
        return None
    st.session_state[seen] = value["seq"]
    return value
