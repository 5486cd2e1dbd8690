"""What a run's phases share and what each returns (loop.py): the loop reads these instead of
exceptions.

A run starts from a `Start` and its phases share one `Scope`. A round is `_decide_round`
(Answered | Retry | CallsDecided), `_approve` (Approved | Paused) and `_execute_round` (which
commits its steps and returns nothing); a run ends Finished or Paused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flowcall.core.messages import ToolCall
from flowcall.core.spec import Flow
from flowcall.core.steps import Run
from flowcall.engine.approval import Approver
from flowcall.engine.loop_state import LoopState
from flowcall.engine.model_calls import ModelCaller
from flowcall.engine.recorder import Recorder
from flowcall.providers.base import Provider, ProviderFactory
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.execute import CallOutcome


@dataclass
class Models:
    """A run's providers, built once: before anything is recorded where they can be
    (Engine._models_before_run in loop.py), else inside the run."""

    decider: Provider
    polisher: Provider | None

    @classmethod
    def build(cls, flow: Flow, provider_for: ProviderFactory, *, decision_only: bool = False) -> Models:
        polish_model = flow.polish if not decision_only else None
        return cls(
            provider_for(flow.decision), provider_for(polish_model) if polish_model is not None else None
        )


@dataclass
class Start:
    """What a run starts with: its flow and record, who approves, the state it goes on from
    (None: a new one from the question), and its providers if they were built before it."""

    flow: Flow
    run: Run
    rec: Recorder
    approver: Approver | None
    state: LoopState | None = None
    models: Models | None = None


@dataclass
class Scope:
    """Everything one run's phases share."""

    flow: Flow
    run: Run
    rec: Recorder
    tools: dict[str, Tool]
    decider: ModelCaller
    polisher: ModelCaller | None
    context: RunContext
    state: LoopState
    approver: Approver | None
    changed: frozenset[str]  # tools whose definition changed since accepted: their calls wait for a person
    maybe_ran: frozenset[str]  # calls started before an interruption whose results were never committed


@dataclass
class Answered:
    """The decision model answered (or only repeated answered calls): the loop ends."""

    text: str | None


@dataclass
class Retry:
    """The model's call could not be read; it is told why and decides again."""

    problem: str


@dataclass
class CallsDecided:
    calls: list[ToolCall]
    repairs: dict[str, dict]


@dataclass
class Approved:
    """The calls as they will run (edited ones with the person's arguments) and the denied
    ones' outcomes by call id."""

    calls: list[ToolCall]
    repairs: dict[str, dict]
    settled: dict[str, CallOutcome]


@dataclass
class Paused:
    """A call waits for a person; the run stops here and keeps its state."""

    state: LoopState


@dataclass
class Finished:
    answer: Any
