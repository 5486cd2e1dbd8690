"""Plugins: every tool FlowCall can attach, what it costs the model, trying one by hand, and
attaching an MCP server's tools to a saved flow. Reaches tools and the database only through
the service (flowcall/service/front.py). Tool names, descriptions and results come from plugins
and MCP servers, so they are shown as text (`md`), never as Markdown. A server is started from a
typed command (or reached at a URL) only after the consent panel's grant, the one a flow's run
asks for."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import streamlit as st

from flowcall.core.errors import ConfigError
from flowcall.core.spec import MCPServerConfig
from flowcall.service.front import mcp_server, review_tool, server_tools, try_server_tool
from flowcall.studio.schema_form import FormField, collect, form_fields
from flowcall.studio.shared import md, service
from flowcall.studio.sources import consent_panel, ungranted

if TYPE_CHECKING:
    from flowcall.tools.base import Tool
    from flowcall.tools.trial import TrialResult

# what to do next, by error code of a trial
_NEXT = {
    "INVALID_ARGUMENT": "correct the arguments in the form and run again",
    "MISSING_REQUIRED_FIELD": "fill in the missing field and run again",
    "TOOL_ERROR": "the tool itself failed: read its message, change the arguments or fix the tool",
    "TOOL_TIMEOUT": "the tool did not answer in time: try again, or check that its service is up",
}


def annotations_text(tool: Tool) -> str:
    hints = tool.annotations
    return " · ".join(
        [
            "read-only" if hints.read_only else "writes",
            "**destructive**" if hints.destructive else "not destructive",
            # FlowCall keeps no idempotent hint; a read-only tool is idempotent by nature
            "idempotent" if hints.read_only else "idempotency not declared",
            "open world" if hints.open_world else "closed world",
        ]
    )


def show_tool(tool: Tool) -> None:
    """One tool in an expander: what it is, what it may do, what it costs the decision model."""
    checked = review_tool(tool)
    cost = f"{checked.tokens} tokens" + ("" if checked.tokens_exact else " (estimated)")
    with st.expander(
        f"{'⚠️ ' if checked.warnings else ''}{md(tool.version)} · {cost}", expanded=bool(checked.warnings)
    ):  # a warning is read without a click
        st.markdown(f"**{md(tool.name)}** · source {md(tool.source)} · version {md(tool.version)}")
        st.markdown(md(tool.description) if tool.description else "(no description)")
        st.markdown(annotations_text(tool))
        st.caption(f"Its definition costs the decision model {cost} in every request it is attached to.")
        for warning in checked.warnings:
            st.warning(f"Possible prompt injection: {md(warning)}")
        st.json(tool.parameters, expanded=False)


def field_widget(f: FormField, key: str) -> Any:
    """The widget for one argument; its value goes to schema_form.collect as is."""
    label, hint = (
        md(f.label()),
        md(f.description) if f.description else None,
    )  # the schema is the server's text
    if f.kind == "boolean":
        return st.checkbox(label, value=bool(f.default), key=key, help=hint)
    if f.kind == "enum":
        options = f.options if f.required else [None, *f.options]
        index = options.index(f.default) if f.default in options else (None if f.required else 0)
        return st.selectbox(
            label,
            options,
            index=index,
            key=key,
            help=hint,
            format_func=lambda v: "(not set)" if v is None else str(v),
        )
    if f.kind in ("integer", "number"):
        cast = int if f.kind == "integer" else float  # streamlit wants one numeric type throughout
        default = (
            f.default if isinstance(f.default, (int, float)) and not isinstance(f.default, bool) else None
        )
        return st.number_input(
            label,
            value=None if default is None else cast(default),
            key=key,
            help=hint,
            min_value=None if f.minimum is None else cast(f.minimum),
            max_value=None if f.maximum is None else cast(f.maximum),
            step=cast(1) if f.kind == "integer" else None,
        )
    if f.kind == "json":
        return st.text_area(f"{label} (JSON)", value=f.initial_text(), key=key, help=hint)
    return st.text_input(label, value="" if f.default is None else str(f.default), key=key, help=hint)


def show_result(result: TrialResult) -> None:
    if result.ok:
        st.success(f"{md(result.version)} answered in {result.latency_ms:.0f} ms")
        if isinstance(result.result, (dict, list)):
            st.json(result.result)
        else:
            st.code(str(result.result))
        return
    what_next = _NEXT.get(result.error_code or "", "check the message and try again")
    st.error(f"{md(result.error_code)}: {md(result.error_message)}. What to do: {what_next}.")


def try_form(tool: Tool, key: str, run: Callable[[dict[str, Any]], TrialResult]) -> None:
    """A form generated from the tool's JSON Schema; Run checks it, then runs the tool once."""
    fields = form_fields(tool.parameters)
    with st.form(f"{key}:form"):
        raw = {f.name: field_widget(f, f"{key}:{f.name}") for f in fields}
        if not fields:
            st.caption(f"{md(tool.name)} takes no arguments.")
        confirmed = True
        if tool.annotations.destructive:
            confirmed = st.checkbox(
                f"{md(tool.name)} is destructive: I understand it may change or delete things",
                key=f"{key}:confirm",
            )
        submitted = st.form_submit_button("Run", type="primary", key=f"{key}:run")
    if submitted:
        st.session_state.pop(f"{key}:result", None)
        arguments, errors = collect(fields, raw, tool.parameters)
        if errors:
            st.error("Nothing was run. " + " ".join(f"{md(e)}." for e in errors))
        elif not confirmed:
            st.error(f"Nothing was run: {md(tool.name)} is destructive; tick the confirmation box first.")
        else:
            with st.spinner(f"Running {md(tool.name)}…"):
                try:
                    st.session_state[f"{key}:result"] = run(arguments)
                except ConfigError as exc:
                    st.error(md(exc))
    if result := st.session_state.get(f"{key}:result"):
        show_result(result)


def tools_tab(tools: list[Tool]) -> None:
    query = st.text_input(
        "Search", key="plugins:search", placeholder="name, version or words of the description"
    )
    words = query.lower().split()
    shown = [t for t in tools if all(w in f"{t.version} {t.description}".lower() for w in words)]
    st.caption(f"{len(shown)} of {len(tools)} tools")
    for tool in shown:
        show_tool(tool)


def try_tab(tools: list[Tool]) -> None:
    versions = [t.version for t in tools]
    picked = st.selectbox("Tool", versions, key="plugins:try_tool")
    tool = tools[versions.index(picked)]
    st.caption(
        f"{md(tool.description.splitlines()[0]) if tool.description else ''} · {md(annotations_text(tool))}"
    )
    try_form(tool, f"try:{tool.version}", lambda arguments: service().try_tool(tool.version, arguments))


def connect(name: str, command_line: str, url: str) -> None:
    """Ask to start (or reach) the server: it is started only once it is granted, by the consent
    panel the Flows page and the Run page show (the same grant)."""
    st.session_state.pop("mcp:server", None)
    try:
        server = mcp_server(name, command_line, url)
    except ConfigError as exc:
        st.error(md(exc))
        return
    st.session_state["mcp:want"] = server


def pending_connection() -> None:
    """The server asked for: the consent panel while nobody here granted what it starts or
    reaches; once granted, started, its tools listed, stopped."""
    server = st.session_state.get("mcp:want")
    if server is None:
        return
    app = service()
    missing = ungranted(app, "mcp", server)
    if missing:
        answer = consent_panel("mcp", missing)
        if answer is None:
            return  # the panel waits for the person
        if answer == "cancel":
            st.session_state.pop("mcp:want", None)
            st.info("Cancelled: nothing was granted, started or sent.")
            return
        app.grant_items(missing, by="studio")
    st.session_state.pop("mcp:want", None)
    list_tools(server)


def list_tools(server: MCPServerConfig) -> None:
    """Start the server, list its tools, stop it; keep the server and tools in the session."""
    with st.status(f"Connecting to {md(server.describe())}…", expanded=True) as status:
        try:
            tools = server_tools(server, service().grants())  # the grant is checked again at the start
        except ConfigError as exc:
            status.update(label=f"Could not connect to '{md(server.name)}'", state="error", expanded=True)
            failed = exc
        else:
            failed = None
            status.update(
                label=f"Connected to '{md(server.name)}': {len(tools)} tools",
                state="complete",
                expanded=False,
            )
    if failed is not None:  # the reason in the open, not inside a box that may close
        st.error(f"{md(failed)}. Check the command or URL, e.g. run it by hand in a terminal.")
        return
    st.session_state["mcp:server"] = (server, tools)


def add_to_flow(server: MCPServerConfig, tools: list[Tool]) -> None:
    """Add the server and its tools to a saved flow. Nothing is granted here: the flow's first
    run shows the exact command or URL on the Run page and asks for the grant there."""
    app = service()
    flows = [f["name"] for f in app.list_flows()]
    if not flows:
        st.info("No saved flows yet: run or import a flow first (`flowcall flows import FILE`).")
        return
    target = st.selectbox("Flow", flows, key="mcp:flow")
    names = [t.name for t in tools]
    picked = st.multiselect(
        "Tools to attach",
        names,
        key="mcp:attach",
        default=[t.name for t in tools if not t.annotations.destructive],
        help="A tool the server marks destructive is left out unless you pick it",
    )
    if st.button("Add to flow", key="mcp:add", disabled=not picked):
        try:
            version, skipped = app.attach_server(target, server, [t for t in tools if t.name in picked])
        except ConfigError as exc:
            st.error(md(exc))
            return
        st.success(
            md(
                f"Added '{server.name}' and {len(picked)} of its tools to {target}, now version {version}. "
                "Its first run asks you (Run page) to grant starting or reaching the server; calls of its "
                "tools wait for approval unless the flow marks the server trusted."
            )
        )
        if skipped:
            st.warning(md("Not added, the flow already has a tool of that name: " + ", ".join(skipped)))


def mcp_tab() -> None:
    st.caption(
        "A server by command is started on this machine, and one by URL is reached, only once you grant "
        "it in the panel that shows exactly what would run: the same grant a flow's run asks for."
    )
    with st.form("mcp:connect"):
        name = st.text_input(
            "Name",
            key="mcp:name",
            placeholder="time",
            help="Lowercase; the tools' namespace: <name>/mcp/<tool>",
        )
        command_line = st.text_input(
            "stdio command",
            key="mcp:command",
            placeholder="uvx mcp-server-time",
            help="One line, quoted as in a shell; nothing starts before you grant it",
        )
        url = st.text_input("or streamable HTTP URL", key="mcp:url", placeholder="http://127.0.0.1:8765/mcp")
        submitted = st.form_submit_button("Connect", key="mcp:connect")
    if submitted:
        connect(name, command_line or "", url)
    pending_connection()
    if "mcp:server" not in st.session_state:
        return
    server, tools = st.session_state["mcp:server"]
    st.subheader(md(f"{server.name}: {len(tools)} tools"))
    for tool in tools:
        show_tool(tool)
    st.subheader(md(f"Try a tool of {server.name}"))
    names = [t.name for t in tools]
    tool = tools[names.index(st.selectbox("Tool", names, key="mcp:try_tool"))]
    try_form(
        tool,
        f"mcp:{server.name}:{tool.name}",
        lambda arguments: try_server_tool(server, tool.name, arguments, service().grants()),
    )
    st.subheader("Add to a flow")
    add_to_flow(server, tools)


st.title("Plugins")
try:
    all_tools = service().registry.all()
except ConfigError as exc:  # a plugin that fails to import
    st.error(md(exc))
    st.stop()
tools_view, try_view, mcp_view = st.tabs(["Tools", "Try it", "Attach an MCP server"])
with tools_view:
    tools_tab(all_tools)
with try_view:
    try_tab(all_tools)
with mcp_view:
    mcp_tab()
