"""Providers: one module per wire format, all behind `Provider.complete`.

Each provider module declares what FlowCall knows of it in its `INFOS` (ProviderInfo, base.py):
its name, hosted or local, its environment variables, suggested models and factory. The rest
reads them: `provider_for` builds a flow's model, the studio and the CLI list them (through the
service). A provider module imports its SDK on first use (base.LazyModule), so reading the infos
does not load, say, the openai SDK for a flow that only uses the local model.

Installed packages add providers through the entry point group `flowcall.providers`, each
naming a ProviderInfo; the entry point's name is the provider's name:

    [project.entry-points."flowcall.providers"]
    toy = "toy_pkg.provider:INFO"

Such a provider's code runs here, so a flow that names it needs a grant of its package (the
service asks, as for an installed package's tools); nothing of it is imported to ask.
"""

from __future__ import annotations

import dataclasses
import importlib
from importlib.metadata import EntryPoint, entry_points

from flowcall.core.errors import ConfigError
from flowcall.core.spec import ModelConfig
from flowcall.providers.base import Capabilities, NotConfigured, Provider, ProviderInfo
from flowcall.trust.packages import PackageOrigin, origin_of

ENTRY_POINT_GROUP = "flowcall.providers"
# the modules that declare the built-in providers, in the order they are offered
BUILT_IN_MODULES = ("local", "openai_compat", "dashscope_native", "scripted")

_added: dict[str, ProviderInfo] = {}  # add_provider: a program that embeds FlowCall, a test
_loaded: dict[str, ProviderInfo] = {}  # installed providers imported so far, by name


def built_in_infos() -> dict[str, ProviderInfo]:
    """The providers FlowCall has (and those added with add_provider), by name."""
    infos: dict[str, ProviderInfo] = {}
    for module in BUILT_IN_MODULES:
        for info in importlib.import_module(f"{__name__}.{module}").INFOS:
            infos[info.name] = info
    return {**infos, **_added}


def add_provider(info: ProviderInfo) -> None:
    """Offer a provider without a package (a program that embeds FlowCall, a test); its name
    must be new."""
    if info.name in built_in_infos():
        raise ConfigError(f"there is already a provider named '{info.name}'; choose another name")
    _added[info.name] = info


def remove_provider(name: str) -> None:
    """Take back a provider given to add_provider."""
    _added.pop(name, None)


def _installed_points() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def installed_origin(name: str) -> PackageOrigin | None:
    """The package an installed provider comes from, read without importing it (so a grant can
    be asked before its code runs); None for a built-in provider or an unknown name."""
    if name in built_in_infos():
        return None
    point = _installed_points().get(name)
    return origin_of(point) if point is not None else None


def _load(point: EntryPoint) -> ProviderInfo:
    if point.name in _loaded:
        return _loaded[point.name]
    origin = origin_of(point)  # hashed before the import reads the file
    try:
        info = point.load()
    except Exception as exc:
        raise ConfigError(
            f"the provider entry point '{point.name}' ({point.value}) failed to import: {exc!r}; "
            "fix or uninstall that package"
        ) from exc
    if not isinstance(info, ProviderInfo):
        raise ConfigError(
            f"the provider entry point '{point.name}' ({point.value}) names a {type(info).__name__}, "
            "not a flowcall.providers.base.ProviderInfo; fix or uninstall that package"
        )
    if info.name != point.name:
        raise ConfigError(
            f"the provider entry point '{point.name}' ({point.value}) declares provider '{info.name}': "
            "an entry point of the group flowcall.providers is named as its provider; fix that package"
        )
    _loaded[point.name] = dataclasses.replace(info, package=origin)
    return _loaded[point.name]


def provider_infos() -> dict[str, ProviderInfo]:
    """Every provider here, built in and installed (importing the installed ones), by name."""
    infos = built_in_infos()
    for name, point in sorted(_installed_points().items()):
        if name in infos:
            raise ConfigError(
                f"an installed package declares provider '{name}' ({point.value}), a name FlowCall "
                "already has; rename that entry point or uninstall the package"
            )
        infos[name] = _load(point)
    return infos


def provider_info(name: str) -> ProviderInfo:
    """The provider of that name; an installed one is imported (only that one)."""
    infos = built_in_infos()
    if name in infos:
        return infos[name]
    points = _installed_points()
    if name in points:
        return _load(points[name])
    known = [n for n, info in infos.items() if info.listed] + sorted(points)
    raise ConfigError(
        f"provider '{name}' is not installed here; known: {', '.join(known)}; install the package "
        f"that provides it (it names a ProviderInfo in the entry point group {ENTRY_POINT_GROUP})"
    )


def provider_names() -> list[str]:
    """The providers a person may pick (not the stand-ins for tests), in order."""
    return [name for name, info in provider_infos().items() if info.listed]


def needs_settings(name: str, *, package_granted: bool = False) -> bool:
    """Must the provider be built to say whether its settings (key, base URL) are there, before
    a run is recorded? A hosted one, yes; but an installed one's module is imported only once its
    package is granted (`package_granted`); before that, nothing of it runs and this says no.
    ConfigError for a name no provider has."""
    if installed_origin(name) is not None and not package_granted:
        return False
    return provider_info(name).hosted


def provider_for(config: ModelConfig) -> Provider:
    """The provider a flow's model config names, built by its info's factory."""
    info = provider_info(config.provider)
    if config.base_url and info.api_key_variable and not info.flow_base_url:
        # its key goes only where the environment says: a flow file, which is shared, must not be
        # able to send it to another server
        other = next((i for i in built_in_infos().values() if i.flow_base_url and i.api_key_variable), None)
        where = f" (or {info.base_url_variable})" if info.base_url_variable else ""
        instead = (
            f" For another server use provider {other.name}; its key ({other.api_key_variable}) is sent "
            f"only to {other.base_url_variable}"
            if other is not None
            else ""
        )
        raise ConfigError(
            f"a flow cannot set base_url for provider '{info.name}': its API key is sent only to "
            f"{info.name}'s own endpoint{where}.{instead}"
        )
    return info.factory(config)


__all__ = [
    "Capabilities",
    "NotConfigured",
    "Provider",
    "ProviderInfo",
    "add_provider",
    "installed_origin",
    "needs_settings",
    "provider_for",
    "provider_info",
    "provider_infos",
    "provider_names",
    "remove_provider",
]
