"""FlowCall studio: `streamlit run app.py` (or `bash scripts/start.sh`; installed: `flowcall studio`).

The studio's code lives in flowcall/studio/; each file in pages/ hands over to its page there.
This file is read twice: `streamlit run` imports it and serves `app` below (the studio behind its
server guard, flowcall/studio/server_guard.py), and then runs it as each session's script.
"""

from pathlib import Path

import streamlit as st

from flowcall.studio.app import main
from flowcall.studio.server_guard import guard

if __name__ == "__main__":  # a session's run of the studio
    main(pages_dir=Path(__file__).resolve().parent / "pages")
else:  # imported by `streamlit run app.py`: what it serves
    middleware = guard()
    app = st.App(__file__, middleware=middleware)
