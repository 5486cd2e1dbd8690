"""ruff over the whole tree: pyflakes (an unused import, an undefined name or a redefinition
is a defect: one undefined name hid a crash in a calibration script) and import order (the
standard library, then packages, then flowcall and tests, each sorted). Line length
(pyproject's 110) is to join next: 1,700 lines are longer today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ["flowcall", "pages", "plugins", "tests", "benchmarks", "scripts", "app.py"]


def test_pyflakes_and_import_order_find_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "F,I", "--output-format", "concise", *CHECKED],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
