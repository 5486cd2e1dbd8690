"""ruff over the whole tree: pyflakes (an unused import, an undefined name or a redefinition
is a defect: one undefined name hid a crash in a calibration script), import order (the
standard library, then packages, then flowcall and tests, each sorted) and line length
(pyproject's 110: a long string is split into parts that join, a long comment wraps)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ["flowcall", "pages", "plugins", "tests", "benchmarks", "scripts", "app.py"]


def test_pyflakes_import_order_and_line_length_find_nothing():
    ruff = [sys.executable, "-m", "ruff", "check", "--output-format", "concise"]
    done = subprocess.run([*ruff, *CHECKED], cwd=ROOT, capture_output=True, text=True)  # pyproject's rules
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_with_no_arguments_checks_the_same_rules():
    """A newcomer runs `ruff check` at the root: it finds what the test finds, no more."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--output-format", "concise"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
