"""The canvas ships prebuilt and works offline: the page the studio serves names only files it
ships, and nothing in them loads from another host (no CDN, no font service)."""

from __future__ import annotations

import re

from flowcall.studio.canvas import BUILD


def test_the_build_is_complete_and_loads_nothing_from_elsewhere() -> None:
    page = (BUILD / "index.html").read_text(encoding="utf-8")
    named = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert named and all(not re.match(r"(?:[a-z]+:)?//", n) for n in named), named  # relative paths only
    for name in named:
        assert (BUILD / name).is_file(), name
    for asset in (BUILD / "assets").iterdir():
        text = asset.read_text(encoding="utf-8")
        # URLs in the bundle are XML namespaces and error-page links in messages, never something loaded
        assert not re.search(r"""(?:import\s*\(|src\s*=|url\()\s*["']?https?://""", text), asset.name
        assert not re.search(r"cdn\.|unpkg|jsdelivr|googleapis|fonts\.g", text), asset.name
