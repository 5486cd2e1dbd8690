"""A flow as a graph: the canvas the studio draws and edits, and a run drawn on it.

question → decision → tools (each a node) → polish → answer. The canvas state holds everything
the flow holds (so canvas → flow → canvas and flow → canvas → flow give back what they started
from) plus where each node sits. Positions are layout: the engine never reads them, and they
never make a new version of a flow by themselves.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal
from xml.sax.saxutils import escape as xml_escape

from pydantic import BaseModel, Field

from flowcall.core.errors import ConfigError
from flowcall.core.inert import inert
from flowcall.core.spec import Flow, FlowLayout, parse_flow
from flowcall.core.steps import Run, RunStatus, StepKind

NodeKind = Literal["question", "decision", "tool", "polish", "answer"]
# the flow's loop settings are the decision node's: the side panel edits them with the model
LOOP_KEYS = ("tool_choice", "parallel_tool_calls", "max_rounds", "retry_budget", "router_rules")
MAIN_Y = {"question": 0, "decision": 130, "polish": 330, "answer": 480}
LABELS = {
    "question": "Question",
    "decision": "Decision model",
    "tool": "Tool",
    "polish": "Polish model",
    "answer": "Answer",
}


class CanvasNode(BaseModel):
    id: str
    kind: NodeKind
    x: float = 0.0
    y: float = 0.0
    config: dict[str, Any] = Field(default_factory=dict)
    attached: bool = True  # a tool on the canvas but not connected to the decision model is not in the flow


class CanvasState(BaseModel):
    """What the canvas edits: flow-wide settings, and the nodes in order (tools in the flow's order)."""

    settings: dict[str, Any]
    nodes: list[CanvasNode]

    def node(self, node_id: str) -> CanvasNode | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def of_kind(self, kind: str) -> list[CanvasNode]:
        return [n for n in self.nodes if n.kind == kind]


def tool_id(ref: str) -> str:
    return f"tool:{ref}"


def bare_name(ref: str) -> str:
    """The name the engine and the model know a tool by (data/v1/read_csv → read_csv)."""
    return ref.split("/", 2)[2] if ref.count("/") >= 2 else ref


def tool_source(ref: str, settings: dict[str, Any]) -> tuple[str, str]:
    """(kind, source name) of an attached tool: plugin, mcp, http, flow (a sub-flow) or the
    kind of another source the flow lists."""
    namespace = ref.split("/", 1)[0]
    if any(s.get("name") == namespace for s in settings.get("mcp_servers", [])) and "/mcp/" in ref:
        return "mcp", namespace
    if any(s.get("name") == namespace for s in settings.get("http_tools", [])) and "/http/" in ref:
        return "http", namespace
    for kind, entries in (settings.get("sources") or {}).items():
        if f"/{kind}/" in ref and any(s.get("name") == namespace for s in entries):
            return kind, namespace
    return "plugin", namespace


def sub_flow_of(ref: str, settings: dict[str, Any]) -> tuple[str, int] | None:
    """(flow name, version) a sub-flow tool runs, or None for any other tool: its node opens that flow."""
    if tool_source(ref, settings)[0] != "flow":
        return None
    namespace = ref.split("/", 1)[0]
    entry = next(s for s in settings["sources"]["flow"] if s.get("name") == namespace)
    return str(entry.get("flow")), int(entry.get("version") or 0)


def default_position(kind: str, index: int = 0) -> tuple[float, float]:
    # top to bottom, the tools in columns to the right of the decision model
    if kind == "tool":
        return 260.0 + (index // 4) * 210.0, 60.0 + (index % 4) * 110.0
    return 0.0, float(MAIN_Y[kind])


# ------------------------------------------------------------------ flow ↔ canvas


def to_canvas(flow: Flow) -> CanvasState:
    """The canvas of a flow, at its saved positions (defaults for a node that has none)."""
    data = flow.model_dump(mode="json")
    layout = flow.layout or FlowLayout()
    placed = dict(layout.positions)

    def at(node_id: str, kind: str, index: int = 0) -> tuple[float, float]:
        return tuple(placed.get(node_id, default_position(kind, index)))  # type: ignore[return-value]

    decision = {**data.pop("decision"), **{k: data.pop(k) for k in LOOP_KEYS}}
    tools, polish = data.pop("tools"), data.pop("polish", None)
    nodes = [
        CanvasNode(
            id="question", kind="question", x=at("question", "question")[0], y=at("question", "question")[1]
        )
    ]
    x, y = at("decision", "decision")
    nodes.append(CanvasNode(id="decision", kind="decision", x=x, y=y, config=decision))
    refs = [(ref, True) for ref in tools] + [(ref, False) for ref in layout.parked if ref not in tools]
    for i, (ref, attached) in enumerate(refs):
        x, y = at(tool_id(ref), "tool", i)
        nodes.append(
            CanvasNode(id=tool_id(ref), kind="tool", x=x, y=y, config={"ref": ref}, attached=attached)
        )
    if polish is not None:
        x, y = at("polish", "polish")
        nodes.append(CanvasNode(id="polish", kind="polish", x=x, y=y, config=polish))
    x, y = at("answer", "answer")
    nodes.append(CanvasNode(id="answer", kind="answer", x=x, y=y))
    return CanvasState(settings=data, nodes=nodes)


def to_flow(state: CanvasState) -> Flow:
    """The flow a canvas shows, with its positions as layout. ConfigError when it is not a flow
    yet (no decision model) or a setting is wrong."""
    data = {k: v for k, v in state.settings.items() if not k.startswith("_")}
    decision_node = state.node("decision")
    if decision_node is None:
        raise ConfigError(
            "the flow has no decision model yet: add one from the palette (Models › Decision model)"
        )
    decision = dict(decision_node.config)
    data.update({k: decision.pop(k) for k in LOOP_KEYS if k in decision})
    data["decision"] = decision
    data["tools"] = [n.config["ref"] for n in state.of_kind("tool") if n.attached]
    polish = state.node("polish")
    data["polish"] = polish.config if polish else None
    flow = parse_flow(data, source="the canvas")
    flow.layout = FlowLayout(
        positions={n.id: (n.x, n.y) for n in state.nodes},
        parked=[n.config["ref"] for n in state.of_kind("tool") if not n.attached],
    )
    return flow


def blank_canvas(name: str, decision: dict[str, Any], polish: dict[str, Any] | None = None) -> CanvasState:
    """An empty canvas for a new flow: the question and the answer; the decision model and the
    polish model are added from the palette. `decision` holds what the decision node starts with."""
    flow = parse_flow(
        {
            "name": name,
            **{k: decision[k] for k in LOOP_KEYS if k in decision},
            "decision": {k: v for k, v in decision.items() if k not in LOOP_KEYS},
            "polish": polish,
        },
        source="a new flow",
    )
    state = to_canvas(flow)
    # the models wait in the palette with these settings until they are added
    settings = {
        **state.settings,
        "_decision": state.node("decision").config,  # type: ignore[union-attr]
        "_polish": state.node("polish").config if polish else None,
    }  # type: ignore[union-attr]
    return CanvasState(settings=settings, nodes=[n for n in state.nodes if n.kind in ("question", "answer")])


# ------------------------------------------------------------------ edits (what the canvas sends)


def edges(state: CanvasState) -> list[tuple[str, str]]:
    """The edges a canvas shows; they follow from its nodes."""
    has = {n.id for n in state.nodes}
    out: list[tuple[str, str]] = []
    if "decision" in has:
        out.append(("question", "decision"))
        out += [("decision", n.id) for n in state.of_kind("tool") if n.attached]
        out.append(("decision", "polish" if "polish" in has else "answer"))
    if "polish" in has:
        out.append(("polish", "answer"))
    return out


def add_node(state: CanvasState, kind: str, config: dict[str, Any]) -> CanvasState:
    """A node from the palette; a tool joins connected to the decision model when there is one."""
    nodes = list(state.nodes)
    if kind == "tool":
        node_id = tool_id(config["ref"])
        if state.node(node_id):
            return state
        index = len(state.of_kind("tool"))
        x, y = default_position("tool", index)
        nodes.insert(
            len(nodes) - (2 if state.node("polish") else 1),
            CanvasNode(
                id=node_id,
                kind="tool",
                x=x,
                y=y,
                config={"ref": config["ref"]},
                attached=state.node("decision") is not None,
            ),
        )
    elif state.node(kind) is None and kind in ("decision", "polish"):
        x, y = default_position(kind)
        config = state.settings.get(f"_{kind}") or config  # the settings a removed or template model had
        node = CanvasNode(id=kind, kind=kind, x=x, y=y, config=config)  # type: ignore[arg-type]
        nodes.insert(1 if kind == "decision" else len(nodes) - 1, node)
    settings = {k: v for k, v in state.settings.items() if k != f"_{kind}"}
    return CanvasState(settings=settings, nodes=nodes)


def remove_nodes(state: CanvasState, ids: list[str]) -> CanvasState:
    """Delete: tools and the polish model go; the question and the answer stay."""
    gone = {i for i in ids if (n := state.node(i)) and n.kind in ("tool", "polish", "decision")}
    nodes = [n for n in state.nodes if n.id not in gone]
    settings = dict(state.settings)
    for kind in ("decision", "polish"):
        if kind in gone:  # kept, so adding it back from the palette brings its settings back
            settings[f"_{kind}"] = state.node(kind).config  # type: ignore[union-attr]
    if "decision" in gone:
        nodes = [n.model_copy(update={"attached": False}) if n.kind == "tool" else n for n in nodes]
    return _choice_still_attached(CanvasState(settings=settings, nodes=nodes))


def _choice_still_attached(state: CanvasState) -> CanvasState:
    decision = state.node("decision")
    choice = decision.config.get("tool_choice") if decision else None
    attached = {bare_name(n.config["ref"]) for n in state.of_kind("tool") if n.attached}
    if decision is not None and choice not in ("auto", "required", "none", None) and choice not in attached:
        # it named a tool that is gone: a flow cannot hold that, so the choice goes back to auto
        return _replace(
            state, decision.model_copy(update={"config": {**decision.config, "tool_choice": "auto"}})
        )
    return state


def set_attached(state: CanvasState, node_id: str, attached: bool) -> CanvasState:
    """Connect a tool to the decision model (it joins the flow) or disconnect it (it stays parked)."""
    node = state.node(node_id)
    if node is None or node.kind != "tool" or (attached and state.node("decision") is None):
        return state
    return _choice_still_attached(_replace(state, node.model_copy(update={"attached": attached})))


def _replace(state: CanvasState, node: CanvasNode) -> CanvasState:
    return CanvasState(settings=state.settings, nodes=[node if n.id == node.id else n for n in state.nodes])


def move_nodes(state: CanvasState, positions: dict[str, Any]) -> CanvasState:
    nodes = []
    for n in state.nodes:
        p = positions.get(n.id)
        ok = isinstance(p, dict) and all(
            isinstance(p.get(a), (int, float)) and math.isfinite(p[a]) for a in "xy"
        )
        nodes.append(n.model_copy(update={"x": float(p["x"]), "y": float(p["y"])}) if ok else n)
    return CanvasState(settings=state.settings, nodes=nodes)


def apply_event(state: CanvasState, event: dict[str, Any]) -> CanvasState:
    """One event from the canvas component. Anything it does not understand changes nothing."""
    kind = event.get("kind")
    if kind == "move" and isinstance(event.get("positions"), dict):
        return move_nodes(state, event["positions"])
    if kind == "delete" and isinstance(event.get("ids"), list):
        return remove_nodes(state, [i for i in event["ids"] if isinstance(i, str)])
    if kind == "disconnect" and isinstance(event.get("ids"), list):
        for edge_id in event["ids"]:
            if isinstance(edge_id, str) and edge_id.startswith("decision->"):
                state = set_attached(state, edge_id.removeprefix("decision->"), False)
        return state
    if kind == "connect" and event.get("source") == "decision" and isinstance(event.get("target"), str):
        return set_attached(state, event["target"], True)
    return state


# ------------------------------------------------------------------ what a run did, per node


class NodeMark(BaseModel):
    """What a run did at one node."""

    calls: int = 0
    status: Literal["ok", "error", "waiting", "unused"] = "unused"
    tokens: int = 0
    latency_ms: float = 0.0
    steps: list[int] = Field(default_factory=list)  # the step numbers (seq) it took part in
    last_arguments: Any = None
    last_result: Any = None
    last_error: str | None = None


def run_marks(run: Run, flow: Flow | None) -> dict[str, NodeMark]:
    """Each node's part in a run: tool calls counted, errors, a call waiting for a person, and
    tokens and latency per model. A tool the run called that the flow does not hold (a flow
    edited since) gets its own node id all the same."""
    by_name = {bare_name(ref): tool_id(ref) for ref in (flow.tools if flow else [])}
    marks: dict[str, NodeMark] = {}

    def mark(node_id: str) -> NodeMark:
        return marks.setdefault(node_id, NodeMark())

    for step in run.steps:
        if step.kind in (StepKind.MODEL_CALL, StepKind.POLISH):
            m = mark("decision" if step.kind == StepKind.MODEL_CALL else "polish")
            m.calls += 1
            m.tokens += step.tokens_in + step.tokens_out
            m.latency_ms += step.latency_ms
            m.steps.append(step.seq)
            m.status = "error" if step.error_code else ("ok" if m.status != "error" else "error")
        elif step.kind in (StepKind.TOOL_CALL, StepKind.APPROVAL) and step.name:
            m = mark(by_name.get(step.name, tool_id(step.name)))
            m.steps.append(step.seq)
            if step.kind == StepKind.TOOL_CALL:
                m.calls += 1
                m.last_arguments, m.last_result = step.arguments, step.result
                m.last_error = step.error_message if step.error_code else None
                m.status = "error" if step.error_code else "ok"
            elif run.status == RunStatus.WAITING_APPROVAL and step.result is None and not step.error_code:
                m.status = "waiting"
                m.last_arguments = step.arguments
        elif step.kind == StepKind.ERROR:
            m = mark("answer")
            m.status, m.last_error = "error", step.error_message
            m.steps.append(step.seq)
    if run.status == RunStatus.SUCCEEDED:
        mark("answer").status = "ok" if mark("answer").status != "error" else "error"
        mark("question").status = "ok"
    elif run.steps:
        mark("question").status = "ok"
    # a waiting call that was decided later is not waiting: the last approval step tells
    if run.status != RunStatus.WAITING_APPROVAL:
        for m in marks.values():
            if m.status == "waiting":
                m.status = "ok"
    return marks


# ------------------------------------------------------------------ drawing


def _cut(text: Any, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.1f} s"


def node_view(
    state: CanvasState,
    tool_info: dict[str, dict[str, Any]] | None = None,
    marks: dict[str, NodeMark] | None = None,
    selected: str | None = None,
    model_label: Any = None,
) -> list[dict[str, Any]]:
    """The nodes as the canvas component draws them: every text already cut to size."""
    info, marks = tool_info or {}, marks or {}
    label_of = model_label or (lambda provider, model: f"{provider} · {model}")
    views = []
    for n in state.nodes:
        view: dict[str, Any] = {
            "id": n.id,
            "kind": n.kind,
            "label": LABELS[n.kind],
            "x": n.x,
            "y": n.y,
            "deletable": n.kind in ("tool", "polish", "decision"),
            "selected": n.id == selected,
            "lines": [],
        }
        if n.kind == "question":
            _question_text(view, state)
        elif n.kind in ("decision", "polish"):
            _model_text(view, n, label_of)
        elif n.kind == "tool":
            _tool_text(view, n, state, info)
        else:
            polish = state.node("polish")
            view["title"] = "JSON" if polish and polish.config.get("output_schema") else "text"
        if marks and n.kind != "question":
            _mark(view, n, marks.get(n.id))
        views.append(view)
    return views


def _question_text(view: dict[str, Any], state: CanvasState) -> None:
    view["title"] = _cut(state.settings.get("name", "")) or "the user's question"
    if state.settings.get("description"):
        view["subtitle"] = _cut(state.settings["description"], 80)


def _model_text(view: dict[str, Any], n: CanvasNode, label_of: Any) -> None:
    """A model node: which model, and (the decision) how it calls tools."""
    c = n.config
    label = str(label_of(c.get("provider", ""), c.get("model", "")))
    view["title"] = _cut(label.split("/", 1)[-1], 40)
    view["subtitle"] = "built-in model" if c.get("provider") == "local" else _cut(c.get("provider", ""), 30)
    if n.kind == "decision":
        view["lines"] = [
            f"way: {c.get('calling_way')} · rounds: {c.get('max_rounds')}",
            f"tool_choice: {c.get('tool_choice')}"
            + (" · parallel" if c.get("parallel_tool_calls") else " · one call at a time"),
        ]
    else:
        view["lines"] = ["JSON Schema answer" if c.get("output_schema") else "text answer"]


def _tool_text(
    view: dict[str, Any], n: CanvasNode, state: CanvasState, info: dict[str, dict[str, Any]]
) -> None:
    """A tool node: its name and source, whether it needs approval, whether it is attached."""
    ref = n.config["ref"]
    group, source = tool_source(ref, state.settings)
    about = info.get(ref, {})
    sub = sub_flow_of(ref, state.settings)
    label = {"plugin": "plugin", "mcp": "MCP", "http": "HTTP", "flow": "sub-flow"}.get(group, group)
    view.update(
        title=_cut(bare_name(ref), 40),
        group=group,
        subtitle=_cut(f"{label} · {source}" if sub is None else f"sub-flow · {sub[0]} v{sub[1]}", 50),
        tooltip=_cut(about.get("description", ref), 300),
    )
    if sub is not None:  # the page opens it (pages/flows.py: `?flow=NAME&version=N`)
        view["opens"] = {"flow": sub[0], "version": sub[1]}
        view["lines"].append(f"runs the flow {_cut(sub[0], 30)} (version {sub[1]})")
    approval = state.settings.get("needs_approval", [])
    if ref in approval or bare_name(ref) in approval:
        view["lines"].append("needs approval")
    if not n.attached:
        view["status"] = "parked"
        view["lines"].append("not connected: drag from the decision model to attach it")


def _mark(view: dict[str, Any], n: CanvasNode, m: NodeMark | None) -> None:
    """What a run did at this node: its status, and a badge of calls or tokens and time."""
    if m is None or m.status == "unused":
        view["status"] = "unused"
        return
    view["status"] = m.status
    if n.kind == "tool":
        view["badge"] = (
            "waiting for you" if m.status == "waiting" else f"{m.calls} call" + ("" if m.calls == 1 else "s")
        )
        if m.last_error:
            view["lines"].append(_cut(f"error: {m.last_error}"))
    elif n.kind in ("decision", "polish"):
        view["badge"] = f"{m.tokens} tok · {_seconds(m.latency_ms)}"
    elif m.last_error:
        view["lines"].append(_cut(f"error: {m.last_error}"))


def edge_view(
    state: CanvasState, marks: dict[str, NodeMark] | None = None, editable: bool = False
) -> list[dict[str, Any]]:
    marks = marks or {}
    out = []
    for source, target in edges(state):
        edge = {
            "id": f"{source}->{target}",
            "source": source,
            "target": target,
            "source_handle": "tools" if target.startswith("tool:") else "out",
            "deletable": editable and target.startswith("tool:"),
        }
        m = marks.get(target)
        if m is not None and m.status != "unused":
            edge["status"] = "error" if m.status == "error" else "used"
        out.append(edge)
    return out


def to_svg(state: CanvasState, marks: dict[str, NodeMark] | None = None) -> str:
    """The canvas as a standalone SVG picture (for a download; no program to install)."""
    views = node_view(state, marks=marks)
    w, h = 190, 78
    xs = [v["x"] for v in views] or [0]
    ys = [v["y"] for v in views] or [0]
    left, top = min(xs) - 20, min(ys) - 20
    width, height = max(xs) - left + w + 20, max(ys) - top + h + 20
    where = {v["id"]: (v["x"] - left, v["y"] - top) for v in views}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
    ]
    for source, target in edges(state):
        (x1, y1), (x2, y2) = where[source], where[target]
        aside = target.startswith("tool:")
        a = (x1 + w, y1 + h / 2) if aside else (x1 + w / 2, y1 + h)
        b = (x2, y2 + h / 2) if aside else (x2 + w / 2, y2)
        parts.append(
            f'<line x1="{a[0]:.0f}" y1="{a[1]:.0f}" x2="{b[0]:.0f}" y2="{b[1]:.0f}" '
            'stroke="#9aa0ad" stroke-width="1.5"/>'
        )
    for v in views:
        parts += _svg_box(v, *where[v["id"]], w, h)
    parts.append("</svg>")
    return "\n".join(parts)


_SVG_COLORS = {
    "question": "#8a8f9c",
    "answer": "#8a8f9c",
    "decision": "#ff4b4b",
    "polish": "#f0a02c",
    "plugin": "#1c83e1",
    "mcp": "#803df5",
    "http": "#21a366",
    "flow": "#0e9aa7",
}


# what XML 1.0 does not allow at all, beyond what `inert` writes out: lone surrogates, U+FFFE, U+FFFF
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _svg_text(text: str) -> str:
    """A label as SVG text: markup escaped; control characters (which XML forbids: one makes the
    whole picture unreadable), bidi overrides and zero-width characters written as `\\u001b`."""
    shown = _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", inert(text, one_line=True))
    return xml_escape(shown)


def _svg_box(v: dict[str, Any], x: float, y: float, w: int, h: int) -> list[str]:
    """One node in the SVG: a box with its group's color down the left, and up to four lines of text."""
    color = _SVG_COLORS.get(v.get("group") or v["kind"], "#8a8f9c")
    texts = [
        v["label"] + (f"  [{v['badge']}]" if v.get("badge") else ""),
        v.get("title", ""),
        v.get("subtitle", ""),
        *v["lines"],
    ][:4]
    parts = [
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{h}" rx="8" fill="#ffffff" '
        f'stroke="#c9ccd6"/><rect x="{x:.0f}" y="{y:.0f}" width="6" height="{h}" fill="{color}"/>'
    ]
    for i, text in enumerate(t for t in texts if t):
        weight = ' font-weight="bold"' if i == 1 else ""
        parts.append(
            f'<text x="{x + 14:.0f}" y="{y + 18 + i * 16:.0f}"{weight}>{_svg_text(_cut(text, 32))}</text>'
        )
    return parts


def canonical(state: CanvasState) -> str:
    """A canvas as sorted JSON, to compare two of them."""
    return json.dumps(state.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
