"""How a model is made to call tools: native, schema, prompt, router, and auto over them."""

from __future__ import annotations

from flowcall.calling.auto import AutoWay, chain_reason, default_chain
from flowcall.calling.base import CallingWay
from flowcall.calling.native import NativeWay
from flowcall.calling.prompt import PromptWay
from flowcall.calling.router import RouterWay, Rule
from flowcall.calling.schema import SchemaWay
from flowcall.errors import ConfigError
from flowcall.providers.base import Capabilities

WAY_NAMES = ("auto", "native", "schema", "prompt", "router")


def make_way(name: str, capabilities: Capabilities, rules: list[Rule] | None = None) -> CallingWay:
    if name == "auto":
        return AutoWay([make_way(n, capabilities, rules) for n in default_chain(capabilities)], chain_reason(capabilities))
    if name == "native":
        return NativeWay()
    if name == "schema":
        return SchemaWay()
    if name == "prompt":
        return PromptWay()
    if name == "router":
        return RouterWay(rules)
    raise ConfigError(f"calling way '{name}' does not exist; use one of {', '.join(WAY_NAMES)}")
