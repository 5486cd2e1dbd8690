"""Experiments: every item of a dataset version run through a flow version as a normal recorded
run, each run scored against its item (scoring.py), the whole kept with its summary.

An experiment is made in two halves, so that a worker can later do the second one given only a
run id: `start` records the experiment and, for every item (and repeat), a queued run;
`execute_run` then executes one queued run and scores it, finding its item through the run id.
Both go through the door every start goes through (service/door.py): `run_experiment` hands
the runs to `InOrder`, which executes them in this process, one item after the other, and ends
the experiment; `submit` hands them to the workers (FLOWCALL_BROKER_URL) or the studio's runner,
and whoever scores the last item finishes the experiment (work.py, `score_run`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from flowcall.core.config import model_label
from flowcall.core.datasets import DatasetItem
from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.experiment_record import Experiment, ExperimentStatus, ItemResult, summarize
from flowcall.core.spec import Flow
from flowcall.core.steps import Run, RunStatus
from flowcall.engine.provenance import traced_share
from flowcall.eval.scoring import observe, passed, score
from flowcall.service.broker import WorkersDoor
from flowcall.service.door import Refused, RunDoor, enter
from flowcall.store import datasets as stored_datasets
from flowcall.store import experiments as stored

if TYPE_CHECKING:
    from flowcall.service.front import FlowCall

OnItem = Callable[[ItemResult], None]
OnBegin = Callable[[str], None]  # a run's id, as the run is about to execute


def _model(config: object) -> str:
    return model_label(config.provider, config.model)  # type: ignore[attr-defined]


def start(
    service: FlowCall,
    flow: Flow,
    flow_ref: str,
    dataset_name: str,
    dataset_version: int | None = None,
    repeat: int = 1,
) -> Experiment:
    """Record an experiment of `flow` on a dataset version, with a queued run per item and repeat.
    Nothing is recorded when the flow cannot run here (a missing tool, an ungranted server)."""
    if repeat < 1:
        raise ConfigError(f"--repeat must be at least 1, not {repeat}")
    dataset = stored_datasets.get_dataset(service.store, dataset_name, dataset_version)
    adopted = service.prepare(flow)
    flow = adopted.flow
    experiment_id = stored.create_experiment(
        service.store,
        flow_ref=flow_ref[:500],
        flow_name=flow.name,
        flow_version=adopted.version,
        flow_version_id=adopted.version_id,
        dataset_name=dataset.name,
        dataset_version=dataset.version,
        dataset_version_id=dataset.version_id,
        model=_model(flow.decision),
        polish_model=_model(flow.polish) if flow.polish else None,
        calling_way=flow.decision.calling_way,
        repeat=repeat,
    )
    places = [
        (position, attempt, item) for attempt in range(repeat) for position, item in enumerate(dataset.items)
    ]
    runs = service.submit_many(adopted, [item.question for _, _, item in places])
    stored.add_items(
        service.store,
        experiment_id,
        [(position, attempt, item.key(), run.id) for (position, attempt, item), run in zip(places, runs)],
    )
    return stored.get_experiment(service.store, experiment_id)


def submit(
    service: FlowCall,
    flow: Flow,
    flow_ref: str,
    dataset_name: str,
    dataset_version: int | None = None,
    repeat: int = 1,
    *,
    door: RunDoor | None = None,
) -> Experiment:
    """Start an experiment whose runs go through `door` (service/door.py; default: the Celery
    workers), each handed over by its id; whoever runs the last item finishes the experiment
    (score_run). When the door does not take them, the runs are cancelled and the experiment
    fails, saying why (door.Refused, a ConfigError)."""
    door = door or WorkersDoor(service)
    started: list[Experiment] = []

    def record() -> list[str]:
        started.append(start(service, flow, flow_ref, dataset_name, dataset_version, repeat))
        return stored.pending_runs(service.store, started[0].id)

    try:
        enter(service, door, record, flow=flow)
    except Refused as exc:
        finish(service, started[0].id, ExperimentStatus.FAILED, str(exc))
        raise
    return stored.get_experiment(service.store, started[0].id)


def item_of(service: FlowCall, run_id: str) -> tuple[stored.ItemRef, DatasetItem] | None:
    """The experiment item a run belongs to, or None for a run of no experiment."""
    try:
        ref = stored.item_for_run(service.store, run_id)
    except NotFoundError:
        return None
    return ref, stored_datasets.dataset_item(service.store, ref.dataset_version_id, ref.position)


def score_run(
    service: FlowCall, run: Run, found: tuple[stored.ItemRef, DatasetItem] | None
) -> ItemResult | None:
    """Score a run that ended or paused, if it belongs to an experiment (`found`: its item, from
    item_of), and finish the experiment when every item is scored (one of several workers
    finishing at once does it). Scoring again gives the same verdicts: a task delivered twice
    does no harm."""
    if found is None:
        return None
    ref, item = found
    result = record(service, ref, item, run)
    stored.finish_when_scored(service.store, ref.experiment_id)
    return result


def execute_run(service: FlowCall, run_id: str) -> ItemResult:
    """Execute one queued run of an experiment and record its verdicts: the run id is all it
    takes. An item with its own tools asks the decision model only (service.execute). A run
    that is no longer queued but has stopped (a person cancelled it, or it ran already: a task
    delivered twice) is scored as it is; one that runs elsewhere is refused."""
    ref = stored.item_for_run(service.store, run_id)
    item = stored_datasets.dataset_item(service.store, ref.dataset_version_id, ref.position)
    run = service.store.get_run(run_id)
    if run.status == RunStatus.QUEUED:
        run = service.execute(run_id, tools=[tool.spec() for tool in item.tools] if item.tools else None)
    elif run.status in (RunStatus.RUNNING, RunStatus.INTERRUPTED):
        raise ConfigError(
            f"run {run.id} of experiment {ref.experiment_id} is {run.status} (started elsewhere); "
            f"see `flowcall runs show {run.id[:8]}`"
        )
    return record(service, ref, item, run)


def record(service: FlowCall, ref: stored.ItemRef, item: DatasetItem, run: Run) -> ItemResult:
    """Score a finished run against its item and keep the verdicts."""
    seen = observe(run, decision_only=bool(item.tools))
    verdicts = score(item, seen)
    result = ItemResult(
        position=ref.position,
        attempt=ref.attempt,
        item_key=ref.item_key,
        run_id=run.id,
        status=str(run.status),
        passed=passed(verdicts),
        verdicts=verdicts,
        latency_ms=seen.latency_s * 1000 if seen.latency_s is not None else None,
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        outcome=run.outcome,
        **dict(
            zip(("traced", "answer_values"), traced_share(run.provenance) if run.provenance else (None, None))
        ),
    )
    stored.save_result(service.store, ref.experiment_id, result)
    return result


def finish(
    service: FlowCall, experiment_id: int, status: ExperimentStatus, error: str | None = None
) -> Experiment:
    """End an experiment: its summary from the items scored so far."""
    experiment = stored.get_experiment(service.store, experiment_id)
    stored.finish_experiment(service.store, experiment_id, status, summarize(experiment.items), error)
    return stored.get_experiment(service.store, experiment_id)


def run_experiment(
    service: FlowCall,
    flow: Flow,
    flow_ref: str,
    dataset_name: str,
    dataset_version: int | None = None,
    *,
    repeat: int = 1,
    on_start: Callable[[Experiment], None] | None = None,
    on_item: OnItem | None = None,
    on_begin: OnBegin | None = None,
) -> Experiment:
    """Start an experiment and execute its runs here, one after the other (on_begin hears of
    each run as it begins, on_item as it is scored), through the door every start goes through
    (`InOrder`). When it stops on an error or a person's Ctrl-C, the runs not started are
    cancelled and the experiment says why; the items scored until then are kept."""
    door = InOrder(service, on_start, on_item, on_begin)
    submit(service, flow, flow_ref, dataset_name, dataset_version, repeat, door=door)
    if door.stopped is not None:
        raise door.stopped
    assert door.experiment is not None
    return door.experiment


class InOrder:
    """The door (service/door.py) of an experiment run in this process: the runs handed over go
    on here, one after the other, each scored as it ends. What stops them (an error, Ctrl-C) is
    kept in `stopped` for the caller to raise: the door took the runs; they did not finish."""

    name = "this process"
    runs_here = True

    def __init__(
        self,
        service: FlowCall,
        on_start: Callable[[Experiment], None] | None,
        on_item: OnItem | None,
        on_begin: OnBegin | None,
    ) -> None:
        self.service, self.on_start, self.on_item, self.on_begin = service, on_start, on_item, on_begin
        self.experiment: Experiment | None = None
        self.stopped: BaseException | None = None

    def ready(self) -> None:
        """Always: an experiment that can be recorded here can run here."""

    def hand_over(self, run_ids: list[str]) -> dict[str, Run]:
        experiment_id = stored.item_for_run(self.service.store, run_ids[0]).experiment_id
        if self.on_start:
            self.on_start(stored.get_experiment(self.service.store, experiment_id))
        try:
            self.experiment = _run_pending(
                self.service, experiment_id, execute_run, self.on_item, self.on_begin
            )
        except BaseException as exc:  # noqa: BLE001 - the caller raises it, once enter has returned
            self.stopped = exc
        return {}

    def continue_with(self, run_id: str, approver: object) -> None:
        raise ConfigError(f"run {run_id[:8]} of an experiment goes on with `flowcall experiments resume`")


def resume_experiment(
    service: FlowCall,
    experiment_id: int | str,
    *,
    on_start: Callable[[Experiment], None] | None = None,
    on_item: OnItem | None = None,
    on_begin: OnBegin | None = None,
) -> Experiment:
    """Go on with an experiment whose process stopped (killed, the machine restarted): it still
    says running, with items unscored. Each unscored item's run is taken as it is: a queued one
    is executed; an interrupted one is resumed from its last committed step (a flow's tools never
    run twice), or, when it only asked the decision model (an item with its own tools: nothing
    was executed), ends failed saying so and the item gets a new run; one that ended is scored
    as it is; one that still runs elsewhere is refused."""
    experiment = stored.get_experiment(service.store, experiment_id)
    if experiment.status != ExperimentStatus.RUNNING:
        raise ConfigError(
            f"experiment {experiment.id} is {experiment.status.value}; only one that still says "
            "running (its process stopped) is resumed; start another with `flowcall experiments run`"
        )
    live = [
        run_id
        for run_id in stored.pending_runs(service.store, experiment.id)
        if service.store.get_run(run_id).status == RunStatus.RUNNING
    ]
    if live:
        raise ConfigError(
            f"experiment {experiment.id} is still running: run {live[0][:8]} is being executed by a "
            "live process (its own `experiments run`, or a worker); wait for it, or stop that process"
        )
    if on_start:
        on_start(experiment)
    return _run_pending(service, experiment.id, _go_on, on_item, on_begin)


def cancel_experiment(service: FlowCall, experiment_id: int | str, *, by: str) -> Experiment:
    """Give up an experiment that still says running (its process stopped, or a person no longer
    wants it): every unscored item's run that has not ended is cancelled (one that is running
    stops at its next step), and the experiment ends cancelled with the items scored so far."""
    experiment = stored.get_experiment(service.store, experiment_id)
    if experiment.status != ExperimentStatus.RUNNING:
        raise ConfigError(
            f"experiment {experiment.id} is {experiment.status.value}; there is nothing to cancel"
        )
    for run_id in stored.pending_runs(service.store, experiment.id):
        if service.store.get_run(run_id).status in (
            RunStatus.QUEUED,
            RunStatus.RUNNING,
            RunStatus.INTERRUPTED,
            RunStatus.WAITING_APPROVAL,
        ):
            try:
                service.cancel(run_id, by=by)
            except ConfigError:
                pass  # it ended meanwhile: it stays as it ended
    return finish(service, experiment.id, ExperimentStatus.CANCELLED, f"cancelled by {by}")


def _go_on(service: FlowCall, run_id: str) -> ItemResult:
    run = service.store.get_run(run_id)
    if run.status != RunStatus.INTERRUPTED:
        return execute_run(service, run_id)
    ref = stored.item_for_run(service.store, run_id)
    item = stored_datasets.dataset_item(service.store, ref.dataset_version_id, ref.position)
    if not item.tools:
        return record(service, ref, item, service.resume(run_id, approver=None))
    new_run_id = str(uuid.uuid4())
    reason = (
        f"interrupted: its process stopped before the run ended; experiment "
        f"{ref.experiment_id} asks again in run {new_run_id}"
    )
    if not stored.retry_interrupted(service.store, ref.experiment_id, run, new_run_id, reason):
        raise ConfigError(
            f"run {run.id} of experiment {ref.experiment_id} changed while it was being resumed "
            f"(another process took it); see `flowcall runs show {run.id[:8]}`"
        )
    return execute_run(service, new_run_id)


def _run_pending(
    service: FlowCall,
    experiment_id: int,
    go: Callable[[FlowCall, str], ItemResult],
    on_item: OnItem | None,
    on_begin: OnBegin | None = None,
) -> Experiment:
    try:
        for run_id in stored.pending_runs(service.store, experiment_id):
            if on_begin:
                on_begin(run_id)
            result = go(service, run_id)
            if on_item:
                on_item(result)
    except BaseException as exc:
        stopped = isinstance(exc, KeyboardInterrupt)
        why = "stopped with Ctrl-C" if stopped else f"{type(exc).__name__}: {exc}"
        stored.cancel_queued(service.store, experiment_id, f"experiment {experiment_id} stopped: {why}")
        finish(
            service, experiment_id, ExperimentStatus.CANCELLED if stopped else ExperimentStatus.FAILED, why
        )
        raise
    if stored.get_experiment(service.store, experiment_id).status != ExperimentStatus.RUNNING:
        return stored.get_experiment(service.store, experiment_id)  # a person cancelled it meanwhile
    return finish(service, experiment_id, ExperimentStatus.FINISHED)
