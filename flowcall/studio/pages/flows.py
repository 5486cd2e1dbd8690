"""Flows: build a flow on a canvas (question → decision model → tools → polish model → answer),
or in the form view; versions with a diff and restore; JSON and picture export; import,
duplicate, delete. The page edits a draft of the selected flow; Save stores it as a new
version when the flow changed, and keeps the canvas layout either way."""

from __future__ import annotations

import base64
import difflib
import json
from typing import TYPE_CHECKING, Any

import streamlit as st

from flowcall.core.config import model_label, studio_language
from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.spec import Flow, HTTPToolSource, MCPServerConfig, parse_flow
from flowcall.rendering import in_language
from flowcall.service.front import listed_tool, source_kinds
from flowcall.studio import flowgraph as fg
from flowcall.studio.canvas import canvas
from flowcall.studio.panels import (
    answer_panel,
    decision_panel,
    polish_panel,
    question_panel,
    tool_panel,
    tool_summary,
)
from flowcall.studio.shared import md, reach_lines, service
from flowcall.studio.sources import source_form, source_tools
from flowcall.studio.templates import BY_KEY, POLISH_DEFAULTS, TEMPLATES

if TYPE_CHECKING:
    from flowcall.tools.base import Tool

app = service()
drafts: dict[str, dict[str, Any]] = st.session_state.setdefault("drafts", {})
st.title("Flows")


# ------------------------------------------------------------------ drafts


def load_draft(name: str) -> dict[str, Any]:
    """The draft of a flow: its canvas as saved, unless the person already changed it here."""
    draft = drafts.get(name)
    if draft is None or (
        not draft.get("new") and not dirty(draft) and draft["version"] != saved_version(name)
    ):
        flow, _, version = app.get_flow(name)
        state = fg.to_canvas(flow)
        draft = {"state": state, "base": fg.canonical(state), "version": version, "gen": 0, "selected": None}
        drafts[name] = draft
    return draft


def saved_version(name: str) -> int | None:
    try:
        return app.get_flow(name)[2]
    except NotFoundError:
        return None


def dirty(draft: dict[str, Any]) -> bool:
    return fg.canonical(draft["state"]) != draft["base"]


def change(draft: dict[str, Any], state: fg.CanvasState, *, fresh_widgets: bool = False) -> None:
    draft["state"] = state
    if fresh_widgets:  # the widgets start again from the draft (after a restore, a discard...)
        draft["gen"] += 1


def save(name: str, draft: dict[str, Any]) -> None:
    flow = fg.to_flow(draft["state"])
    app.registry.resolve(flow.plugin_refs())  # a tool that is not installed: say so now, not at run time
    before = draft["version"]
    _, version = app.save_flow(flow)
    draft.update(base=fg.canonical(draft["state"]), version=version, new=False)
    st.session_state["flow_message"] = (
        f"Saved {name!r} as version {version}."
        if version != before
        else f"The flow is unchanged (still version {version}); its layout is saved."
    )


# ------------------------------------------------------------------ choose, create, import


def select(name: str) -> None:
    st.session_state["flow"] = name
    st.query_params["flow"] = name


saved = [f["name"] for f in app.list_flows()]
unsaved = [n for n, d in drafts.items() if d.get("new") and n not in saved]
names = saved + unsaved
wanted = st.query_params.get("flow") or st.session_state.get("flow")
top = st.columns([3, 1, 1])
# A popover stays open across reruns; one that has done its work is closed through its state,
# before it is drawn (its key's state is the open flag, with on_change="rerun").
for popover in st.session_state.pop("flows:close", []):
    st.session_state[popover] = False
with top[1].popover("New flow", use_container_width=True, key="flows:new", on_change="rerun"):
    with st.form("new_flow", clear_on_submit=True, border=False):
        new_name = st.text_input("Name", placeholder="my-flow")
        template = st.radio("Start from", [t.key for t in TEMPLATES], format_func=lambda k: BY_KEY[k].title)
        for t in TEMPLATES:
            st.caption(f"**{md(t.title)}**: {md(t.description)}")
        if st.form_submit_button("Create", type="primary"):
            try:
                if new_name in names:
                    raise ConfigError(
                        f"a flow named {new_name!r} exists: pick another name, or open that one"
                    )
                chosen = BY_KEY[template]
                parse_flow({"name": new_name}, source="the new flow's name")  # the name's own check
                state = fg.blank_canvas(new_name, chosen.decision(), None)
                if template != "blank":
                    state = fg.add_node(state, "decision", chosen.decision())
                    for ref in chosen.tools:
                        state = fg.add_node(state, "tool", {"ref": ref})
                    if chosen.polish:
                        state = fg.add_node(state, "polish", chosen.polish)
                    state = state.model_copy(
                        update={"settings": {**state.settings, "description": chosen.description}}
                    )
                drafts[new_name] = {
                    "state": state,
                    "base": "",
                    "version": 0,
                    "gen": 0,
                    "selected": None,
                    "new": True,
                }
                select(new_name)
                st.session_state["flows:close"] = ["flows:new"]  # the new flow's canvas, uncovered
                st.rerun()
            except ConfigError as exc:
                st.error(f"{md(exc)}.")
with top[2].popover("Import", use_container_width=True, key="flows:import", on_change="rerun"):
    upload = st.file_uploader("A flow JSON file", type=["json"], key="import_flow")
    if upload is not None and upload.file_id != st.session_state.get("imported_file"):
        st.session_state["imported_file"] = upload.file_id  # import once, not on every rerun
        try:
            imported = parse_flow(upload.getvalue().decode("utf-8", errors="replace"), source=upload.name)
            app.registry.resolve(imported.plugin_refs())
            adopted = app.adopt(imported)  # never a new version of a saved flow someone else's file names
            st.session_state["flow_message"] = f"Imported {adopted.flow.name!r} as version {adopted.version}."
            if adopted.note:
                renamed = adopted.flow.name != imported.name  # else: its name looks like a saved one's
                head = "Stored under a new name" if renamed else "Note"
                st.session_state["flow_warning"] = f"{head}: {adopted.note}."
            select(adopted.flow.name)
            st.session_state["flows:close"] = ["flows:import"]
            st.rerun()
        except ConfigError as exc:
            st.error(f"{md(exc)}. Nothing was changed.")

if not names:
    st.info("No flows yet: create one with **New flow**, or import a flow JSON file.")
    st.stop()
current = wanted if wanted in names else names[0]
name = top[0].selectbox(
    "Flow",
    names,
    index=names.index(current),
    format_func=lambda n: n + ("  (not saved yet)" if n in unsaved else ""),
)
if name != st.query_params.get("flow"):
    select(name)
draft = load_draft(name)
state: fg.CanvasState = draft["state"]
key = f"{name}:{draft['gen']}:"
if message := st.session_state.pop("flow_message", None):
    st.success(md(message))
if warning := st.session_state.pop("flow_warning", None):
    st.warning(md(warning))

view = (
    st.segmented_control(
        "View",
        ["Canvas", "Form", "Versions", "JSON & picture", "Duplicate / delete"],
        default="Canvas",
        key=f"view:{name}",
        label_visibility="collapsed",
    )
    or "Canvas"
)


# ------------------------------------------------------------------ tools the flow can attach


def source_lists() -> list[tuple[str, str, str, list[dict[str, Any]]]]:
    """(where the draft keeps them, kind, label, the flow's sources) for every kind the service
    lists: a kind with a Flow field of its own ("mcp_servers"), or `sources/<kind>`."""
    found = []
    for info in source_kinds():
        if info.flow_field == "sources":
            field, sources = f"sources/{info.kind}", state.settings.get("sources", {}).get(info.kind, [])
        else:
            field, sources = info.flow_field, state.settings.get(info.flow_field, [])
        found.append((field, info.kind, info.label, list(sources)))
    return found


def _with_sources(settings: dict[str, Any], field: str, sources: list[dict[str, Any]]) -> dict[str, Any]:
    """The draft's settings with `field`'s sources replaced (a `sources/<kind>` one inside "sources")."""
    if not field.startswith("sources/"):
        return {**settings, field: sources}
    by_kind = {**settings.get("sources", {}), field.split("/", 1)[1]: sources}
    return {**settings, "sources": {kind: listed for kind, listed in by_kind.items() if listed}}


def known_tools() -> dict[str, Tool]:
    """Every tool the palette offers: the plugins, and the tools of the flow's granted sources.
    A source's list is kept for the session (listing starts a server); an ungranted source
    lists nothing and starts nothing, and is asked again on the next rerun."""
    found: dict[str, Tool] = {t.version: t for t in app.registry.all()}
    listed: dict[str, list[dict[str, Any]]] = st.session_state.setdefault("source_tools", {})
    for _, kind, _, sources in source_lists():
        for source in sources:
            seen = json.dumps([kind, source], sort_keys=True)
            if seen not in listed:
                tools, why_not = source_tools(app, source, kind)
                if why_not is None:
                    listed[seen] = tools
                else:
                    unlisted.append((source.get("name", ""), why_not))
            for entry in listed.get(seen, []):
                found[entry["ref"]] = listed_tool(entry)
    return found


unlisted: list[tuple[str, str]] = []
TOOLS = known_tools()


def palette() -> None:
    st.markdown("**Add to the flow**")
    model_buttons()
    # Sources before the tool cards: after "+ HTTP source" its form opens at the top of the right
    # column, level with this, where the eye is (below ten cards, both were out of sight).
    tool_sources()
    query = (
        st.text_input("Search tools", key=key + "search", placeholder="weather, csv, git…").strip().lower()
    )
    on_canvas = {n.config["ref"] for n in state.of_kind("tool")}
    shown = 0
    for group, title in palette_groups().items():
        items = [
            tool_summary(t) for ref, t in TOOLS.items() if fg.tool_source(ref, state.settings)[0] == group
        ]
        items = [i for i in items if not query or query in (i["ref"] + " " + i["description"]).lower()]
        if not items:
            continue
        st.caption(title)
        names = [i["name"] for i in items]
        for item in sorted(items, key=lambda i: i["ref"])[:40]:
            shown += 1
            tool_card(item, added=item["ref"] in on_canvas, alike=alike_names(item["name"], names))
    if not shown:
        st.caption(
            "No tool matches." if query else "No tools yet: add a plugin, an MCP server or an HTTP source."
        )
    for source_name, why_not in unlisted:
        st.caption(md(f"{source_name}: its tools show here once it is granted ({why_not})."))


def palette_groups() -> dict[str, str]:
    """The palette's groups of tools, by source kind: the plugins, then each kind's (an installed
    package's too), titled by its label."""
    titles = {"mcp": "MCP servers", "http": "HTTP tools", "flow": "Sub-flows"}
    kinds = {kind: titles.get(kind, f"{label} tools") for _, kind, label, _ in source_lists()}
    return {"plugin": "Python plugins", **kinds}


def model_buttons() -> None:
    """Buttons that add the decision and the polish model; each flow has at most one of each."""
    if st.button(
        "+ Decision model",
        key=key + "add_decision",
        disabled=state.node("decision") is not None,
        use_container_width=True,
    ):
        change(draft, fg.add_node(state, "decision", BY_KEY["blank"].decision()))
        draft["selected"] = "decision"
        st.rerun()
    if st.button(
        "+ Polish model",
        key=key + "add_polish",
        disabled=state.node("polish") is not None,
        use_container_width=True,
    ):
        change(draft, fg.add_node(state, "polish", dict(POLISH_DEFAULTS)))
        draft["selected"] = "polish"
        st.rerun()


def alike_names(name: str, names: list[str]) -> list[str]:
    """The other tools whose names are made of the same words, or of these words and more
    (get_weather, get_day_weather): easy to mix up in a list."""
    words = set(name.lower().split("_"))
    return [
        other
        for other in names
        if other != name
        and (words <= set(other.lower().split("_")) or set(other.lower().split("_")) <= words)
    ]


def tool_card(item: dict[str, Any], *, added: bool, alike: list[str] | None = None) -> None:
    """One tool in the palette: its name, source, what it does (in the studio's language), how it
    differs from a tool named alike, what it costs, and a button that puts it on the canvas."""
    said = in_language(item["description"], studio_language())
    with st.container(border=True):
        st.markdown(
            f"{'⚠️ ' if item['warnings'] else ''}**{md(item['name'])}** · {md(item['ref'].rsplit('/', 1)[0])}",
            help=md(item["description"]) if item["description"] else None,
        )
        st.caption(
            md(
                (fg._cut(said, 160) + " · " if said else "")
                + " · ".join(item["annotations"])
                + f" · {item['tokens']} tokens"
            )
        )
        if alike:  # the descriptions above say the difference; this says to read them
            st.caption(md(f"Not the same as {', '.join(alike)}: compare what each does."))
        if st.button(
            "On the canvas" if added else "Add",
            key=key + "add:" + item["ref"],
            disabled=added,
            use_container_width=True,
        ):
            change(draft, fg.add_node(state, "tool", {"ref": item["ref"]}))
            draft["selected"] = fg.tool_id(item["ref"])
            st.rerun()


def tool_sources() -> None:
    """The flow's tool sources of every kind, each opening its form, and a button for a new one of
    each kind (MCP server, HTTP source, and the kinds installed packages add)."""
    st.markdown("**Tool sources**")
    lists = source_lists()
    for field, _, label, sources in lists:
        for source in sources:
            if st.button(
                f"{label}: {source.get('name')}",
                key=key + f"src:{field}:{source.get('name')}",
                use_container_width=True,
            ):
                draft["selected"] = f"source:{field}:{source.get('name')}"
                st.rerun()
    new_keys = {"mcp_servers": "new_mcp", "http_tools": "new_http"}
    for field, kind, label, _ in lists:
        if st.button(f"+ {label}", key=key + new_keys.get(field, f"new:{kind}"), use_container_width=True):
            draft["selected"] = f"source:{field}:"
            st.rerun()


# ------------------------------------------------------------------ a node's settings


def source_panel(selected: str, panel_key: str) -> None:
    """An MCP server or an HTTP source of the flow: its form, and its tools once granted."""
    _, field, source_name = selected.split(":", 2)
    listed = {f: (k, sources) for f, k, _, sources in source_lists()}
    if field not in listed:
        st.error(md(f"No installed package provides the tool source kind {field.split('/')[-1]!r} here."))
        return
    kind, sources = listed[field]
    current = next((s for s in sources if s.get("name") == source_name), None)
    edited, _ = source_form(kind, current, panel_key + "form")  # it shows its own problem, in a sentence
    if edited is None:
        return
    others = [s for s in sources if s.get("name") != source_name]
    if st.button("Keep in the flow" if current is None else "Apply", key=panel_key + "apply", type="primary"):
        if any(s.get("name") == edited["name"] for s in others):
            st.error(md(f"The flow already has a source named {edited['name']!r}: pick another name."))
            return
        kept = (
            [edited if s.get("name") == source_name else s for s in sources]
            if current
            else [*sources, edited]
        )
        change(draft, state.model_copy(update={"settings": _with_sources(state.settings, field, kept)}))
        draft["selected"] = f"source:{field}:{edited['name']}"
        st.rerun()
    if current is not None and st.button("Remove this source", key=panel_key + "drop"):
        prefix = f"{source_name}/{kind}/"
        gone = [n.id for n in state.of_kind("tool") if n.config["ref"].startswith(prefix)]
        trimmed = fg.remove_nodes(state, gone)
        change(
            draft,
            trimmed.model_copy(update={"settings": _with_sources(trimmed.settings, field, others)}),
            fresh_widgets=True,
        )
        draft["selected"] = None
        st.rerun()


def open_sub_flow(ref: str, panel_key: str) -> None:
    """A sub-flow's node opens the flow it runs (the page then edits that flow's latest version)."""
    sub = fg.sub_flow_of(ref, state.settings)
    if sub is None:
        return
    if st.button(md(f"Open the flow {sub[0]} (it runs version {sub[1]})"), key=panel_key + "sub"):
        select(sub[0])
        st.rerun()


def node_panel(node_id: str | None, panel_key: str) -> list[str]:
    """The side panel of one node; returns the problems it found."""
    if node_id and node_id.startswith("source:"):
        source_panel(node_id, panel_key)
        return []
    node = state.node(node_id) if node_id else None
    if node is None:
        st.caption(
            "Click a node to see and change its settings. Add tools and models from the palette; select a "
            "tool and press Delete to remove it."
        )
        return []
    st.subheader(fg.LABELS[node.kind])
    problems: list[str] = []
    if node.kind == "question":
        change(draft, state.model_copy(update={"settings": question_panel(state, panel_key)}))
    elif node.kind == "answer":
        answer_panel(state)
    elif node.kind in ("decision", "polish"):
        panel = decision_panel if node.kind == "decision" else polish_panel
        config, problems = (
            panel(app, state, node, panel_key) if node.kind == "decision" else panel(app, node, panel_key)
        )
        change(draft, fg._replace(state, node.model_copy(update={"config": config})))
        if node.kind == "polish" and st.button("Remove the polish model", key=panel_key + "remove"):
            change(draft, fg.remove_nodes(draft["state"], ["polish"]))
            draft["selected"] = None
            st.rerun()
    else:
        tool_node_panel(node, panel_key)
    for problem in problems:
        st.error(md(problem))
    return problems


def tool_node_panel(node: fg.CanvasNode, panel_key: str) -> None:
    """A tool node's panel: its sub-flow (if it runs one), approval, connect and remove."""
    tool = TOOLS.get(node.config["ref"])
    open_sub_flow(node.config["ref"], panel_key)
    approval, removed = tool_panel(state, node, tool, panel_key)
    change(draft, state.model_copy(update={"settings": {**state.settings, "needs_approval": approval}}))
    if (
        not node.attached
        and state.node("decision")
        and st.button("Connect to the decision model", key=panel_key + "connect")
    ):
        change(draft, fg.set_attached(draft["state"], node.id, True))
        st.rerun()
    if removed:
        change(draft, fg.remove_nodes(draft["state"], [node.id]))
        draft["selected"] = None
        st.rerun()


def save_bar(problems: list[str]) -> None:
    """Save, with what stops it in plain sentences; Discard goes back to the saved flow."""
    current_state: fg.CanvasState = draft["state"]
    blockers = save_blockers(current_state, problems)
    for blocker in blockers:
        if blocker == NEXT_STEP:  # not a mistake: where a flow being built goes next
            st.info(NEXT_STEP, icon=":material/arrow_forward:")
        else:
            st.error(md(blocker))
    reach_note(current_state)
    status = (
        "Not saved yet"
        if draft.get("new")
        else "Unsaved changes"
        if dirty(draft)
        else f"Saved · version {draft['version']}"
    )
    a, b, c = st.columns([1, 1, 2])
    if a.button("Save", type="primary", disabled=bool(blockers), key=key + "save", use_container_width=True):
        try:
            save(name, draft)
            st.rerun()
        except ConfigError as exc:
            st.error(f"{md(exc)}. Nothing was saved.")
    if b.button(
        "Discard",
        disabled=draft.get("new") or not dirty(draft),
        key=key + "discard",
        use_container_width=True,
    ):
        drafts.pop(name, None)
        st.rerun()
    c.caption(status)
    if not draft.get("new"):
        c.page_link(
            "pages/run.py", label="Run this flow", icon=":material/play_arrow:", query_params={"start": name}
        )


NEXT_STEP = (
    "Next: add a decision model from the palette (Models › Decision model); then the flow can be saved."
)


def save_blockers(current_state: fg.CanvasState, problems: list[str]) -> list[str]:
    """What stops the flow from being saved, each said once: the panels' problems, then the
    flow's own (NEXT_STEP where it has no decision model yet)."""
    blockers = list(problems)
    if current_state.node("decision") is None:
        blockers.append(NEXT_STEP)
    else:
        try:
            fg.to_flow(current_state)
        except ConfigError as exc:
            blockers.append(str(exc))
    return list(dict.fromkeys(blockers))


def reach_note(current_state: fg.CanvasState) -> None:
    """What the flow would start or reach, as a warning where a server is trusted or hosts are allowed."""
    servers, sources = (
        current_state.settings.get("mcp_servers", []),
        current_state.settings.get("http_tools", []),
    )
    lines = reach_lines(
        [MCPServerConfig.model_validate(s) for s in servers],
        [HTTPToolSource.model_validate(s) for s in sources],
    )
    if lines:
        risky = any(s.get("trusted") for s in servers) or any(s.get("allow_hosts") for s in sources)
        (st.warning if risky else st.info)(
            "What this flow would start or reach (the Run page "
            "asks you to grant each before the first run):\n\n" + "\n".join(f"- {md(line)}" for line in lines)
        )


# ------------------------------------------------------------------ the canvas view

if view == "Canvas":
    left, middle, right = st.columns([1, 3.3, 1.5])
    with left:
        palette()
    with right:  # before the canvas, so the canvas draws what the panel just set
        problems = node_panel(draft["selected"], key + f"panel:{draft['selected']}:")
        state = draft["state"]
    with middle:
        info = {ref: tool_summary(t) for ref, t in TOOLS.items()}
        event = canvas(
            fg.node_view(state, info, selected=draft["selected"], model_label=model_label),
            fg.edge_view(state, editable=True),
            key=f"canvas:{name}",
            editable=True,
            height=560,
            export=True,
            fit_token=f"{name}:{draft['gen']}:{len(state.nodes)}",
        )  # refit when nodes come or go
        save_bar(problems)
    if event:
        if event["kind"] == "select":
            draft["selected"] = (
                event.get("id") if isinstance(event.get("id"), str) or event.get("id") is None else None
            )
        elif (
            event["kind"] == "export"
            and isinstance(event.get("png"), str)
            and event["png"].startswith("data:image/png;base64,")
        ):
            st.session_state[f"png:{name}"] = base64.b64decode(event["png"].split(",", 1)[1])
            st.session_state["flow_message"] = "The picture is ready: download it under JSON & picture."
        else:
            change(draft, fg.apply_event(state, event))
            if event["kind"] == "delete" and draft["selected"] in event.get("ids", []):
                draft["selected"] = None
        st.rerun()

# ------------------------------------------------------------------ the form view (keyboard, screen readers)

elif view == "Form":
    st.caption("Every setting of the flow on one page, the same as the canvas's side panels.")
    all_problems: list[str] = []
    for node_id in ["question", "decision"]:
        if state.node(node_id) is None and node_id == "decision":
            if st.button("Add a decision model", key=key + "form_add_decision"):
                change(draft, fg.add_node(state, "decision", BY_KEY["blank"].decision()))
                st.rerun()
            continue
        with st.container(border=True):
            all_problems += node_panel(node_id, key + f"form:{node_id}:")
        state = draft["state"]
    with st.container(border=True):
        st.subheader("Tools")
        refs = sorted(TOOLS) + [r for r in (n.config["ref"] for n in state.of_kind("tool")) if r not in TOOLS]
        attached = [n.config["ref"] for n in state.of_kind("tool") if n.attached]
        chosen = st.multiselect(
            "Attached tools (type to search)",
            refs,
            default=attached,
            key=key + "form_tools",
            format_func=lambda r: (
                f"{r} · {fg._cut(tool_summary(TOOLS[r])['description'], 70)}" if r in TOOLS else r
            ),
        )
        if chosen != attached:
            new = fg.remove_nodes(state, [fg.tool_id(r) for r in attached if r not in chosen])
            for ref in chosen:
                new = fg.add_node(new, "tool", {"ref": ref})
            change(draft, new)
            state = draft["state"]
        for node in state.of_kind("tool"):
            with st.expander(f"{md(fg.bare_name(node.config['ref']))}"):
                all_problems += node_panel(node.id, key + f"form:{node.id}:")
                state = draft["state"]
    with st.container(border=True):
        st.subheader("Tool sources")
        for kind, label in (("mcp_servers", "MCP server"), ("http_tools", "HTTP source")):
            for source in state.settings.get(kind, []):
                with st.expander(f"{label}: {md(source.get('name'))}"):
                    source_panel(
                        f"source:{kind}:{source.get('name')}", key + f"form:{kind}:{source.get('name')}:"
                    )
            if st.toggle(f"Add an {label}", key=key + f"form:{kind}:adding"):
                source_panel(f"source:{kind}:", key + f"form:{kind}:new:")
    with st.container(border=True):
        if state.node("polish") is None:
            st.subheader("Polish model")
            if st.button("Add a polish model", key=key + "form_add_polish"):
                change(draft, fg.add_node(state, "polish", dict(POLISH_DEFAULTS)))
                st.rerun()
        else:
            all_problems += node_panel("polish", key + "form:polish:")
    save_bar(all_problems)

# ------------------------------------------------------------------ versions

elif view == "Versions":
    if draft.get("new"):
        st.info("This flow is not saved yet: save it to start its history.")
    else:
        versions = app.flow_versions(name)
        st.dataframe(
            [
                {"version": v["version"], "saved": v["created_at"], "hash": v["spec_hash"][:12]}
                for v in versions
            ],
            hide_index=True,
        )
        numbers = [v["version"] for v in versions]
        if len(numbers) < 2:
            st.caption("Only one version so far; save a change to compare versions.")
        else:
            a, b = st.columns(2)
            older = a.selectbox("From version", numbers, index=1, key=key + "from")
            newer = b.selectbox("To version", numbers, index=0, key=key + "to")
            before = app.get_flow(name, older)[0].model_copy(update={"layout": None}).to_json().splitlines()
            after = app.get_flow(name, newer)[0].model_copy(update={"layout": None}).to_json().splitlines()
            diff = "\n".join(difflib.unified_diff(before, after, f"v{older}", f"v{newer}", lineterm=""))
            st.code(diff or "(no difference)", language="diff")
            restore = st.selectbox(
                "Restore version",
                numbers[1:],
                key=key + "restore_pick",
                help="Saves that version's flow as the newest version; nothing is deleted",
            )
            if st.button(f"Restore version {restore}", key=key + "restore"):
                old = app.get_flow(name, restore)[0]
                _, version = app.save_flow(old.model_copy(update={"layout": None}))
                drafts.pop(name, None)
                st.session_state["flow_message"] = f"Restored version {restore} as version {version}."
                st.rerun()

# ------------------------------------------------------------------ JSON and the picture

elif view == "JSON & picture":
    try:
        flow: Flow | None = fg.to_flow(state)
    except ConfigError as exc:
        flow = None
        st.warning(f"{md(exc)}. The JSON appears once the flow is complete.")
    if flow is not None:
        if dirty(draft) or draft.get("new"):
            st.caption("This is the flow as edited here, including changes not saved yet.")
        a, b, c = st.columns(3)
        a.download_button(
            "Export as JSON",
            flow.to_json(),
            file_name=f"{name}.json",
            mime="application/json",
            key=key + "export",
        )
        b.download_button(
            "Picture (SVG)", fg.to_svg(state), file_name=f"{name}.svg", mime="image/svg+xml", key=key + "svg"
        )
        png = st.session_state.get(f"png:{name}")
        c.download_button(
            "Picture (PNG)",
            png or b"",
            file_name=f"{name}.png",
            mime="image/png",
            disabled=png is None,
            key=key + "png",
            help="Press PNG on the canvas first: it draws the picture as you see it",
        )
        st.code(flow.to_json(), language="json")

# ------------------------------------------------------------------ duplicate, delete

else:
    if draft.get("new"):
        if st.button("Throw this unsaved flow away", key=key + "drop_new"):
            drafts.pop(name, None)
            st.session_state.pop("flow", None)
            st.query_params.clear()
            st.rerun()
        st.stop()
    copy_name = st.text_input("Name of the copy", f"{name}-copy", key=key + "copy_name")
    if st.button("Duplicate", key=key + "duplicate"):
        try:
            if copy_name in names:
                raise ConfigError(f"a flow named {copy_name!r} exists; pick another name")
            saved_flow = app.get_flow(name)[0]
            app.save_flow(
                parse_flow(
                    {
                        **saved_flow.model_dump(mode="json"),
                        "name": copy_name,
                        **(
                            {"layout": saved_flow.layout.model_dump(mode="json")} if saved_flow.layout else {}
                        ),
                    },
                    source="the copy",
                )
            )
            select(copy_name)
            st.rerun()
        except ConfigError as exc:
            st.error(md(exc))
    st.divider()
    sure = st.checkbox(
        md(f"Yes, delete {name!r} and all its versions (its runs stay, for the record)"), key=key + "sure"
    )
    if st.button("Delete flow", disabled=not sure, key=key + "delete"):
        versions = len(app.flow_versions(name))
        runs = len(app.list_runs(flow_name=name, limit=10_000))
        app.delete_flow(name)
        drafts.pop(name, None)
        st.session_state.pop("flow", None)
        st.query_params.clear()
        st.session_state["flow_message"] = (  # said on the flow shown next, so nobody wonders
            f"Deleted {name!r} and its {versions} version{'s' * (versions != 1)}. Its {runs} "
            f"run{'s' * (runs != 1)} stay in Runs & inspector, for the record."
        )
        st.rerun()
