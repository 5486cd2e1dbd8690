"""What a worker does with a run id, whatever state the run is in: the whole job of a task
(worker.py), without Celery, so it is tested like any function.

A task may come twice (redelivered after its worker died, or while a slow run still runs), so
every case is safe to meet again:

    queued       claim it and run it (service.execute; a dataset item's own tools: decide only)
    interrupted  its worker died: claim it and go on from its last committed step
                 (service.resume with nobody to ask: a non-read-only call that was started but
                 never committed waits for a person instead of running twice)
    running      another live process has it: come back later (Later)
    ended, or waiting for a person
                 nothing to run

and afterwards a run of an experiment is scored, and the experiment finished when it was its
last item (experiments.score_run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from flowcall.core import config
from flowcall.core.errors import ConfigError
from flowcall.core.steps import Run, RunStatus, StepCallback
from flowcall.eval import experiments
from flowcall.store import queued_runs
from flowcall.store.ownership import lease_seconds, this_process

if TYPE_CHECKING:
    from flowcall.engine.approval import Approver
    from flowcall.service.front import FlowCall

_TO_RUN = (RunStatus.QUEUED, RunStatus.INTERRUPTED)


@dataclass(frozen=True)
class Later:
    """The run is another live process's: ask again in `seconds` (its lease may run out)."""

    seconds: float
    why: str


def work_on(
    service: FlowCall,
    run_id: str,
    *,
    approver: Approver | None = None,
    on_step: StepCallback | None = None,
    who: str = "a worker",
) -> Run | Later:
    """Run, resume or leave the run, then score it if it belongs to an experiment. `approver`:
    who decides a call that needs a person (None: the run waits for one); `on_step` hears of
    each step as it commits (a caller that shows the run as it goes); `who` runs it, in words,
    for the reason a run that could not run here fails with."""
    run = service.store.get_run(run_id)
    if run.status == RunStatus.RUNNING and run.owner == this_process():
        # an earlier attempt of this task, in this very process, lost the database and gave up
        queued_runs.disown(service.store, run.id)
        run = service.store.get_run(run_id)
    if run.status == RunStatus.RUNNING:
        return _later(run)
    found = experiments.item_of(service, run.id)
    if run.status in _TO_RUN:
        try:
            run = _go_on(service, run, found[1].tools if found else None, approver, on_step)
        except ConfigError as exc:
            now = service.store.get_run(run_id)
            if now.status == run.status and now.owner == run.owner:
                # not a lost race for the claim: something this worker lacks (a key, a grant)
                queued_runs.give_up(service.store, run, f"{who} could not run it: {exc}")
                now = service.store.get_run(run_id)
            if now.status == RunStatus.RUNNING:
                return _later(now)  # another worker claimed it first
            if now.status in _TO_RUN:
                raise
            run = now
    experiments.score_run(service, run, found)
    return run


def _go_on(
    service: FlowCall, run: Run, tools: list | None, approver: Approver | None, on_step: StepCallback | None
) -> Run:
    if run.status == RunStatus.QUEUED:
        specs = [tool.spec() for tool in tools] if tools else None
        return service.execute(run.id, tools=specs, approver=approver, on_step=on_step)
    if tools:  # a decision-only run (the item's own tools) has no state to go on from: ask again
        raise ConfigError(
            f"run {run.id} asked its decision model only and was interrupted; it is not resumed "
            "(run the experiment again)"
        )
    return service.resume(run.id, approver=approver, on_step=on_step)


def _later(run: Run) -> Later:
    """Again in a third of a lease (when its owner may have renewed it or let it run out), and
    well within the redelivery time: a task held longer would be handed out again meanwhile."""
    return Later(
        min(10.0, lease_seconds() / 3, config.redelivery_s() / 2), f"run {run.id} is running in {run.owner}"
    )
