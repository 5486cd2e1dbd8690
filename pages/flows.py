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
from flowcall.spec import Flow, parse_flow
from flowcall.studio import as_json, service

WAYS = ["auto", "native", "schema", "prompt", "router"]
app = service()
st.title("Flows")
st.caption("question → decision model → plugin tools → polish model → answer")


def diagram(flow: Flow) -> str:
    """Graphviz DOT of the flow, drawn by the browser."""
    tools = [ref.rsplit("/", 1)[-1] for ref in flow.tools] or ["(no tools)"]
    lines = ['digraph { rankdir=LR; node [shape=box, style="rounded,filled", fillcolor="#f5f7fb", fontname="sans"];',
             'question [shape=oval, fillcolor="#e8f0fe"]; answer [shape=oval, fillcolor="#e6f4ea"];',
             f'decision [label="decision\\n{flow.decision.provider}/{flow.decision.model}\\nway: {flow.decision.calling_way}"];',
             "question -> decision;"]
    for i, name in enumerate(tools):
        gated = name in flow.needs_approval or any(ref.endswith("/" + name) for ref in flow.needs_approval)
        lines.append(f't{i} [label="{name}{" ✋" if gated else ""}", fillcolor="#fef7e0"]; '
                     f'decision -> t{i} [dir=both, label="{"tool_choice: " + flow.tool_choice if i == 0 else ""}"];')
    if flow.polish:
        schema = " + schema" if flow.polish.output_schema else ""
        lines += [f'polish [label="polish\\n{flow.polish.provider}/{flow.polish.model}{schema}"];',
                  "decision -> polish; polish -> answer;"]
    else:
        lines.append("decision -> answer;")
    return "\n".join(lines) + "\n}"


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
    return schema, None


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
                st.error(str(exc))
    upload = st.file_uploader("Import a flow (JSON)", type=["json"], key="import_flow")
    if upload is not None and upload.file_id != st.session_state.get("imported_file"):
        st.session_state["imported_file"] = upload.file_id  # import once, not on every rerun
        try:
            imported = parse_flow(upload.getvalue().decode("utf-8", errors="replace"), source=upload.name)
            app.registry.resolve(imported.plugin_refs())  # a tool that is not installed: say so now, not at run time
            version_id, version = app.store.save_flow(imported)
            st.success(f"Imported {imported.name!r} as version {version}.")
            st.session_state["flow"] = imported.name
        except ConfigError as exc:
            st.error(f"{exc}. Nothing was changed.")

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
with tab_edit:
    st.caption(f"Version {version}. Saving makes a new version only if something changed.")
    description = st.text_input("Description", flow.description, key=key + "description")
    st.subheader("Decision model")
    c1, c2, c3 = st.columns(3)
    providers = list(PROVIDER_NAMES)
    d_provider = c1.selectbox("Provider", providers, index=providers.index(flow.decision.provider)
                              if flow.decision.provider in providers else 0, key=key + "d_provider")
    d_model = c2.text_input("Model", flow.decision.model, key=key + "d_model")
    d_way = c3.selectbox("Calling way", WAYS, index=WAYS.index(flow.decision.calling_way), key=key + "d_way",
                         help="auto picks per model (native → schema → prompt) and records each fallback")
    d_base = st.text_input("Base URL (openai-compatible only)", flow.decision.base_url or "", key=key + "d_base") \
        if d_provider == "openai-compatible" else ""
    d_prompt = st.text_area("System prompt", flow.decision.system_prompt, key=key + "d_prompt",
                            help="{{today}}, {{tomorrow}}, {{now}} and {{weekday}} are filled in at run time")
    d_temp = st.slider("Temperature", 0.0, 2.0, float(flow.decision.temperature), 0.1, key=key + "d_temp")

    st.subheader("Tools")
    available = sorted({t.version for t in app.registry.all()} | set(flow.tools))
    tools = st.multiselect("Attached tools (type to search)", available, default=flow.tools, key=key + "tools")
    short_names = [ref.rsplit("/", 1)[-1] for ref in tools]
    approval = st.multiselect("Needs approval (besides destructive tools and untrusted MCP servers)", tools,
                              default=[r for r in flow.needs_approval if r in tools], key=key + "approval")
    c1, c2, c3, c4 = st.columns(4)
    choices = ["auto", "required", "none", *short_names]
    tool_choice = c1.selectbox("tool_choice", choices, index=choices.index(flow.tool_choice)
                               if flow.tool_choice in choices else 0, key=key + "choice")
    parallel = c2.checkbox("Parallel calls", flow.parallel_tool_calls, key=key + "parallel")
    max_rounds = c3.number_input("Max rounds", 1, 50, flow.max_rounds, key=key + "rounds")
    budget = c4.number_input("Retry budget", 0, 10, flow.retry_budget, key=key + "budget")

    st.subheader("Polish model")
    use_polish = st.checkbox("Polish the tool results into the final answer", flow.polish is not None,
                             key=key + "use_polish")
    polish: dict[str, Any] | None = None
    schema_ok = True
    if use_polish:
        base = flow.polish or flow.decision
        c1, c2 = st.columns(2)
        p_provider = c1.selectbox("Provider ", providers, index=providers.index(base.provider)
                                  if base.provider in providers else 0, key=key + "p_provider")
        p_model = c2.text_input("Model ", base.model, key=key + "p_model")
        p_prompt = st.text_area("Polish system prompt (empty: FlowCall's default)",
                                flow.polish.system_prompt if flow.polish else "", key=key + "p_prompt")
        schema_text = st.text_area(
            "Output JSON Schema (optional: the answer must be JSON valid against it)",
            as_json(flow.polish.output_schema) if flow.polish and flow.polish.output_schema else "",
            height=200, key=key + "p_schema")
        schema, problem = schema_problem(schema_text)
        if problem:
            st.error(f"Output schema: {problem}. Fix it before saving.")
            schema_ok = False
        elif schema is not None:
            st.success("The schema is valid (JSON Schema 2020-12).")
        polish = {"provider": p_provider, "model": p_model, "system_prompt": p_prompt, "output_schema": schema,
                  "temperature": flow.polish.temperature if flow.polish else 0.0,
                  "max_tokens": flow.polish.max_tokens if flow.polish else 1024}

    if st.button("Save flow", type="primary", disabled=not schema_ok, key=key + "save"):
        data = flow.model_dump(mode="json")
        data.update(description=description, tools=tools, needs_approval=approval, tool_choice=tool_choice,
                    parallel_tool_calls=parallel, max_rounds=int(max_rounds), retry_budget=int(budget), polish=polish)
        data["decision"].update(provider=d_provider, model=d_model, calling_way=d_way, system_prompt=d_prompt,
                                temperature=d_temp, base_url=d_base or None)
        try:
            saved = parse_flow(data, source=f"flow {name!r}")
            _, new_version = app.store.save_flow(saved)
            if new_version == version:
                st.info("Nothing changed; still version %d." % version)
            else:
                st.session_state["saved_message"] = f"Saved {name!r} as version {new_version}."
                st.rerun()
        except ConfigError as exc:
            st.error(f"{exc}. Nothing was saved.")
    if message := st.session_state.pop("saved_message", None):
        st.success(message)

# ------------------------------------------------------------------ diagram, versions, JSON
with tab_diagram:
    st.graphviz_chart(diagram(flow))

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
            st.error(str(exc))
    st.divider()
    sure = st.checkbox(f"Yes, delete {name!r} and all its versions (its runs stay, for the record)",
                       key=key + "sure")
    if st.button("Delete flow", disabled=not sure, key=key + "delete"):
        app.store.delete_flow(name)
        st.session_state.pop("flow", None)
        st.rerun()
