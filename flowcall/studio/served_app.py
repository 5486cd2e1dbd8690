"""What `flowcall studio` hands to `streamlit run`: the studio (app.py beside this file) served
behind its server guard (server_guard.py). `streamlit run` finds `app` below and serves it."""

from pathlib import Path

import streamlit as st

from flowcall.studio.server_guard import guard

middleware = guard()  # first: on a Streamlit without st.App it refuses to start, with the reason
app = st.App(Path(__file__).with_name("app.py"), middleware=middleware)
