"""`auto`: the provider's preferred ways in order, falling back to the next when one fails.

A way fails for a model when the provider refuses it (a non-transient error, e.g. a server
without tools support) or when the reply cannot be read at all. The fallback holds for the
rest of the run, and every step after it says why in its note.
"""

from __future__ import annotations

from flowcall.calling.base import CallingWay, ModelCall
from flowcall.errors import ProviderError
from flowcall.messages import ModelRequest, ModelTurn
from flowcall.providers.base import Capabilities


def default_chain(capabilities: Capabilities) -> list[str]:
    if capabilities.preferred_ways:
        return list(capabilities.preferred_ways)
    chain = ["native"] if capabilities.native_tools else []
    if capabilities.json_schema_output or capabilities.grammar:
        chain.append("schema")
    return chain + ["prompt"]


class AutoWay:
    name = "auto"

    def __init__(self, chain: list[CallingWay]):
        self.chain = chain
        self.current = 0
        self.fallbacks: list[str] = []

    def decide(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        while True:
            way = self.chain[self.current]
            last = self.current == len(self.chain) - 1

            def noted(way_name: str, sent: ModelRequest, interpret=None, note: str | None = None) -> ModelTurn:
                why = "; ".join(filter(None, [note, *(f"after fallback: {f}" for f in self.fallbacks)]))
                return call(way_name, sent, interpret, why or None)

            try:
                turn = way.decide(request, capabilities, noted)
            except ProviderError as exc:
                if exc.transient or last:
                    raise
                self._fall_back(f"{way.name} refused by the provider ({exc.code}: {exc.message[:120]})")
                continue
            if turn.parse_errors and not turn.tool_calls and not last:
                self._fall_back(f"{way.name} reply unreadable ({turn.parse_errors[0][:120]})")
                continue
            return turn

    def _fall_back(self, reason: str) -> None:
        nxt = self.chain[self.current + 1].name
        self.fallbacks.append(f"{reason} -> {nxt}")
        self.current += 1
