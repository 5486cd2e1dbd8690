"""Every example flow, end to end on the real embedded model (temperature 0, fixed seed).

A small CI-sized slice of benchmarks/example_flows.py: per flow, two phrasings from the held-out
half of benchmarks/data/example_phrasings.json, checked by the same code
(tests/support/example_checks.py): the right tool ran with the right arguments, the run was
recorded, and the answer holds the facts the tools returned, not a given prose.

Only phrasings that passed every benchmark run on the default model after the flows' last change
are here (results and what was changed: benchmarks/results/2026-11-24_example_flows* and, on
the 1.5B, 2026-11-28_example_flows_1.5b_retuned.txt). The commute phrasings are checked in
full: the lookup and what the card says.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowcall.service.front import FlowCall
from tests.support.example_checks import case, run_case, users_clock

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]
FLOWS = ROOT / "flows"

# held-out phrasings that passed the benchmark after the flows' last change, two per flow
HELD_OUT = ["em7", "em9", "cd8", "cd9", "tm8", "tm9", "ct6", "ct10", "cw7", "cw8"]


@pytest.fixture
def service(model_path) -> FlowCall:
    # the flows' "today" and "tomorrow" are their users' (Asia/Shanghai), whatever the hour here
    with users_clock():
        yield FlowCall.open()


@pytest.mark.parametrize("case_id", HELD_OUT)
def test_example_flow_answers_a_held_out_phrasing(service, case_id):
    run, problems = run_case(service, case(case_id))
    assert not problems, f"{case(case_id).question}: {problems}"


def test_run_with_approve_asks_on_the_terminal(tmp_path):
    """`flowcall run --approve` on the real model: a flow that wants add_task approved; the
    person at the terminal edits the title."""
    flow = json.loads((FLOWS / "create_task.json").read_text(encoding="utf-8"))
    flow["needs_approval"] = ["add_task"]
    path = tmp_path / "approved_task.json"
    path.write_text(json.dumps(flow, ensure_ascii=False), encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'approve.db'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowcall.cli.main",
            "--db",
            db,
            "run",
            str(path),
            "添加任务:写周报,优先级高,截止 2026-11-27",
            "--approve",
        ],
        input='e\n{"title": "写周报(已审)", "priority": "high"}\n',
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "wants to run with" in done.stderr and "approval" in done.stderr
    assert "Traceback" not in done.stderr  # not even llama-cpp-python's at exit
    service = FlowCall.open(db)
    assert [t["title"] for t in service.store.list_tasks()] == ["写周报(已审)"]
