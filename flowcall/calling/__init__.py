"""How a model is made to call tools: native, schema, prompt, router, and auto over them."""

from __future__ import annotations

from flowcall.calling.auto import AutoWay, chain_reason, default_chain
from flowcall.calling.base import CallingWay
from flowcall.calling.native import NativeWay
from flowcall.calling.prompt import PromptWay
from flowcall.calling.router import RouterWay, Rule
from flowcall.calling.schema import SchemaWay
from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.errors import ConfigError
from flowcall.providers.base import Capabilities

WAY_NAMES = ("auto", "native", "schema", "prompt", "router")


def make_way(
    name: str,
    capabilities: Capabilities,
    rules: list[Rule] | None = None,
    tuning: DecisionTuning | None = None,
) -> CallingWay:
    """The way `name` for a model whose endpoint has these capabilities and whose decisions are
    tuned so (the provider's `tuning`; None: not tuned, the defaults)."""
    tuning = tuning or DecisionTuning()
    if name == "auto":
        chain = [make_way(n, capabilities, rules, tuning) for n in default_chain(capabilities, tuning)]
        return AutoWay(chain, chain_reason(capabilities, tuning), tuning)
    if name == "native":
        return NativeWay()
    if name == "schema":
        return SchemaWay(tuning)
    if name == "prompt":
        return PromptWay()
    if name == "router":
        return RouterWay(rules, tuning)
    raise ConfigError(f"calling way '{name}' does not exist; use one of {', '.join(WAY_NAMES)}")
