"""FlowCall studio: build tool-calling flows, run them, and see exactly what happened.

`streamlit run app.py` (or `bash scripts/start.sh`). Every page reads and writes through the
flowcall package; none talks to a provider or the database itself.
"""

from __future__ import annotations

import streamlit as st

from flowcall.studio import NEW_KEY_STATE, seed_examples, service
from flowcall.studio_waiting import show_waiting

st.set_page_config(page_title="FlowCall", page_icon="🛠️", layout="wide")
if "seeded" not in st.session_state:  # once per session: an empty database gets the examples
    st.session_state["seeded"] = seed_examples(service())

# URL paths differ from the file names on purpose: while no session has run this script yet,
# Streamlit still maps /<file name> to pages/<file name>.py directly (its older pages/ folder
# routing), which would skip this script: no navigation, no set-up. A path no file matches
# always starts here.
pages = [
    st.Page("pages/flows.py", title="Flows", icon=":material/account_tree:", default=True),
    st.Page("pages/run.py", title="Run", icon=":material/play_arrow:", url_path="ask"),
    st.Page("pages/runs.py", title="Runs & inspector", icon=":material/manage_search:", url_path="inspector"),
    st.Page("pages/experiments.py", title="Experiments", icon=":material/science:", url_path="evals"),
    st.Page("pages/plugins.py", title="Plugins", icon=":material/extension:", url_path="tools"),
    st.Page("pages/models.py", title="Models", icon=":material/memory:", url_path="model-setup"),
    st.Page("pages/api.py", title="API", icon=":material/api:", url_path="http-api"),
]
page = st.navigation(pages)
if page.url_path != "http-api":  # a key made on the API page is shown there once, not kept for later
    st.session_state.pop(NEW_KEY_STATE, None)
show_waiting(service(), "sidebar")  # on every page: the runs paused for a person, each a link to it
page.run()
