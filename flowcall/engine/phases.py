"""What each phase of a run returns (engine.py): the loop reads these instead of exceptions.

A round is `_decide_round` (Answered | Retry | CallsDecided), `_approve` (Approved | Paused)
and `_execute_round` (which commits its steps and returns nothing); a run ends Finished or
Paused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flowcall.core.messages import ToolCall
from flowcall.engine.loop_state import LoopState
from flowcall.tools.execute import CallOutcome


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
