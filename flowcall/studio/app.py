"""The studio's entry: the navigation, the example flows on a first start, and the runs that wait
for a person on every page. `flowcall studio` serves this file with Streamlit behind the studio's
server guard (served_app.py); at a clone's root, `streamlit run app.py` does the same, with the
page files in pages/ (each hands over to its page here). Started any other way, it draws nothing.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from flowcall.studio.server_guard import guarding
from flowcall.studio.shared import NEW_KEY_STATE, service
from flowcall.studio.waiting import waiting_in_sidebar

PAGES = Path(__file__).resolve().parent / "pages"

# URL paths differ from the file names on purpose: while no session has run the entry script yet,
# Streamlit still maps /<file name> to pages/<file name>.py directly (its older pages/ folder
# routing), which would skip the entry: no navigation, no set-up. A path no file matches
# always starts here.
NAVIGATION = [
    ("flows", "Flows", ":material/account_tree:", None),
    ("run", "Run", ":material/play_arrow:", "ask"),
    ("runs", "Runs & inspector", ":material/manage_search:", "inspector"),
    ("experiments", "Experiments", ":material/science:", "evals"),
    ("plugins", "Plugins", ":material/extension:", "tools"),
    ("models", "Models", ":material/memory:", "model-setup"),
    ("api", "API", ":material/api:", "http-api"),
]


def main(pages_dir: Path = PAGES) -> None:
    """Draw the studio around the page the person opened; `pages_dir` holds one file per page."""
    st.set_page_config(page_title="FlowCall", page_icon="🛠️", layout="wide")
    if not guarding():  # started some other way: no guard checks who is asking, so do nothing
        st.error(
            "This studio was started without its server guard, so any web page could drive it. "
            "Start it with `flowcall studio` (or `bash scripts/start.sh`, or `streamlit run app.py` "
            "in the FlowCall folder)."
        )
        st.stop()
    if "seeded" not in st.session_state:  # once per session: an empty database gets the examples
        st.session_state["seeded"] = service().seed_examples()
    pages = [
        st.Page(
            str(pages_dir / f"{name}.py"),
            title=title,
            icon=icon,
            **({"url_path": path} if path else {"default": True}),
        )
        for name, title, icon, path in NAVIGATION
    ]
    page = st.navigation(pages)
    if page.url_path != "http-api":  # a key made on the API page is shown there once, not kept for later
        st.session_state.pop(NEW_KEY_STATE, None)
    with st.sidebar:  # on every page, kept up to date: the runs paused for a person, each a link to it
        waiting_in_sidebar(service())
    page.run()


if __name__ == "__main__":
    main()
