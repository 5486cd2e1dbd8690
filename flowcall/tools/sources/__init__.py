"""A flow's tool sources, by kind: the built-in kinds and those installed packages add.

`kinds()` is every kind a flow can list sources of (base.py says what a kind is); the spec's
check (`validate_sources`), consent (`source_trust_items`), runs (`run_registry`), "Try it"
(tools/trial.py), the service and the studio all loop over it. The plugins (sources/python.py)
are no such kind: every flow can attach them, and they live in the service's registry.

A run's sources are loaded when it starts and dropped when it ends (an MCP server is stopped
then). A source that cannot be loaded fails the run with one line naming it and the reason. Only
the sources whose tools the flow attaches are started or loaded: a server listed in a shared flow
but not used by it never runs.

An installed package adds a kind through the entry-point group `flowcall.tool_sources`; the
entry point names an object fitting base.ToolSourceKind (or a class making one):

    [project.entry-points."flowcall.tool_sources"]
    toy = "toy_ext:KIND"

Its code runs here with your rights, so a flow with a source of that kind asks for a grant
naming the package (consent.package_source_items), as a package's tool does.
"""

from __future__ import annotations

import importlib
import re
import sys
from contextlib import ExitStack, contextmanager
from functools import lru_cache
from typing import Any, Iterable, Iterator

from pydantic import BaseModel, ValidationError

from flowcall.core.errors import ConfigError, ErrorCode, FlowCallError
from flowcall.core.spec import SOURCE_KIND, Flow
from flowcall.tools.base import Tool
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.sources.base import (
    DEFAULT_CALL_TIMEOUT_S,
    ENTRY_POINT_GROUP,
    FormField,
    LoadContext,
    ToolSourceKind,
)
from flowcall.trust import consent
from flowcall.trust.consent import Grants, TrustItem
from flowcall.trust.packages import PackageOrigin, origin_of

__all__ = [
    "BUILT_IN",
    "FormField",
    "LoadContext",
    "ToolSourceKind",
    "attached",
    "fetched_trust_items",
    "flow_field",
    "installed_kinds",
    "kind_of",
    "kinds",
    "load_source",
    "probe_flow",
    "run_registry",
    "source_trust_items",
    "trust_items",
    "ungranted",
    "validate_sources",
    "with_source",
]

# ---- The built-in kinds: one module each under flowcall/tools/sources/, holding `KIND`. A new
# ---- built-in kind is one module plus one line here (in the order the studio offers them).
BUILT_IN: tuple[str, ...] = (
    "flowcall.tools.sources.mcp",
    "flowcall.tools.sources.openapi",
    "flowcall.tools.sources.flow",
)
RESERVED = ("python",)  # the plugins' kind (sources/python.py): no flow lists sources of it
SOURCE_KIND_RE = re.compile(SOURCE_KIND)


def kinds() -> dict[str, ToolSourceKind]:
    """Every kind a flow can list sources of, by name: the built-in ones, then the installed ones."""
    found: dict[str, ToolSourceKind] = {}
    for module in BUILT_IN:
        kind = importlib.import_module(module).KIND
        found[kind.kind] = kind
    for name, (kind, _) in _installed(tuple(sys.path)).items():
        if name in found:
            raise ConfigError(
                f"an installed package offers the tool source kind {name!r}, which is built in; "
                "uninstall that package or have it name its kind otherwise"
            )
        found[name] = kind
    return found


def installed_kinds() -> dict[str, PackageOrigin]:
    """The kinds installed packages provide, each with the package it comes from."""
    return {name: origin for name, (_, origin) in _installed(tuple(sys.path)).items()}


@lru_cache(maxsize=4)
def _installed(path: tuple[str, ...]) -> dict[str, tuple[ToolSourceKind, PackageOrigin]]:
    """The installed packages' kinds, found once per sys.path (`path` is only the cache's key)."""
    from importlib.metadata import entry_points

    found: dict[str, tuple[ToolSourceKind, PackageOrigin]] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            origin = origin_of(point)  # hashed before the import reads the file
            kind = point.load()
            kind = kind() if isinstance(kind, type) else kind
        except Exception as exc:
            raise ConfigError(
                f"tool source entry point '{point.name}' ({point.value}) failed to import: {exc!r}; "
                "fix or uninstall that package"
            ) from exc
        name = getattr(kind, "kind", None)
        if not isinstance(kind, ToolSourceKind) or not isinstance(name, str):
            raise ConfigError(
                f"tool source entry point '{point.name}' ({point.value}) of the package {origin.package} "
                "does not name a tool source kind (kind, label, config_model, configs, load, trust_items, "
                "form_fields: flowcall/tools/sources/base.py); fix or uninstall that package"
            )
        if name in RESERVED or not SOURCE_KIND_RE.fullmatch(name) or name in found:
            raise ConfigError(
                f"the package {origin.package} offers the tool source kind {name!r}, which cannot be used "
                "here (reserved, taken by another package, or not lowercase letters, digits, - and _); "
                "fix or uninstall that package"
            )
        found[name] = (kind, origin)
    return found


def kind_of(name: str, flow_name: str | None = None) -> ToolSourceKind:
    """The kind called `name`; ConfigError, saying what to do, when nothing here provides it."""
    known = kinds()
    if name not in known:
        who = f"flow {flow_name!r}" if flow_name else "this source"
        raise ConfigError(
            f"{who} uses the tool source kind {name!r}, which no installed package provides here; "
            f"install it or remove the source (kinds here: {', '.join(known)})"
        )
    return known[name]


def validate_sources(flow: Flow) -> None:
    """Each entry of `flow.sources` checked with its kind's config model; ConfigError naming the
    kind, the source and the field (an unknown kind: see `kind_of`). MCP servers and HTTP sources
    are checked with the flow itself."""
    for name, entries in flow.sources.items():
        kind = kind_of(name, flow.name)
        for entry in entries:
            try:
                kind.config_model.model_validate(entry)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'source'}: {e['msg']}" for e in exc.errors()
                )
                raise ConfigError(
                    f"flow {flow.name!r}: the {kind.label} {entry.get('name')!r} ({name}) is not valid: "
                    f"{problems}; fix it in the flow's sources"
                ) from None


def attached(flow: Flow) -> list[tuple[ToolSourceKind, BaseModel]]:
    """The sources whose tools the flow attaches, with their kinds: only these are ever started
    or loaded (or asked for)."""
    validate_sources(flow)
    found = []
    for kind in kinds().values():
        for config in kind.configs(flow):
            prefix = f"{config.name}/{kind.kind}/"  # type: ignore[attr-defined]
            if any(ref.startswith(prefix) for ref in flow.tools):
                found.append((kind, config))
    return found


def _package_item(kind: ToolSourceKind) -> TrustItem | None:
    origin = installed_kinds().get(kind.kind)
    return consent.package_source_items({kind.kind: origin})[0] if origin else None


def source_trust_items(flow: Flow) -> list[TrustItem]:
    """What the flow's attached sources would start or reach, as their kinds say; a kind of an
    installed package adds the grant to use that package's code. Consent decides on them."""
    items: list[TrustItem] = []
    for kind, config in attached(flow):
        package = _package_item(kind)
        items += ([package] if package else []) + kind.trust_items(config)
    return items


def fetched_trust_items(flow: Flow) -> list[TrustItem]:
    """What only fetching tells (an OpenAPI URL's content): ask for it once the rest is granted."""
    items: list[TrustItem] = []
    for kind, config in attached(flow):
        fetched = getattr(kind, "fetched_items", None)
        items += fetched(config) if fetched else []
    return items


def trust_items(flow: Flow, installed: dict[str, PackageOrigin] | None = None) -> list[TrustItem]:
    """consent.trust_items with the flow's sources' items: everything the flow needs granted."""
    return consent.trust_items(flow, installed, sources=source_trust_items(flow))


def ungranted(
    flow: Flow, grants: Grants, installed: dict[str, PackageOrigin] | None = None
) -> list[TrustItem]:
    return consent.ungranted(flow, grants, installed, sources=source_trust_items(flow))


def flow_field(kind: ToolSourceKind) -> str:
    """Where a flow lists this kind's sources: a Flow field of its own ("mcp_servers") or
    "sources", under the kind's name."""
    return getattr(kind, "flow_field", "sources")


def with_source(flow: Flow, kind_name: str, config: BaseModel, refs: Iterable[str] = ()) -> Flow:
    """The flow with `config` among its sources of that kind (replacing one of the same name),
    and `refs` added to its tools."""
    kind, data = kind_of(kind_name), config.model_dump(mode="json", exclude_none=True)
    field, dumped = flow_field(kind), flow.model_dump(mode="json")
    listed = dumped.get(field, {}).get(kind_name, []) if field == "sources" else dumped.get(field, [])
    listed = [entry for entry in listed if entry.get("name") != data["name"]] + [data]
    if field == "sources":
        dumped["sources"] = {**dumped.get("sources", {}), kind_name: listed}
    else:
        dumped[field] = listed
    dumped["tools"] = [*flow.tools, *(ref for ref in refs if ref not in flow.tools)]
    return Flow.model_validate(dumped)


def probe_flow(kind_name: str, config: BaseModel) -> Flow:
    """A flow that attaches only `config`: what a run of it would need granted is what loading
    the source needs."""
    name = config.name  # type: ignore[attr-defined]
    return with_source(Flow(name="studio-source"), kind_name, config, [f"{name}/{kind_name}/*"])


def call_timeout_s(kind: ToolSourceKind, config: BaseModel) -> float:
    """How long "Try it" waits for one call of the source's tools."""
    timeout = getattr(kind, "call_timeout_s", None)
    return float(timeout(config)) if timeout else DEFAULT_CALL_TIMEOUT_S


def describe(kind: ToolSourceKind, config: BaseModel) -> str:
    said = getattr(kind, "describe", None)
    return said(config) if said else str(getattr(config, "name", ""))


def load_source(kind: ToolSourceKind, config: BaseModel, context: LoadContext) -> list[Tool]:
    """The source's tools, loaded through its kind. ConfigError naming the source when it cannot
    be loaded; with grants, a kind of an installed package loads only if its package is granted."""
    package = _package_item(kind) if context.grants is not None else None
    if package is not None and package.key not in context.grants.granted_keys():  # type: ignore[union-attr]
        raise ConfigError(
            f"the {kind.label} '{config.name}' was not loaded: {package.summary}, and that is not granted "  # type: ignore[attr-defined]
            "(or the package changed since). Nothing was loaded. Read the flow, then grant it: "
            "`flowcall trust` with the flow, or the consent panel in the studio"
        )
    try:
        return kind.load(config, context)
    except ConfigError:
        raise
    except Exception as exc:  # a kind's own failure, said with the source it concerns
        raise ConfigError(f"the {kind.label} '{config.name}' could not be loaded: {exc!r}") from exc  # type: ignore[attr-defined]


@contextmanager
def run_registry(
    registry: ToolRegistry, flow: Flow, grants: Grants | None = None, services: dict[str, Any] | None = None
) -> Iterator[ToolRegistry]:
    """The registry plus the tools of the flow's attached sources, while the run lasts. With
    `grants`, an OpenAPI document loads only if the bytes read are ones a person granted, a stdio
    server starts only if what it would run, resolved at its start, is granted, and a kind of an
    installed package loads only if its package is granted. `services` go to every kind
    (LoadContext.services)."""
    with ExitStack() as stack:
        extra: list[Tool] = []
        context = LoadContext(stack, grants, services or {})
        try:
            for kind, config in attached(flow):
                extra.extend(load_source(kind, config, context))
        except ConfigError as exc:
            raise FlowCallError(ErrorCode.TOOL_ERROR, str(exc)) from exc
        yield registry.extended(extra)
