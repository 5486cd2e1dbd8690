"""`auto`: the provider's preferred ways in order, falling back to the next when one fails.

The order is the one this model does best with: for an embedded model, as measured for it
(embedded_models.py); for a remote model, what its probe found (probe.py), else what
its API declares. Every step `auto` makes says which way leads and why.

A way fails for a model when the provider refuses it (a non-transient error, e.g. a server
without tools support) or when the reply cannot be read at all. The fallback holds for the
rest of the run, and every step after it says why in its note.

Before the chain, a scoring provider with a `veto_margin` is asked whether any tool fits the
request at all (relevance.py); if none does, every way is asked for an answer without tools.
This lets a way that calls well but cannot keep quiet lead the chain. The schema way asks the
same question with its own, higher bar, so leading the chain it is not asked twice.
"""

from __future__ import annotations

from flowcall.calling.base import CallingWay, ModelCall
from flowcall.calling.doc_values import with_unmade_note
from flowcall.calling.relevance import has_tool_results, reading, score_tools
from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.errors import ProviderError
from flowcall.core.messages import GateReading, ModelRequest, ModelTurn
from flowcall.providers.base import Capabilities


def default_chain(capabilities: Capabilities, tuning: DecisionTuning) -> list[str]:
    if tuning.preferred_ways:
        return list(tuning.preferred_ways)
    chain = ["native"] if capabilities.native_tools else []
    if capabilities.json_schema_output or capabilities.grammar:
        chain.append("schema")
    return chain + ["prompt"]


def chain_reason(capabilities: Capabilities, tuning: DecisionTuning) -> str:
    """Why the chain starts where it does, for each step's note."""
    if tuning.ways_reason:
        return tuning.ways_reason
    if capabilities.native_tools:
        return "the model's API takes tool definitions (not probed; `flowcall profiles probe` measures it)"
    if capabilities.json_schema_output or capabilities.grammar:
        return "the model's API has no tool calls but can hold a reply to a JSON schema"
    return "the model's API has neither tool calls nor JSON-schema output"


class AutoWay:
    name = "auto"

    def __init__(self, chain: list[CallingWay], reason: str = "", tuning: DecisionTuning | None = None):
        self.chain = chain
        self.reason = reason
        self.tuning = tuning or DecisionTuning()
        self.current = 0
        self.fallbacks: list[str] = []

    def decide(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelTurn:
        self.gate: GateReading | None = None
        if self.chain[0].name != "schema":
            request = self._veto(request, capabilities, call)
        chosen = f"auto: {self.chain[0].name} first, {self.reason}" if self.reason else None
        while True:
            way = self.chain[self.current]
            last = self.current == len(self.chain) - 1

            def noted(
                way_name: str, sent: ModelRequest, interpret=None, note: str | None = None
            ) -> ModelTurn:
                why = "; ".join(
                    filter(None, [note, *(f"after fallback: {f}" for f in self.fallbacks), chosen])
                )
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
            return turn.model_copy(update={"gate": self.gate}) if self.gate and not turn.gate else turn

    def _veto(self, request: ModelRequest, capabilities: Capabilities, call: ModelCall) -> ModelRequest:
        """With a scoring provider and a veto_margin: if no tool fits the request at all, the
        ways are asked for an answer without tools (tool_choice none), whatever they would do,
        told that no tool ran, so the answer claims nothing was looked up or done."""
        veto = self.tuning.veto_margin
        if (
            veto is None
            or not capabilities.scoring
            or request.tool_choice != "auto"
            or not request.tools
            or has_tool_results(request.messages)
        ):
            return request
        scored = score_tools(request, call, "auto", self.tuning.relevance_with_examples, veto)
        self.gate = reading(scored, veto)
        if scored and scored[0][0] > veto:
            return request
        return request.model_copy(
            update={"tool_choice": "none", "messages": with_unmade_note(request.messages)}
        )

    def _fall_back(self, reason: str) -> None:
        nxt = self.chain[self.current + 1].name
        self.fallbacks.append(f"{reason} -> {nxt}")
        self.current += 1
