"""How long the Run page holds a person's tab, and how long the run takes, on the embedded model.

The Run page is opened with Streamlit's AppTest on a fresh SQLite database, the flow picked and
Run clicked, --runs times: "page back" is how long that click's script run takes (the tab is
busy, and any click meanwhile would end a run that lives in the page); "run ended" is how long
until the run has ended (the page's run, or the studio runner's). One run first, unmeasured,
loads the model. Run it on two checkouts side by side, one after the other (never at once: two
model processes on 2 cores thrash):

    PYTHONPATH=<checkout> .venv/bin/python benchmarks/studio_handover.py [--runs 3]

The last line is exactly `run page: back after P s, run ended after E s (median of N)`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or Path(__file__).resolve().parents[1])
sys.path.insert(0, str(ROOT))

FLOW, QUESTION = "employee-lookup", "张三今年多大了?"
ENDED = ("succeeded", "failed", "cancelled", "waiting_approval")


def once(app, store) -> tuple[float, float]:
    """One Run click: seconds until the page is back, and until the run has ended."""
    before = {r.id for r in store.list_runs(limit=1000)}
    started = time.perf_counter()
    next(b for b in app.button if b.label == "Run").click().run(timeout=900)
    back = time.perf_counter() - started
    (run_id,) = {r.id for r in store.list_runs(limit=1000)} - before
    while store.get_run(run_id).status.value not in ENDED:
        time.sleep(0.05)
    return back, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["FLOWCALL_DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/flowcall.db"
    from streamlit.testing.v1 import AppTest

    from flowcall.service.front import FlowCall

    store = FlowCall.open().store
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    app.run()
    app.switch_page("pages/run.py")
    app.run()
    next(s for s in app.selectbox if s.label == "Flow").select(FLOW).run()
    next(t for t in app.text_area if t.label == "Question").input(QUESTION).run()
    print(f"checkout {ROOT}; flow {FLOW}, question {QUESTION}", flush=True)
    once(app, store)  # loads the model
    figures = [once(app, store) for _ in range(args.runs)]
    for n, (back, ended) in enumerate(figures, 1):
        print(f"run {n}: page back after {back:.2f} s, run ended after {ended:.2f} s", flush=True)
    back = statistics.median(f[0] for f in figures)
    ended = statistics.median(f[1] for f in figures)
    print(f"run page: back after {back:.2f} s, run ended after {ended:.2f} s (median of {len(figures)})")


if __name__ == "__main__":
    main()
