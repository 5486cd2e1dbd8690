"""FlowCall studio: `streamlit run app.py` (or `bash scripts/start.sh`; installed: `flowcall studio`).

The studio's code lives in flowcall/studio/; each file in pages/ hands over to its page there.
"""

from pathlib import Path

from flowcall.studio.app import main

main(pages_dir=Path(__file__).resolve().parent / "pages")
