"""Stored experiments: the experiment, then a row per item run (its run id from the start, its
verdicts once scored). Kept beside the Store, like profiles.py. Each call is one short
transaction, so a run's result is on disk as soon as it is scored, and another process (a
worker, later) can score the run it executed, found by its run id."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session

from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.experiment_record import Experiment, ExperimentStatus, ItemResult, Summary, summarize
from flowcall.core.steps import Run, RunStatus, utcnow
from flowcall.store.models import ExperimentItemRow, ExperimentRow, RunRow
from flowcall.store.repository import Store

_HEADER = (
    "id",
    "flow_ref",
    "flow_name",
    "flow_version",
    "flow_version_id",
    "dataset_name",
    "dataset_version",
    "dataset_version_id",
    "model",
    "polish_model",
    "calling_way",
    "repeat",
    "status",
    "error",
    "started_at",
    "ended_at",
    "summary",
)
_RESULT = (
    "status",
    "passed",
    "verdicts",
    "latency_ms",
    "tokens_in",
    "tokens_out",
    "outcome",
    "traced",
    "answer_values",
)


@dataclass(frozen=True)
class ItemRef:
    """Where a run of an experiment belongs: enough to score it, given only the run id."""

    experiment_id: int
    position: int
    attempt: int
    item_key: str
    dataset_version_id: int


def _experiment(row: ExperimentRow, items: list[ExperimentItemRow] | None = None) -> Experiment:
    return Experiment.model_validate(
        {**{name: getattr(row, name) for name in _HEADER}, "items": [_item(i) for i in items or []]}
    )


def _item(row: ExperimentItemRow) -> ItemResult:
    return ItemResult.model_validate({name: getattr(row, name) for name in ItemResult.model_fields})


def create_experiment(store: Store, **header: Any) -> int:
    """A new experiment (status running) with the header fields of `Experiment`; its id."""
    with Session(store.engine) as s, s.begin():
        row = ExperimentRow(**header, status=str(ExperimentStatus.RUNNING), started_at=utcnow())
        s.add(row)
        s.flush()
        return row.id


def add_items(store: Store, experiment_id: int, items: list[tuple[int, int, str, str]]) -> None:
    """The experiment's items, each (position, attempt, item key, run id), in one transaction."""
    with Session(store.engine) as s, s.begin():
        s.add_all(
            ExperimentItemRow(
                experiment_id=experiment_id,
                position=position,
                attempt=attempt,
                item_key=item_key,
                run_id=run_id,
                tokens_in=0,
                tokens_out=0,
            )
            for position, attempt, item_key, run_id in items
        )


def item_for_run(store: Store, run_id: str) -> ItemRef:
    """The experiment item a run belongs to; NotFoundError for a run of no experiment."""
    query = (
        select(ExperimentItemRow, ExperimentRow.dataset_version_id)
        .join(ExperimentRow, ExperimentRow.id == ExperimentItemRow.experiment_id)
        .where(ExperimentItemRow.run_id == run_id)
    )
    with Session(store.engine) as s:
        found = s.execute(query).first()
    if found is None:
        raise NotFoundError(f"run {run_id} belongs to no experiment")
    row, version_id = found
    return ItemRef(row.experiment_id, row.position, row.attempt, row.item_key, version_id)


def save_result(store: Store, experiment_id: int, result: ItemResult) -> None:
    """Record a scored run's verdicts on its item."""
    values = result.model_dump(mode="json", include=set(_RESULT))
    with Session(store.engine) as s, s.begin():
        s.execute(
            update(ExperimentItemRow)
            .where(
                ExperimentItemRow.experiment_id == experiment_id,
                ExperimentItemRow.position == result.position,
                ExperimentItemRow.attempt == result.attempt,
            )
            .values(**values)
        )


def pending_runs(store: Store, experiment_id: int) -> list[str]:
    """The run ids of the items not scored yet, repeat by repeat, each in the dataset's order."""
    with Session(store.engine) as s:
        return list(
            s.scalars(
                select(ExperimentItemRow.run_id)
                .where(
                    ExperimentItemRow.experiment_id == experiment_id,
                    ExperimentItemRow.passed.is_(None),
                    ExperimentItemRow.run_id.is_not(None),
                )
                .order_by(ExperimentItemRow.attempt, ExperimentItemRow.position)
            )
        )


def cancel_queued(store: Store, experiment_id: int, reason: str) -> int:
    """Cancel the experiment's runs that never started; how many there were."""
    runs = select(ExperimentItemRow.run_id).where(ExperimentItemRow.experiment_id == experiment_id)
    with Session(store.engine) as s, s.begin():
        return s.execute(
            update(RunRow)
            .where(RunRow.id.in_(runs), RunRow.status == str(RunStatus.QUEUED))
            .values(status=str(RunStatus.CANCELLED), error=reason, ended_at=utcnow())
            .execution_options(synchronize_session=False)
        ).rowcount


class _Moved(Exception):
    """Rolls a transaction back: a row was not as the caller read it."""


def retry_interrupted(store: Store, experiment_id: int, old: Run, new_run_id: str, reason: str) -> bool:
    """Give an interrupted decision-only run's item a new queued run, in one transaction: the new
    run is recorded, the old one ends failed saying why, and the item points at the new one.
    Only if the old run is still as the caller read it (interrupted, the same owner) and its
    item still unscored; False when someone else moved either meanwhile (nothing changes)."""
    owner = RunRow.owner.is_(None) if old.owner is None else RunRow.owner == old.owner
    now = utcnow()
    try:
        with Session(store.engine) as s, s.begin():
            s.add(
                RunRow(
                    id=new_run_id,
                    flow_version_id=old.flow_version_id,
                    flow_name=old.flow_name,
                    question=old.question,
                    status=str(RunStatus.QUEUED),
                    trace_id=uuid.uuid4().hex,
                    started_at=now,
                    queued_at=now,
                    tokens_in=0,
                    tokens_out=0,
                )
            )
            s.flush()
            ended = s.execute(
                update(RunRow)
                .where(RunRow.id == old.id, RunRow.status == str(RunStatus.RUNNING), owner)
                .values(
                    status=str(RunStatus.FAILED),
                    error=reason[:2000],
                    ended_at=now,
                    checkpoint=None,
                    lease_until=None,
                )
            ).rowcount
            moved = s.execute(
                update(ExperimentItemRow)
                .where(
                    ExperimentItemRow.experiment_id == experiment_id,
                    ExperimentItemRow.run_id == old.id,
                    ExperimentItemRow.passed.is_(None),
                )
                .values(run_id=new_run_id)
            ).rowcount
            if ended != 1 or moved != 1:
                raise _Moved
    except _Moved:
        return False
    return True


def finish_experiment(
    store: Store, experiment_id: int, status: ExperimentStatus, summary: Summary, error: str | None = None
) -> None:
    with Session(store.engine) as s, s.begin():
        s.execute(
            update(ExperimentRow)
            .where(ExperimentRow.id == experiment_id)
            .values(
                status=str(status), summary=summary.model_dump(mode="json"), error=error, ended_at=utcnow()
            )
        )


def finish_when_scored(store: Store, experiment_id: int) -> bool:
    """Finish a running experiment whose every item is scored, with its summary; True for the
    one caller that finished it. Workers scoring its last two items at once may both get here:
    the UPDATE re-checks, under the row's lock, that it still runs and no item is unscored, so
    exactly one finishes it (the one whose item was scored last always sees both scored)."""
    unscored = exists().where(
        ExperimentItemRow.experiment_id == experiment_id, ExperimentItemRow.passed.is_(None)
    )
    with Session(store.engine) as s, s.begin():
        rows = s.scalars(
            select(ExperimentItemRow).where(ExperimentItemRow.experiment_id == experiment_id)
        ).all()
        if any(row.passed is None for row in rows):
            return False
        summary = summarize([_item(row) for row in rows])
        return (
            s.execute(
                update(ExperimentRow)
                .where(
                    ExperimentRow.id == experiment_id,
                    ExperimentRow.status == str(ExperimentStatus.RUNNING),
                    ~unscored,
                )
                .values(
                    status=str(ExperimentStatus.FINISHED),
                    summary=summary.model_dump(mode="json"),
                    ended_at=utcnow(),
                )
            ).rowcount
            == 1
        )


def get_experiment(store: Store, experiment_id: int | str) -> Experiment:
    """An experiment with its items, repeat by repeat, each in the dataset's order."""
    try:
        number = int(experiment_id)
    except ValueError:
        raise ConfigError(
            f"an experiment id is a number, not {experiment_id!r}; `flowcall experiments list` shows them"
        ) from None
    with Session(store.engine) as s:
        row = s.get(ExperimentRow, number)
        if row is None:
            raise NotFoundError(f"no experiment {number}; `flowcall experiments list` shows them")
        items = s.scalars(
            select(ExperimentItemRow)
            .where(ExperimentItemRow.experiment_id == number)
            .order_by(ExperimentItemRow.attempt, ExperimentItemRow.position)
        ).all()
        return _experiment(row, list(items))


def list_experiments(store: Store, limit: int = 50) -> list[Experiment]:
    """Newest first, without their items."""
    with Session(store.engine) as s:
        rows = s.scalars(select(ExperimentRow).order_by(ExperimentRow.id.desc()).limit(limit)).all()
        return [_experiment(row) for row in rows]


# --- what each run of an experiment asked and answered (the studio's results and progress)


@dataclass(frozen=True)
class RunText:
    question: str
    answer: Any
    error: str | None
    status: str


def run_texts(store: Store, experiment_id: int) -> dict[str, RunText]:
    """Each of the experiment's runs by id: its question, answer and error, in one query."""
    query = (
        select(RunRow.id, RunRow.question, RunRow.final_answer, RunRow.error, RunRow.status)
        .join(ExperimentItemRow, ExperimentItemRow.run_id == RunRow.id)
        .where(ExperimentItemRow.experiment_id == experiment_id)
    )
    with Session(store.engine) as s:
        return {
            row.id: RunText(row.question, row.final_answer, row.error, row.status) for row in s.execute(query)
        }


def running_item(store: Store, experiment_id: int) -> tuple[int, int, str] | None:
    """The first item whose run a worker is executing now: (position, attempt, question)."""
    query = (
        select(ExperimentItemRow.position, ExperimentItemRow.attempt, RunRow.question)
        .join(RunRow, ExperimentItemRow.run_id == RunRow.id)
        .where(
            ExperimentItemRow.experiment_id == experiment_id,
            ExperimentItemRow.passed.is_(None),
            RunRow.status == str(RunStatus.RUNNING),
        )
        .order_by(ExperimentItemRow.attempt, ExperimentItemRow.position)
        .limit(1)
    )
    with Session(store.engine) as s:
        row = s.execute(query).first()
    return (row.position, row.attempt, row.question) if row else None
