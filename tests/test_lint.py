"""ruff's pyflakes rules over the whole tree: an unused import, an undefined name or a
redefinition is a defect (one undefined name hid a crash in a calibration script).
Import order and line length (pyproject's 110) are to join when the modules move into
folders by concern."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ["flowcall", "pages", "plugins", "tests", "benchmarks", "scripts", "app.py"]


def test_pyflakes_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "F", "--output-format", "concise",
                           *CHECKED], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
