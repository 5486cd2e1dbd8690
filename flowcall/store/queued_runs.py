"""What a worker needs of the store beyond the StepSink: giving up a run it cannot run here,
and letting go of a run an earlier attempt in this very process held. Kept beside the Store,
like profiles.py."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from flowcall.core.steps import Run, RunStatus, utcnow
from flowcall.store.models import RunRow
from flowcall.store.ownership import this_process
from flowcall.store.repository import Store

_RUNNING = str(RunStatus.RUNNING)


def give_up(store: Store, run: Run, error: str) -> bool:
    """End a queued or interrupted run as failed, with `error` (a setting this worker lacks, a
    flow nobody granted): better than leaving it to wait for ever. Only if it is still as the
    caller read it; False when someone else moved it meanwhile."""
    if run.status == RunStatus.QUEUED:
        unchanged = (RunRow.status == str(RunStatus.QUEUED),)
    elif run.status == RunStatus.INTERRUPTED:
        owner = RunRow.owner.is_(None) if run.owner is None else RunRow.owner == run.owner
        unchanged = (RunRow.status == _RUNNING, owner)
    else:
        return False
    with Session(store.engine) as s, s.begin():
        return (
            s.execute(
                update(RunRow)
                .where(RunRow.id == run.id, *unchanged)
                .values(
                    status=str(RunStatus.FAILED),
                    error=error[:2000],
                    ended_at=utcnow(),
                    checkpoint=None,
                    lease_until=None,
                )
            ).rowcount
            == 1
        )


def disown(store: Store, run_id: str) -> bool:
    """Let go of a `running` run that this process owns but no longer runs (an earlier attempt
    of its task lost the database and gave up): it reads as interrupted, and can be resumed."""
    with Session(store.engine) as s, s.begin():
        return (
            s.execute(
                update(RunRow)
                .where(RunRow.id == run_id, RunRow.status == _RUNNING, RunRow.owner == this_process())
                .values(owner=None, lease_until=None)
            ).rowcount
            == 1
        )
