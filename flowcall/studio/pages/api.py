"""API: how programs call a flow over HTTP (`flowcall serve`): its endpoints, curl and
OpenAI-SDK snippets ready to paste, and the keys the requests send. A new key is shown once,
kept in the session only until the person hides it or opens another page; the database holds
its hash alone. Names and questions are the person's text: the snippets quote them
(flowcall/studio/api_snippets.py), and the page shows them as text (`md`)."""

from __future__ import annotations

import streamlit as st

from flowcall.core.errors import ConfigError
from flowcall.studio import api_snippets as snippets
from flowcall.studio.shared import EXAMPLE_QUESTIONS, NEW_KEY_STATE, md, service

app = service()
st.title("API")
st.caption(
    "Programs call your flows over HTTP: start the server with `flowcall serve`, and send a key (made "
    "below, or with `flowcall keys create NAME`) with every request as `Authorization: Bearer <key>`. "
    "The chat-completions endpoint speaks OpenAI's protocol, so any OpenAI client can call a flow by "
    "giving its name as the model. The server documents every route at /docs."
)

flow_names = [flow["name"] for flow in app.list_flows()]

# --- a flow's endpoints and snippets ----------------------------------------------------------
st.header("Calling a flow")
# Kept apart from the widget's own state, which Streamlit drops when another page is opened.
st.session_state.setdefault("api:base-kept", snippets.default_base_url())
base = st.text_input(
    "Server address",
    value=st.session_state["api:base-kept"],
    key="api:base",
    help=f"Where `flowcall serve` listens; set {snippets.BASE_URL_VARIABLE} to change the default.",
)
st.session_state["api:base-kept"] = base
if not base.strip().lower().startswith(("http://", "https://")):
    st.warning("The server address should start with http:// or https://.")
st.caption("Start the server for this studio's flows and keys, at that address:")
database = app.database_label()  # "***": fill in the password
st.code(snippets.serve_line(base, database), language="bash")
if not flow_names:
    st.info("No saved flows yet: make one on the Flows page, or `flowcall flows import FILE`.")
else:
    flow = st.selectbox("Flow", flow_names, key="api:flow")
    question = st.text_input(
        "Question in the examples",
        value=EXAMPLE_QUESTIONS.get(flow, "What can you do?"),
        key=f"api:question:{flow}",
    )
    st.subheader("Endpoints")
    st.code(snippets.endpoints(base, flow), language=None)
    st.caption(
        "A run answers when it ends, with its answer, status and id; a run that waits for a person "
        "answers 202 with its id. GET /v1/models lists the flows."
    )
    st.subheader("curl: a run")
    st.code(snippets.curl_run(base, flow, question), language="bash")
    st.subheader("curl: chat completions")
    st.code(snippets.curl_chat(base, flow, question), language="bash")
    st.subheader("OpenAI Python SDK")
    st.code(snippets.openai_python(base, flow, question), language="python")
    st.caption(
        "`pip install openai`. The flow's own tools run inside FlowCall; the reply is the flow's answer."
    )

# --- keys -------------------------------------------------------------------------------------
st.header("Keys")
if message := st.session_state.pop("api:message", None):
    st.success(md(message))

with st.form("api:create", clear_on_submit=True):
    st.markdown("**New key**")
    name = st.text_input("Name", placeholder="billing-app", help="Who or what uses the key.")
    chosen = st.multiselect(
        "Flows",
        flow_names,
        placeholder="Every flow",
        help="The flows the key may call. Leave it empty for every flow.",
    )
    if st.form_submit_button("Create key", type="primary"):
        try:
            key, secret = app.create_key(name, chosen or None)
        except ConfigError as exc:
            st.error(md(exc))
        else:
            st.session_state[NEW_KEY_STATE] = {"name": key.name, "secret": secret}

if shown := st.session_state.get(NEW_KEY_STATE):
    st.warning(
        f"The key {md(shown['name'])} is shown here once and will not be shown again: copy it now "
        "(the copy button is at the right of the box). FlowCall keeps only its hash."
    )
    st.code(shown["secret"], language=None)
    if st.button("I have copied it: hide the key", key="api:hide"):
        st.session_state.pop(NEW_KEY_STATE, None)
        st.rerun()

keys = app.list_keys()
if not keys:
    st.caption("No keys yet.")
else:
    st.dataframe(
        [
            {
                "name": key.name,
                "prefix": f"fc_{key.prefix}",
                "flows": "every flow" if key.flows is None else ", ".join(key.flows),
                "created": f"{key.created_at:%Y-%m-%d %H:%M} UTC",
                "revoked": f"{key.revoked_at:%Y-%m-%d %H:%M} UTC" if key.revoked_at else "",
            }
            for key in keys
        ],
        hide_index=True,
    )
    active = [key for key in keys if key.active]
    if active:
        st.markdown("**Revoke a key**: it stops working at once; programs that send it get 401.")
    for key in active:
        label, button = st.columns([4, 1], vertical_alignment="center")
        label.markdown(f"{md(key.name)} · fc\\_{md(key.prefix)}")
        if button.button("Revoke", key=f"api:revoke:{key.prefix}:{key.name}"):
            try:
                revoked = app.revoke_key(key.name)
            except ConfigError as exc:  # revoked meanwhile, elsewhere
                st.error(md(exc))
            else:
                st.session_state["api:message"] = f"Revoked {', '.join(k.name for k in revoked)}."
                st.rerun()
