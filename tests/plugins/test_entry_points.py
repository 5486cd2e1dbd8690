"""Plugins from installed packages, found through the `flowcall.plugins` entry point group.

The package here is installed the way pip leaves one: a module on sys.path and a dist-info
folder with entry_points.txt beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from flowcall.core.config import REPO_ROOT
from flowcall.core.errors import ConfigError
from flowcall.tools.base import RunContext
from flowcall.tools.registry import ToolRegistry
from tests.test_studio import page, widget


def install(tmp_path, module_source: str, target: str = "acme_tools") -> None:
    (tmp_path / "acme_tools.py").write_text(module_source, encoding="utf-8")
    info = tmp_path / "acme_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-tools\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[flowcall.plugins]\nacme = {target}\n", encoding="utf-8")


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("acme_tools", None)


STOCK_LEVEL = (
    "from flowcall.tools.python_plugins import tool\n\n"
    '@tool("acme/v1/stock_level", read_only=True)\n'
    'def stock_level(sku: str) -> int:\n    """Units in stock for a SKU."""\n    return 7\n'
)


def test_an_installed_packages_tools_join_the_registry(site):
    install(site, STOCK_LEVEL)
    registry = ToolRegistry.from_plugin_dirs([REPO_ROOT / "plugins"])
    stock = registry.get("stock_level")
    assert stock.version == "acme/v1/stock_level" and stock.annotations.read_only
    assert (
        stock.parameters["required"] == ["sku"] and stock.invoke({"sku": "A-1"}, RunContext(run_id="t")) == 7
    )
    assert registry.get("get_weather")  # the folder plugins are still there


def test_a_broken_package_is_named(site):
    install(site, "raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match="entry point 'acme' \\(acme_tools\\) failed to import.*boom"):
        ToolRegistry.from_plugin_dirs([REPO_ROOT / "plugins"])


def test_an_installed_packages_tool_shows_in_the_cli_and_on_the_canvas_palette(site):
    install(site, STOCK_LEVEL)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)])}
    listed = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "plugins", "list", "--json"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr
    assert "acme/v1/stock_level" in {tool["version"] for tool in json.loads(listed.stdout)}
    app = page("pages/flows.py")  # in this process: the package is on sys.path here too
    widget(app.text_input, "Name").input("acme-stock")
    widget(app.radio, "Start from").set_value("blank")
    widget(app.button, "Create").click().run()
    assert [b for b in app.button if (b.key or "").endswith("add:acme/v1/stock_level")], "not on the palette"
