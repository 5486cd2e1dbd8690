"""A tool source kind: where a flow's tools come from, besides the plugins every flow can attach.

Each kind is one module under flowcall/tools/sources/ (mcp, openapi, flow, ...) holding one object
that fits `ToolSourceKind`; the spec, consent, "Try it", the service and the studio loop over the
kinds (`flowcall.tools.sources.kinds()`), never over a list of names written elsewhere. An
installed package adds a kind through the entry-point group `flowcall.tool_sources`.

A source is one entry of a kind in a flow (an MCP server, an OpenAPI document, a sub-flow). Its
tools are referenced as `<source name>/<kind>/<tool>`, so a reference says which source serves
it. Consent decides everything a source starts or reaches: a kind only lists the items to ask
for (`trust_items`) and checks the grants again where it starts or reads something (`load`).

Besides the protocol's members, a kind may have these, each with a default where it has not:
- `call_timeout_s(config) -> float`: how long "Try it" waits for one call (default 30 s);
- `fetched_items(config) -> list[TrustItem]`: what only fetching can tell (an OpenAPI URL's
  content), asked once everything else the flow reaches is granted (default none);
- `describe(config) -> str`: the source in a few words, for people (default its name);
- `flow_field: str`: the Flow field listing its sources (default "sources", under the kind's name).
`load` raises ConfigError, naming the source and why, for a source that cannot be loaded; a run
fails with that sentence (TOOL_ERROR).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from flowcall.core.spec import Flow
from flowcall.tools.base import Tool
from flowcall.trust.consent import Grants, TrustItem

ENTRY_POINT_GROUP = "flowcall.tool_sources"
DEFAULT_CALL_TIMEOUT_S = 30.0


@dataclass
class LoadContext:
    """What a kind may use while it loads a run's tools.

    `stack` holds what the run keeps open (a started server) and closes it when the run ends;
    `grants` are consent's, checked again where something is started or read (None: a listing
    the person asked for by hand, already granted); `services` are what the layer above hands
    down for kinds that need it (the sub-flow kind gets a way to run another flow), by name."""

    stack: ExitStack
    grants: Grants | None = None
    services: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FormField:
    """How the studio shows one field of a kind's config: its label, a hint, and an example."""

    label: str
    help: str = ""
    placeholder: str = ""


@runtime_checkable
class ToolSourceKind(Protocol):
    kind: str  # the middle part of a tool reference: "mcp" in time/mcp/now
    label: str  # for people: "MCP server"
    config_model: type[BaseModel]  # one source of this kind, as written in a flow; it has a `name`

    def configs(self, flow: Flow) -> list[BaseModel]:
        """The sources of this kind the flow lists (attached or not)."""
        ...

    def load(self, config: BaseModel, context: LoadContext) -> list[Tool]:
        """The source's tools for a run (or a listing): started, read or built now."""
        ...

    def trust_items(self, config: BaseModel) -> list[TrustItem]:
        """What this source would start or reach that a person must grant first (maybe none)."""
        ...

    def form_fields(self) -> dict[str, FormField]:
        """The config's fields as the studio's form shows them, in order."""
        ...
