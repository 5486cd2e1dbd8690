"""The tool registry: every tool a flow can attach, found by version or by name."""

from __future__ import annotations

from pathlib import Path

from flowcall.core.errors import ConfigError
from flowcall.tools.base import Tool
from flowcall.tools.python_plugins import load_entry_points, load_plugin_dir


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None):
        self._by_version: dict[str, Tool] = {}
        for t in tools or []:
            self.register(t)

    def register(self, tool: Tool) -> None:
        existing = self._by_version.get(tool.version)
        if existing is not None and existing.func is not tool.func:
            raise ConfigError(f"two tools claim the version '{tool.version}'; give one a new name or version")
        self._by_version[tool.version] = tool

    def extended(self, tools: list[Tool]) -> ToolRegistry:
        """A new registry with these tools added (a run's MCP tools), this one unchanged."""
        return ToolRegistry([*self._by_version.values(), *tools])

    def all(self) -> list[Tool]:
        return sorted(self._by_version.values(), key=lambda t: t.version)

    def get(self, ref: str) -> Tool:
        """A reference is a full version (weather/v1/get_weather) or a bare, unambiguous name."""
        if ref in self._by_version:
            return self._by_version[ref]
        matches = [t for t in self._by_version.values() if t.name == ref]
        if len(matches) == 1:
            return matches[0]
        if matches:
            versions = ", ".join(t.version for t in matches)
            raise ConfigError(f"tool '{ref}' is ambiguous ({versions}); reference it by its full version")
        known = ", ".join(sorted(self._by_version)) or "none"
        raise ConfigError(
            f"no tool '{ref}' is registered; known tools: {known} (see `flowcall plugins list`)"
        )

    def resolve(self, refs: list[str]) -> list[Tool]:
        tools = [self.get(ref) for ref in refs]
        names = [t.name for t in tools]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ConfigError(
                "a flow cannot attach two tools named "
                f"{sorted(duplicates)}; the model could not tell them apart"
            )
        return tools

    @classmethod
    def from_plugin_dirs(cls, dirs: list[Path]) -> ToolRegistry:
        """The tools of plugin folders, plus those of installed packages (entry points)."""
        registry = cls()
        for directory in dirs:
            if not directory.is_dir():
                raise ConfigError(f"plugin folder {directory} does not exist; fix FLOWCALL_PLUGIN_DIRS")
            for t in load_plugin_dir(directory):
                registry.register(t)
        for t in load_entry_points():  # installed packages' tools
            registry.register(t)
        return registry
