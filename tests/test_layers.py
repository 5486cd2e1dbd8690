"""The layers hold (.importlinter): pages and CLI → service → engine → calling, providers,
tools → store → base types. An import that runs back up fails here; no contract ignores one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_are_kept() -> None:
    linted = subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert linted.returncode == 0, linted.stdout[-3000:] + linted.stderr[-1000:]
    assert "0 broken" in linted.stdout
