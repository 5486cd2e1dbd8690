"""Flows: list, create, duplicate, delete; the editor, a diagram, versions with a diff, and
JSON export/import."""

from __future__ import annotations

import difflib
import json
from typing import Any

import jsonschema
import streamlit as st

from flowcall.errors import ConfigError
from flowcall.providers import PROVIDER_NAMES
from flowcall.schemas import ref_problem
from flowcall.spec import HTTPToolSource, MCPServerConfig, parse_flow
from flowcall.studio import as_json, flow_diagram, md, parse_list, reach_lines, service

WAYS = ["auto", "native", "schema", "prompt", "router"]
app = service()
st.title("Flows")
st.caption("question → decision model → plugin tools → polish model → answer")


def schema_problem(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The polish schema as typed: (schema, None) or (None, what is wrong)."""
    if not text.strip():
        return None, None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return None, f"not a valid JSON Schema: {exc.message}"
    problem = ref_problem(schema)
    return (None, problem) if problem else (schema, None)


# ------------------------------------------------------------------ list, create, import
flows = app.store.list_flows()
left, right = st.columns([3, 2])
with left:
    if flows:
        st.dataframe([{"name": f["name"], "version": f["version"], "updated": f["updated_at"],
                       "description": f["description"]} for f in flows], hide_index=True)
    else:
        st.info("No flows yet: create one on the right, or import a flow JSON file.")
with right:
    with st.form("create", clear_on_submit=True):
        new_name = st.text_input("New flow name", placeholder="my-flow")
        if st.form_submit_button("Create flow"):
            try:
                if any(f["name"] == new_name for f in flows):
                    raise ConfigError(f"a flow named {new_name!r} exists; pick another name or edit that one")
                app.store.save_flow(parse_flow({"name": new_name}, source="the new flow"))
                st.session_state["flow"] = new_name
                st.rerun()
            except ConfigError as exc:
                st.error(md(exc))
    upload = st.file_uploader("Import a flow (JSON)", type=["json"], key="import_flow")
    if upload is not None and upload.file_id != st.session_state.get("imported_file"):
        st.session_state["imported_file"] = upload.file_id  # import once, not on every rerun
        try:
            imported = parse_flow(upload.getvalue().decode("utf-8", errors="replace"), source=upload.name)
            app.registry.resolve(imported.plugin_refs())  # a tool that is not installed: say so now, not at run time
            adopted = app.adopt(imported)  # never a new version of a saved flow someone else's file names
            st.success(md(f"Imported {adopted.flow.name!r} as version {adopted.version}."))
            if adopted.note:
                st.warning(md(f"Stored under a new name: {adopted.note}."))
            st.session_state["flow"] = adopted.flow.name
        except ConfigError as exc:
            st.error(f"{md(exc)}. Nothing was changed.")

if not flows:
    st.stop()
names = [f["name"] for f in app.store.list_flows()]
current = st.session_state.get("flow") if st.session_state.get("flow") in names else names[0]
name = st.selectbox("Flow", names, index=names.index(current))
st.session_state["flow"] = name
flow, version_id, version = app.store.get_flow(name)
key = f"{name}:{version}:"  # widgets start from the saved values whenever the version changes

tab_edit, tab_diagram, tab_versions, tab_json, tab_manage = st.tabs(
    ["Editor", "Diagram", "Versions", "JSON", "Duplicate / delete"])

# ------------------------------------------------------------------ the editor
# Saving starts from the saved flow's full JSON and changes only what these widgets edit, so a
# field the editor does not show (router rules, timeouts, max_tokens...) is never dropped.
with tab_edit:
    st.caption(f"Version {version}. Saving makes a new version only if something changed.")
    description = st.text_input("Description", flow.description, key=key + "description")
    st.subheader("Decision model")
    c1, c2, c3 = st.columns(3)
    providers = list(dict.fromkeys([*PROVIDER_NAMES, flow.decision.provider]))  # keep one the list lacks
    d_provider = c1.selectbox("Provider", providers, index=providers.index(flow.decision.provider),
                              key=key + "d_provider")
    d_model = c2.text_input("Model", flow.decision.model, key=key + "d_model")
    d_way = c3.selectbox("Calling way", WAYS, index=WAYS.index(flow.decision.calling_way), key=key + "d_way",
                         help="auto picks per model (native → schema → prompt) and records each fallback")
    d_base = st.text_input("Base URL (openai-compatible only)", flow.decision.base_url or "", key=key + "d_base",
                           help="Empty: OPENAI_COMPATIBLE_BASE_URL. Another server needs your grant before "
                                "the first run, on the Run page.")
    d_prompt = st.text_area("System prompt", flow.decision.system_prompt, key=key + "d_prompt",
                            help="{{today}}, {{tomorrow}}, {{now}} and {{weekday}} are filled in at run time")
    d_temp = st.slider("Temperature", 0.0, 2.0, float(flow.decision.temperature), 0.1, key=key + "d_temp")

    st.subheader("Tools")
    available = sorted({t.version for t in app.registry.all()} | set(flow.tools))
    tools = st.multiselect("Attached tools (type to search)", available, default=flow.tools, key=key + "tools")
    short_names = [ref.rsplit("/", 1)[-1] for ref in tools]
    # entries that name a tool another way (its short name) stay, and stay selected
    approval_options = list(dict.fromkeys([*tools, *flow.needs_approval]))
    approval = st.multiselect("Needs approval (besides destructive tools and untrusted MCP servers)",
                              approval_options, default=flow.needs_approval, key=key + "approval")
    c1, c2, c3, c4 = st.columns(4)
    choices = list(dict.fromkeys(["auto", "required", "none", *short_names, flow.tool_choice]))
    tool_choice = c1.selectbox("tool_choice", choices, index=choices.index(flow.tool_choice), key=key + "choice")
    parallel = c2.checkbox("Parallel calls", flow.parallel_tool_calls, key=key + "parallel")
    max_rounds = c3.number_input("Max rounds", 1, 50, flow.max_rounds, key=key + "rounds")
    budget = c4.number_input("Retry budget", 0, 10, flow.retry_budget, key=key + "budget")

    st.subheader("MCP servers and HTTP tools")
    st.caption("JSON lists, as in the flow file (README: the flow JSON format). A server's tools are attached as "
               "<server>/mcp/<tool>, an OpenAPI source's as <name>/http/<operationId>: pick them above.")
    servers_text = st.text_area("MCP servers (JSON list)", as_json([s.model_dump(mode="json") for s in flow.mcp_servers]),
                                height=160, key=key + "mcp_servers")
    sources_text = st.text_area("HTTP tools (JSON list)", as_json([s.model_dump(mode="json") for s in flow.http_tools]),
                                height=160, key=key + "http_tools")
    servers, servers_problem = parse_list(servers_text, MCPServerConfig, "mcp_servers")
    sources, sources_problem = parse_list(sources_text, HTTPToolSource, "http_tools")
    for problem in (servers_problem, sources_problem):
        if problem:
            st.error(f"{md(problem)}. Fix it before saving.")
    lines = reach_lines(servers or [], sources or [])
    if lines:
        risky = any(s.trusted for s in servers or []) or any(s.allow_hosts for s in sources or [])
        (st.warning if risky else st.info)(
            "What this flow would start or reach (the Run page asks you to grant each before the first run):\n\n"
            + "\n".join(f"- {md(line)}" for line in lines))

    st.subheader("Polish model")
    use_polish = st.checkbox("Polish the tool results into the final answer", flow.polish is not None,
                             key=key + "use_polish")
    polish: dict[str, Any] | None = None
    schema_ok = True
    if use_polish:
        base = flow.polish or flow.decision
        c1, c2 = st.columns(2)
        p_providers = list(dict.fromkeys([*PROVIDER_NAMES, base.provider]))
        p_provider = c1.selectbox("Provider ", p_providers, index=p_providers.index(base.provider),
                                  key=key + "p_provider")
        p_model = c2.text_input("Model ", base.model, key=key + "p_model")
        p_base = st.text_input("Base URL (openai-compatible only) ", base.base_url or "", key=key + "p_base",
                               help="Empty: OPENAI_COMPATIBLE_BASE_URL. Another server needs your grant before "
                                    "the first run, on the Run page.")
        p_prompt = st.text_area("Polish system prompt (empty: FlowCall's default)",
                                flow.polish.system_prompt if flow.polish else "", key=key + "p_prompt")
        schema_text = st.text_area(
            "Output JSON Schema (optional: the answer must be JSON valid against it)",
            as_json(flow.polish.output_schema) if flow.polish and flow.polish.output_schema else "",
            height=200, key=key + "p_schema")
        schema, problem = schema_problem(schema_text)
        if problem:
            st.error(f"Output schema: {md(problem)}. Fix it before saving.")
            schema_ok = False
        elif schema is not None:
            st.success("The schema is valid (JSON Schema 2020-12).")
        polish = flow.polish.model_dump(mode="json") if flow.polish else {"temperature": 0.0, "max_tokens": 1024}
        polish.update(provider=p_provider, model=p_model, base_url=p_base.strip() or None, system_prompt=p_prompt,
                      output_schema=schema)

    valid = schema_ok and servers is not None and sources is not None
    if st.button("Save flow", type="primary", disabled=not valid, key=key + "save"):
        data = flow.model_dump(mode="json")
        data.update(description=description, tools=tools, needs_approval=approval, tool_choice=tool_choice,
                    parallel_tool_calls=parallel, max_rounds=int(max_rounds), retry_budget=int(budget), polish=polish,
                    mcp_servers=[s.model_dump(mode="json") for s in servers],
                    http_tools=[s.model_dump(mode="json") for s in sources])
        data["decision"].update(provider=d_provider, model=d_model, calling_way=d_way, system_prompt=d_prompt,
                                temperature=d_temp, base_url=d_base.strip() or None)
        try:
            saved = parse_flow(data, source=f"flow {name!r}")
            _, new_version = app.store.save_flow(saved)
            if new_version == version:
                st.info("Nothing changed; still version %d." % version)
            else:
                st.session_state["saved_message"] = f"Saved {name!r} as version {new_version}."
                st.rerun()
        except ConfigError as exc:
            st.error(f"{md(exc)}. Nothing was saved.")
    if message := st.session_state.pop("saved_message", None):
        st.success(md(message))

# ------------------------------------------------------------------ diagram, versions, JSON
with tab_diagram:
    st.graphviz_chart(flow_diagram(flow))

with tab_versions:
    versions = app.store.flow_versions(name)
    st.dataframe([{"version": v["version"], "saved": v["created_at"], "hash": v["spec_hash"][:12]} for v in versions],
                 hide_index=True)
    numbers = [v["version"] for v in versions]
    if len(numbers) < 2:
        st.caption("Only one version so far; save a change to compare versions.")
    else:
        c1, c2 = st.columns(2)
        older = c1.selectbox("From version", numbers, index=1, key=key + "from")
        newer = c2.selectbox("To version", numbers, index=0, key=key + "to")
        a = app.store.get_flow(name, older)[0].to_json().splitlines()
        b = app.store.get_flow(name, newer)[0].to_json().splitlines()
        diff = "\n".join(difflib.unified_diff(a, b, f"v{older}", f"v{newer}", lineterm=""))
        st.code(diff or "(no difference)", language="diff")

with tab_json:
    st.download_button("Export as JSON", flow.to_json(), file_name=f"{name}.json", mime="application/json",
                       key=key + "export")
    st.code(flow.to_json(), language="json")

# ------------------------------------------------------------------ duplicate, delete
with tab_manage:
    copy_name = st.text_input("Name of the copy", f"{name}-copy", key=key + "copy_name")
    if st.button("Duplicate", key=key + "duplicate"):
        try:
            if copy_name in names:
                raise ConfigError(f"a flow named {copy_name!r} exists; pick another name")
            app.store.save_flow(parse_flow({**flow.model_dump(mode="json"), "name": copy_name}, source="the copy"))
            st.session_state["flow"] = copy_name
            st.rerun()
        except ConfigError as exc:
            st.error(md(exc))
    st.divider()
    sure = st.checkbox(md(f"Yes, delete {name!r} and all its versions (its runs stay, for the record)"),
                       key=key + "sure")
    if st.button("Delete flow", disabled=not sure, key=key + "delete"):
        app.store.delete_flow(name)
        st.session_state.pop("flow", None)
        st.rerun()
