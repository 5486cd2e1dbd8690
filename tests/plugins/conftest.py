"""The built-in plugins, loaded the way the product loads them: by file path, through the registry."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from flowcall.core.config import REPO_ROOT
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.python_plugins import plugin_module_name
from flowcall.tools.registry import ToolRegistry

PLUGINS_DIR: Path = REPO_ROOT / "plugins"


@pytest.fixture(scope="session")
def registry() -> ToolRegistry:
    return ToolRegistry.from_plugin_dirs([PLUGINS_DIR])


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline sample data from the repo, whatever the developer's shell has set."""
    monkeypatch.delenv("AMAP_API_KEY", raising=False)
    monkeypatch.delenv("FLOWCALL_DATA_DIR", raising=False)


@pytest.fixture
def call(registry: ToolRegistry):
    """Run a tool as the engine does: JSON-like arguments, validated by the tool's own model."""

    def run(ref: str, **arguments):
        tool: Tool = registry.get(ref)
        return tool.invoke(arguments, RunContext(run_id="test"))

    return run


@pytest.fixture
def plugin_module(registry: ToolRegistry):
    """The module objects the registry imported, to reach their module-level helpers."""

    def find(stem: str) -> ModuleType:
        return sys.modules[plugin_module_name(PLUGINS_DIR / f"{stem}.py")]

    return find
