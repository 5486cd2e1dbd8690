"""The "flow" kind: another flow saved here, as one tool of a flow (a sub-flow).

A flow lists it in `sources.flow`, pinned to a stored version:
`{"name": "commute", "flow": "commute-weather", "version": 2}`, and attaches it as
`commute/flow/commute`. The model sees a tool named after the source's `name` that takes a
`question`; calling it runs that flow version on the question, as a run of its own recorded
in the same store and linked to the call (engine/subflows.py), and its answer is the result.

A flow stored here starts and reaches nothing by itself, so the kind asks consent for nothing
(`trust_items`); what the sub-flow's own tools start or reach is asked for with the parent
(service.require_trust reads the sub-flows). Saving a flow checks its chain of sub-flows
(`check_chain`): each must be stored here, and none may lead back to a flow above it.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flowcall.core.errors import ConfigError
from flowcall.core.spec import SOURCE_NAME, Flow
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.sources.base import FormField, LoadContext
from flowcall.trust.consent import TrustItem

RUN_FLOW = "run_flow"  # the service a run hands down (LoadContext.services): a FlowRunner
DESCRIBE_FLOW = "describe_flow"  # a listing's (the studio's): (flow, version) -> its description
CHAIN_LIMIT = 20  # flows on one chain of sub-flows that saving follows, at most


class FlowToolConfig(BaseModel):
    """One sub-flow of a flow, as written in its `sources.flow`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SOURCE_NAME, description="The tool's name, as the model sees it.")
    flow: str = Field(min_length=1, max_length=120, description="The saved flow it runs.")
    version: int = Field(ge=1, description="Which stored version of that flow: pinned.")
    description: str | None = Field(
        default=None, max_length=4000, description="What the model reads; default: the flow's own."
    )

    @property
    def ref(self) -> str:
        return f"{self.name}/flow/{self.name}"


class FlowRunner(Protocol):
    """What a run hands down to run a sub-flow for one call (engine/subflows.Runner)."""

    def __call__(self, flow: str, version: int, question: str, context: RunContext) -> Any: ...

    def description(self, flow: str, version: int) -> str: ...


QUESTION = {
    "type": "object",
    "properties": {"question": {"type": "string", "description": "What to ask the flow, in full."}},
    "required": ["question"],
    "additionalProperties": False,
}


def _no_runner(flow: str) -> Callable[..., Any]:
    def refuse(question: str, context: RunContext) -> Any:
        raise ConfigError(
            f"this tool runs the flow {flow!r}, which only a run of its flow can do; "
            "run the flow instead of calling the tool alone"
        )

    return refuse


class FlowKind:
    kind = "flow"
    label = "Sub-flow"
    config_model: type[BaseModel] = FlowToolConfig

    def configs(self, flow: Flow) -> list[BaseModel]:
        return list(sub_flows(flow))

    def load(self, config: BaseModel, context: LoadContext) -> list[Tool]:
        assert isinstance(config, FlowToolConfig)
        runner: FlowRunner | None = context.services.get(RUN_FLOW)
        describe = context.services.get(DESCRIBE_FLOW) or (runner.description if runner else None)
        description = config.description or (describe(config.flow, config.version) if describe else "")
        if runner is not None:

            def call(question: str, context: RunContext) -> Any:
                return runner(config.flow, config.version, question, context)

        else:  # a listing: the tool as the model would see it
            call = _no_runner(config.flow)
        return [
            Tool(
                name=config.name,
                version=config.ref,
                description=description
                or f"Asks the flow {config.flow!r} a question and returns its answer.",
                parameters=QUESTION,
                func=call,
                context_param="context",
                source=self.kind,
            )
        ]

    def trust_items(self, config: BaseModel) -> list[TrustItem]:
        return []  # a stored flow reaches nothing itself; its own sources are asked for with the parent

    def form_fields(self) -> dict[str, FormField]:
        return {
            "name": FormField(
                "Name", "the tool's name as the model sees it; attached as <name>/flow/<name>", "commute"
            ),
            "flow": FormField("Flow", "a flow saved here", "commute-weather"),
            "version": FormField("Version", "the stored version it runs (pinned)", "1"),
            "description": FormField(
                "Description", "what the model reads; empty: the flow's own description"
            ),
        }

    def call_timeout_s(self, config: BaseModel) -> float:
        return 600.0  # a sub-flow runs in the engine's thread, bounded by its own rounds and tools

    def describe(self, config: BaseModel) -> str:
        assert isinstance(config, FlowToolConfig)
        return f"flow {config.flow} v{config.version}"


KIND = FlowKind()


def sub_flows(flow: Flow) -> list[FlowToolConfig]:
    """The flow's sub-flows; ConfigError naming the entry that is not a valid one."""
    found = []
    for entry in flow.sources.get(KIND.kind, []):
        try:
            found.append(FlowToolConfig.model_validate(entry))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(entry)"
            raise ConfigError(
                f"flow {flow.name!r}: the sub-flow {entry.get('name')!r} is not valid at {where}: "
                f'{first["msg"]} (write it as {{"name": ..., "flow": ..., "version": N}})'
            ) from None
    return found


def check_chain(flow: Flow, read: Callable[[str, int], Flow | None]) -> None:
    """ConfigError unless every sub-flow of `flow`, at any depth, is stored here (`read` gives a
    stored version, or None) and none leads back to a flow on its own chain (A calls B calls
    A, or A calls A, in any version): such a flow would call itself until stopped."""

    def walk(current: Flow, chain: tuple[str, ...]) -> None:
        for config in sub_flows(current):
            path = (*chain, config.flow)
            if config.flow in chain:
                raise ConfigError(
                    f"flow {chain[0]!r} would call itself through its sub-flows: {' -> '.join(path)}; "
                    f"a flow cannot be its own sub-flow, not even an earlier version of it: remove the "
                    f"sub-flow {config.name!r} from {current.name!r}"
                )
            if len(path) > CHAIN_LIMIT:
                raise ConfigError(f"the chain of sub-flows {' -> '.join(path)} is longer than {CHAIN_LIMIT}")
            child = read(config.flow, config.version)
            if child is None:
                raise ConfigError(
                    f"flow {current.name!r} uses flow {config.flow!r} version {config.version} as its "
                    f"sub-flow {config.name!r}, and that version is not stored here; import that flow "
                    "first (`flowcall flows import FILE`), or point the sub-flow at a stored version"
                )
            walk(child, path)

    walk(flow, (flow.name,))
