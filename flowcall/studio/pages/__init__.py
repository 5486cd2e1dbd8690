"""Each studio page's code: a Streamlit script, run top to bottom on every interaction."""

from __future__ import annotations

import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent


def show(name: str) -> None:
    """Run the page `name` as Streamlit runs a page file: a page is a script, run afresh each
    time (an import would run it once per process)."""
    runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
