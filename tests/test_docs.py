"""The documentation builds with no broken link (mkdocs --strict), its generated reference
pages hold the real commands and formats, and the README stays a short guide whose links
all lead somewhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly_with_the_generated_reference(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr[-3000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "flowcall runs" in cli and "--require-tools" in cli  # from the click commands themselves
    formats = (tmp_path / "site" / "reference" / "formats" / "index.html").read_text(encoding="utf-8")
    assert "tool_choice" in formats and "{{ flow_schema }}" not in formats  # from the pydantic models


def test_the_readme_is_a_short_guide_whose_links_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
