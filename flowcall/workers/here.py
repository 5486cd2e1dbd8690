"""The door (service/door.py) that runs a run now, in the caller's own thread: the CLI's
`flowcall run`, and each HTTP API request's run on its thread. What happens to a run handed
over is what a worker does with it (work.work_on), so a run goes the same way wherever it goes;
`on_step` and `approver` let the caller show it as it goes and answer for a person."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from flowcall.core.steps import Run, StepCallback
from flowcall.workers.work import Later, work_on

if TYPE_CHECKING:
    from flowcall.engine.approval import Approver
    from flowcall.service.front import FlowCall


class HereDoor:
    """Runs handed over are run (or resumed) at once, one after the other, before hand_over
    returns; `ended` keeps each as it ended (or paused for a person)."""

    name = "this process"
    runs_here = True

    def __init__(
        self, service: FlowCall, *, on_step: StepCallback | None = None, approver: Approver | None = None
    ) -> None:
        self.service, self.on_step, self.approver = service, on_step, approver
        self.ended: dict[str, Run] = {}

    def ready(self) -> None:
        """Always: a run that can be recorded here can run here."""

    def hand_over(self, run_ids: Sequence[str]) -> dict[str, Run]:
        for run_id in run_ids:
            done = work_on(self.service, run_id, approver=self.approver, on_step=self.on_step, who=self.name)
            while isinstance(done, Later):  # another process holds it: wait for its lease
                time.sleep(done.seconds)
                done = work_on(
                    self.service, run_id, approver=self.approver, on_step=self.on_step, who=self.name
                )
            self.ended[run_id] = done
        return {run_id: self.ended[run_id] for run_id in run_ids}

    def continue_with(self, run_id: str, approver: Approver | None) -> None:
        """Go on now with a run that waits for a person (or was interrupted), with `approver`."""
        self.ended[run_id] = self.service.resume(run_id, approver=approver, on_step=self.on_step)
