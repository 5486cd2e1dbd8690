"""A run's steps as they happen: numbered, stamped with the run's trace id, handed to the sink.

The loop state goes to the sink with the steps it belongs to: `mark` keeps a changed state to
be committed with the next step, `record_round` commits a tool round's steps with the state
after it, `save` commits a state alone (before tools start)."""

from __future__ import annotations

from typing import Any

from flowcall.core.steps import Run, RunCancelled, Step, StepCallback, StepKind, StepSink
from flowcall.engine.loop_state import LoopState


class Recorder:
    def __init__(self, run: Run, sink: StepSink, callback: StepCallback | None):
        self.run, self.sink, self.callback = run, sink, callback
        self._state: dict[str, Any] | None = None

    def _step(self, step_kind: StepKind, fields: dict[str, Any]) -> Step:
        step = Step(
            run_id=self.run.id,
            seq=len(self.run.steps) + 1,
            kind=step_kind,
            trace_id=self.run.trace_id,
            **fields,
        )
        self.run.steps.append(step)
        return step

    def record(self, step_kind: StepKind, **fields: Any) -> Step:
        step = self._step(step_kind, fields)
        state, self._state = self._state, None
        self.sink.steps_recorded([step], state)
        if self.callback:
            self.callback(step)
        return step

    def record_last(self, step_kind: StepKind, **fields: Any) -> None:
        """A run's last step (its error): a run cancelled meanwhile is over either way, and
        run_finished leaves it cancelled."""
        try:
            self.record(step_kind, **fields)
        except RunCancelled:
            pass

    def record_round(self, steps: list[tuple[StepKind, dict[str, Any]]], state: LoopState) -> None:
        built = [self._step(kind, fields) for kind, fields in steps]
        self._state = None
        self.sink.steps_recorded(built, state.checkpoint())
        for step in built:
            if self.callback:
                self.callback(step)

    def mark(self, state: LoopState) -> None:
        self._state = state.checkpoint()

    def save(self, state: LoopState) -> None:
        self._state = None
        self.sink.state_saved(self.run, state.checkpoint())
