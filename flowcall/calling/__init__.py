"""How a model is made to call tools: native, prompt (schema and router: a later issue), auto."""

from __future__ import annotations

from flowcall.calling.base import CallingWay
from flowcall.calling.native import NativeWay
from flowcall.calling.prompt import PromptWay
from flowcall.errors import ConfigError
from flowcall.providers.base import Capabilities

WAYS: dict[str, type] = {"native": NativeWay, "prompt": PromptWay}


def choose_way(name: str, capabilities: Capabilities) -> CallingWay:
    """`auto` takes native function calling where the provider has it, else the prompt way."""
    if name == "auto":
        return NativeWay() if capabilities.native_tools else PromptWay()
    if name not in WAYS:
        raise ConfigError(
            f"calling way '{name}' is not available yet; use one of auto, {', '.join(WAYS)}"
        )
    return WAYS[name]()
