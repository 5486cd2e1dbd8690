"""The "python" kind: tools written as decorated Python functions (python_plugins.tool), in the
plugin folders (FLOWCALL_PLUGIN_DIRS) or in installed packages (entry point group `flowcall.plugins`).

How it differs from the other kinds: it is no source a flow lists, but the registry-wide one
every flow can attach. Its tools are loaded once, into the service's registry (not per run), and
are referenced by their own versions (`weather/v1/get_weather`), not `<source>/<kind>/<tool>`; so
`configs(flow)` is empty and it is not among `kinds()` (the kinds a flow lists sources of). Its
consent items are package items: a folder's plugin is this machine's own code and asks nothing,
while a tool of an installed package asks for a grant naming the package, its version and its
module file (consent.package_items), found by `package_tools` for the tools a flow attaches.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow
from flowcall.tools.base import Tool
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.sources.base import FormField, LoadContext
from flowcall.trust.consent import TrustItem, package_items
from flowcall.trust.packages import PackageOrigin


class PluginFolders(BaseModel):
    """Where the plugins are: folders of modules; installed packages are always added."""

    model_config = ConfigDict(extra="forbid")

    dirs: list[str] = Field(default_factory=list, description="Plugin folders (FLOWCALL_PLUGIN_DIRS).")


class PythonKind:
    kind = "python"
    label = "Python plugins"
    config_model: type[BaseModel] = PluginFolders

    def configs(self, flow: Flow) -> list[BaseModel]:
        return []  # no flow lists it: every flow can attach its tools

    def load(self, config: BaseModel, context: LoadContext) -> list[Tool]:
        assert isinstance(config, PluginFolders)
        return ToolRegistry.from_plugin_dirs([Path(d) for d in config.dirs]).all()

    def trust_items(self, config: BaseModel) -> list[TrustItem]:
        return []  # a package's tool is asked for where a flow attaches it: flow_trust_items

    def form_fields(self) -> dict[str, FormField]:
        return {"dirs": FormField("Plugin folders", "set with FLOWCALL_PLUGIN_DIRS", "plugins")}


KIND = PythonKind()


def package_tools(registry: ToolRegistry, flow: Flow) -> dict[str, PackageOrigin]:
    """The flow's plugin tools that installed packages provide, each with its package."""
    found = {}
    for ref in flow.plugin_refs():
        try:
            tool = registry.get(ref)
        except ConfigError:
            continue  # an unknown tool is refused where the flow's tools are resolved
        if tool.package is not None:
            found[tool.version] = tool.package
    return found


def flow_trust_items(registry: ToolRegistry, flow: Flow) -> list[TrustItem]:
    """What the flow's plugin tools need granted: each installed package's tool it attaches."""
    return package_items(package_tools(registry, flow))
