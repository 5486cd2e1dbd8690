"""A tool: name, namespaced version, description, JSON Schema, annotations, callable."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from flowcall.core.messages import ToolSpec
from flowcall.trust.packages import PackageOrigin

# "python", "mcp", "http", "flow", or the kind of an installed package (tools/sources/base.py)
ToolSource = str


@dataclass(frozen=True)
class ToolAnnotations:
    """Hints for the host (MCP's names): is it safe to run without asking a person?"""

    read_only: bool = False
    destructive: bool = False
    open_world: bool = False


@dataclass
class RunContext:
    """Hidden context: injected by the engine, never shown to the model.

    A tool parameter annotated with this type is left out of the tool's JSON Schema.
    Tools keep large data here as artifacts; the model only sees a short summary.
    """

    run_id: str
    artifacts: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    # The run's own database (a flowcall.store.Store; the engine's sink), so a tool that keeps
    # data writes where the run is recorded. None, or another sink, when there is no such run
    # (a tool tried on the Plugins page, a test): such a tool falls back to the configured store.
    store: Any = None
    # the call being run, for a tool that starts something of its own per call (a sub-flow's
    # run, whose id comes from it); None outside a call
    call_id: str | None = None


@dataclass
class Tool:
    name: str  # what the model calls: get_weather
    version: str  # namespaced, versioned id: weather/v1/get_weather
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments
    func: Callable[..., Any]
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    context_param: str | None = None  # the hidden RunContext parameter, if any
    timeout_s: float | None = None  # overrides the flow's tool timeout
    source: ToolSource = "python"
    trusted: bool = False  # for MCP tools: the flow marked the server trusted (no approval needed)
    # environment variables whose values the tool sends (an HTTP source's $VAR headers): redacted
    # from its errors before they are recorded (providers.base.redact_secrets)
    secret_env: tuple[str, ...] = ()
    package: PackageOrigin | None = None  # a tool of an installed package: which (consent asks for it)

    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            read_only=self.annotations.read_only,
        )

    def invoke(self, arguments: dict[str, Any], context: RunContext) -> Any:
        kwargs = dict(arguments)
        if self.context_param:
            kwargs[self.context_param] = context
        return self.func(**kwargs)
