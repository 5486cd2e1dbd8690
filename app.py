"""FlowCall studio: build tool-calling flows, run them, and see exactly what happened.

`streamlit run app.py` (or `bash scripts/start.sh`). Every page reads and writes through the
flowcall package; none talks to a provider or the database itself.
"""

from __future__ import annotations

import streamlit as st

from flowcall.studio import seed_examples, service

st.set_page_config(page_title="FlowCall", page_icon="🛠️", layout="wide")
if "seeded" not in st.session_state:  # once per session: an empty database gets the examples
    st.session_state["seeded"] = seed_examples(service())

pages = [
    st.Page("pages/flows.py", title="Flows", icon=":material/account_tree:", default=True),
    st.Page("pages/run.py", title="Run", icon=":material/play_arrow:"),
    st.Page("pages/runs.py", title="Runs & inspector", icon=":material/manage_search:"),
    st.Page("pages/plugins.py", title="Plugins", icon=":material/extension:"),
    st.Page("pages/models.py", title="Models", icon=":material/memory:"),
]
st.navigation(pages).run()
