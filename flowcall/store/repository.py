"""The repository: flows (versioned), runs and their steps, tasks.

`Store` is the engine's StepSink. Each call is its own short transaction, so a step (with the
loop state it leads to) is on disk the moment `steps_recorded` returns, and another process
(the UI) can watch a run grow. Every write to a running run checks that this process still
owns it (store/ownership.py): a run cancelled or taken over elsewhere stops at its next step.
That check is the write's own rowcount, so a run's writes read nothing (see _MINE below).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from datetime import date, datetime
from typing import Any, Callable

from pydantic import ValidationError
from sqlalchemy import Engine, bindparam, delete, exists, func, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from flowcall.core import config
from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.spec import Flow, FlowLayout
from flowcall.core.steps import REUSED_NOTE, Run, RunCancelled, RunStatus, Step, utcnow
from flowcall.store.db import fit_values, make_engine, misfits, retry_on_disconnect
from flowcall.store.migrate import upgrade
from flowcall.store.models import (
    FlowRow,
    FlowVersionRow,
    GrantRow,
    RunArtifactsRow,
    RunRow,
    StepRow,
    TaskRow,
    ToolPinRow,
)
from flowcall.store.ownership import lease_seconds, lease_until, owner_gone, this_process

STORED = {"stored": True}  # a flow read back keeps the name it was saved under (spec.Flow says why)

_TIMES = {"started_at", "ended_at", "lease_until", "queued_at"}
_RUNNING = str(RunStatus.RUNNING)


# --- The StepSink's statements, built once. --------------------------------------------------
# A run's writes are its hot path: each is one short transaction of plain Core statements, with
# no read before a write. Whether the run is still this process's (_MINE) is the rowcount of the
# write itself: the UPDATE of the run's row (its state, its lease), or on SQLite, for a step
# without a state, the INSERT that adds the step only if the run is this process's. Only a
# write that matched nothing reads, to say why.
#
# That INSERT is as good a fence as the UPDATE only where writes take turns: SQLite runs one
# write transaction at a time, and a write statement takes the lock before it reads. On
# PostgreSQL (read committed) a statement that leaves the run's row alone neither waits for a
# resumer's claim nor makes the claim wait: both could commit. There every step updates the
# row first, so a claim racing it waits and then finds the lease renewed (Store.run_resumed).

_RUNS, _STEPS, _ARTIFACTS = RunRow.__table__, StepRow.__table__, RunArtifactsRow.__table__
_MINE = (_RUNS.c.id == bindparam("run")) & (_RUNS.c.status == _RUNNING) & (_RUNS.c.owner == bindparam("me"))
_INSERT_RUN, _INSERT_STEPS, _INSERT_ARTIFACTS = insert(_RUNS), insert(_STEPS), insert(_ARTIFACTS)
_STEP_COLUMNS = [c for c in _STEPS.columns if c.key != "id"]
_INSERT_STEP_IF_MINE = (
    insert(_STEPS)
    .from_select(  # INSERT INTO steps (...) SELECT ?, ... WHERE EXISTS (...)
        [c.key for c in _STEP_COLUMNS],
        select(*(bindparam(c.key, type_=c.type) for c in _STEP_COLUMNS)).where(exists().where(_MINE)),
    )
    .execution_options(preserve_rowcount=True)
)  # psycopg forgets an INSERT's rowcount once its cursor closes
_PINS = select(ToolPinRow.tool_version, ToolPinRow.fingerprint, ToolPinRow.definition).where(
    ToolPinRow.flow_name == bindparam("flow")
)
_RENEW = update(_RUNS).where(_MINE).values(lease_until=bindparam("lease"))
_RENEW_WITH_STATE = (
    update(_RUNS).where(_MINE).values(lease_until=bindparam("lease"), checkpoint=bindparam("state"))
)


def _spent(tokens: Any) -> Any:
    """A run's tokens as its stored steps say; a re-run's reused steps were spent by the run it re-ran."""
    return (
        select(func.coalesce(func.sum(tokens), 0))
        .where(
            _STEPS.c.run_id == bindparam("run"),
            ~func.coalesce(_STEPS.c.note, "").contains(REUSED_NOTE, autoescape=True),
        )
        .scalar_subquery()
    )


_FINISH = (
    update(_RUNS)
    .where(_MINE)
    .values(
        status=bindparam("p_status"),
        final_answer=bindparam("p_answer"),
        error=bindparam("p_error"),
        outcome=bindparam("p_outcome"),
        outcome_reasons=bindparam("p_reasons"),
        provenance=bindparam("p_provenance"),
        ended_at=bindparam("p_ended"),
        tokens_in=_spent(_STEPS.c.tokens_in),
        tokens_out=_spent(_STEPS.c.tokens_out),
        checkpoint=None,  # a finished run has no state left to go on from
        lease_until=None,
    )
)


# --- The one place where ORM rows and pydantic records meet. ---------------------------------
# JSON-mode dumps turn enums into their values (psycopg would write an Enum's *name*) and make
# nested values JSON-safe; datetimes are passed as objects for the timezone-aware columns.


def _step_values(step: Step) -> dict[str, Any]:
    data = step.model_dump(mode="json", exclude=_TIMES)
    data["started_at"], data["ended_at"] = step.started_at, step.ended_at
    return fit_values(_STEPS, data)


def _step_to_row(step: Step) -> StepRow:
    return StepRow(**_step_values(step))


def _step_from_row(row: StepRow) -> Step:
    return Step.model_validate({name: getattr(row, name) for name in Step.model_fields})


def _run_values(run: Run, api_key: str | None = None) -> dict[str, Any]:
    data = run.model_dump(mode="json", exclude=_TIMES | {"steps"})
    data.update(
        api_key=api_key,  # not on Run: an exported run never says which key started it
        started_at=run.started_at,
        ended_at=run.ended_at,
        lease_until=run.lease_until,
        queued_at=run.queued_at,
        tokens_in=0,
        tokens_out=0,
    )
    return fit_values(_RUNS, data)


def _run_to_row(run: Run, api_key: str | None = None) -> RunRow:
    return RunRow(**_run_values(run, api_key))


def _run_from_row(row: RunRow, steps: list[StepRow] | None = None) -> Run:
    data = {name: getattr(row, name) for name in Run.model_fields if name != "steps"}
    data["outcome_reasons"] = data["outcome_reasons"] or []  # runs recorded before outcomes existed
    data["context"] = data["context"] or []  # runs recorded before a chat's context was kept
    if data["status"] == _RUNNING and owner_gone(row.owner, row.lease_until):
        data["status"] = RunStatus.INTERRUPTED  # derived on every read, never stored
    return Run.model_validate({**data, "steps": [_step_from_row(s) for s in steps or []]})


_LATEST = (
    select(FlowVersionRow.flow_id, func.max(FlowVersionRow.version).label("version"))
    .group_by(FlowVersionRow.flow_id)
    .subquery()
)
_LATEST_VERSIONS = (  # (flow name, its latest FlowVersionRow) for every flow
    select(FlowRow.name, FlowVersionRow)
    .join(_LATEST, _LATEST.c.flow_id == FlowRow.id)
    .join(
        FlowVersionRow,
        (FlowVersionRow.flow_id == FlowRow.id) & (FlowVersionRow.version == _LATEST.c.version),
    )
    .order_by(FlowRow.name)
)


def _with_steps(s: Session, row: RunRow) -> Run:
    steps = s.scalars(select(StepRow).where(StepRow.run_id == row.id).order_by(StepRow.seq))
    return _run_from_row(row, list(steps))


def _layout(stored: Any) -> FlowLayout | None:
    """A stored layout, or None when there is none or it no longer reads (a layout is only
    where nodes sit: losing it loses nothing of the flow)."""
    try:
        return FlowLayout.model_validate(stored) if stored else None
    except ValidationError:
        return None


def _version_info(row: FlowVersionRow) -> dict[str, Any]:
    return {
        "version": row.version,
        "version_id": row.id,
        "spec_hash": row.spec_hash,
        "created_at": row.created_at,
    }


def _task_dict(row: TaskRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "title": row.title,
        "priority": row.priority,
        "due_date": row.due_date,
        "created_at": row.created_at,
    }


def _not_resumable(run_id: str, status: str | None = None) -> str:
    """Why a run cannot be resumed now: another resumer has it, or it ended."""
    now = (
        f" (it is {status}: only a run that waits for approval or was interrupted goes on)" if status else ""
    )
    return f"run {run_id} is already being resumed (or finished); see `flowcall runs show {run_id}`{now}"


_owner: tuple[int, str] | None = None


def _me() -> str:
    """This process as a run's owner; computed again after a fork (a Celery worker's child)."""
    global _owner
    if _owner is None or _owner[0] != os.getpid():
        _owner = (os.getpid(), this_process())
    return _owner[1]


class _LeaseKeeper:
    """Renews the leases of the runs this process runs, so that another host does not take a
    run for interrupted while a long model call or tool holds it between steps."""

    def __init__(self, store: Store):
        self.store, self.runs, self.lock = store, set(), threading.Lock()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def hold(self, run_id: str) -> None:
        with self.lock:
            self.runs.add(run_id)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._renew, name="flowcall-leases", daemon=True)
                self.thread.start()

    def release(self, run_id: str) -> None:
        with self.lock:
            self.runs.discard(run_id)

    def _renew(self) -> None:
        while not self.stopped.wait(lease_seconds() / 3):
            with self.lock:
                runs = sorted(self.runs)
            if not runs:
                continue
            try:
                with self.store._session() as s, s.begin():
                    s.execute(
                        update(RunRow)
                        .where(RunRow.id.in_(runs), RunRow.owner == _me(), RunRow.status == _RUNNING)
                        .values(lease_until=lease_until())
                    )
            except Exception:  # a dropped connection: the next state saved renews it too
                pass


class Store:
    """All persistence of FlowCall behind one object; open it with `Store.open()`."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._leases = _LeaseKeeper(self)
        self._artifact_digests: dict[str, str] = {}  # run id -> the artifacts last saved (see steps_recorded)
        self._one_statement_steps = engine.dialect.name == "sqlite"  # see _INSERT_STEP_IF_MINE

    @classmethod
    def open(cls, url: str | None = None) -> Store:
        """Connect to `url` (default FLOWCALL_DATABASE_URL or the SQLite file) and migrate to head."""
        engine = make_engine(url or config.database_url())
        try:
            upgrade(engine)
        except OperationalError as exc:
            engine.dispose()
            where = engine.url.render_as_string(hide_password=True)
            reason = " ".join(str(exc.orig).split())  # drivers write several lines
            raise ConfigError(
                f"cannot open the database {where}: {reason}; check FLOWCALL_DATABASE_URL and that "
                "the server is running and the database exists"
            ) from exc
        return cls(engine)

    def close(self) -> None:
        with _lock:
            for key, store in list(_stores.items()):
                if store is self:
                    del _stores[key]
        self._leases.stopped.set()
        self.engine.dispose()

    def _session(self) -> Session:
        return self._sessions()

    # --- StepSink -----------------------------------------------------------------------------

    def run_started(self, run: Run, *, api_key: str | None = None) -> None:
        """Record a run that starts now; `api_key`: the name of the API key that started it."""
        run.owner, run.lease_until = _me(), lease_until()
        values = _run_values(run, api_key)

        def insert() -> None:
            with self.engine.begin() as conn:
                conn.execute(_INSERT_RUN, values)

        retry_on_disconnect(insert, landed=self._exists(lambda: select(RunRow.id).where(RunRow.id == run.id)))
        self._leases.hold(run.id)

    def queue_run(self, run: Run) -> None:
        """Record a run that has not started: no owner, nothing to go on from but its question.
        Whoever executes it claims it (run_resumed), so it runs once whoever asks."""
        self.queue_runs([run])

    def queue_runs(self, runs: list[Run], *, api_key: str | None = None) -> None:
        """queue_run for many runs (an experiment's), in one transaction; `api_key` as in run_started."""
        for run in runs:
            run.status, run.owner, run.lease_until = RunStatus.QUEUED, None, None
            run.queued_at = run.queued_at or utcnow()

        def insert() -> None:
            with self._session() as s, s.begin():
                s.add_all(_run_to_row(run, api_key) for run in runs)

        if runs:
            last = runs[-1].id
            retry_on_disconnect(
                insert, landed=self._exists(lambda: select(RunRow.id).where(RunRow.id == last))
            )

    def queue_rerun(self, run: Run, reused: list[Step], checkpoint: dict[str, Any]) -> None:
        """Record a re-run that has not started: queued like `queue_run`, with the steps it
        reuses and the loop state they lead to, in one transaction. Whoever executes it goes
        on from that state (get_checkpoint), so a re-run can wait in line or go to a worker."""
        run.status, run.owner, run.lease_until = RunStatus.QUEUED, None, None
        run.queued_at = run.queued_at or utcnow()
        row = _run_to_row(run)
        row.checkpoint = checkpoint

        def insert() -> None:
            with self._session() as s, s.begin():
                s.add(row)
                s.flush()  # the run before its steps (their foreign key)
                s.add_all(_step_to_row(step) for step in reused)

        retry_on_disconnect(insert, landed=self._exists(lambda: select(RunRow.id).where(RunRow.id == run.id)))

    def _exists(self, query: Callable[[], Any]) -> Callable[[], bool]:
        """For retry_on_disconnect's `landed`: did a write cut off at COMMIT store its row?
        `query` builds the SELECT, only when a connection was lost."""

        def landed() -> bool:
            with self.engine.connect() as conn:
                return conn.scalar(query()) is not None

        return landed

    def step_recorded(self, step: Step) -> None:
        self.steps_recorded([step])

    def steps_recorded(self, steps: list[Step], state: dict[str, Any] | None = None) -> None:
        """Insert the steps and, if given, the loop state they lead to, in one transaction: a
        crash keeps both or neither. The run must still be this process's: a run cancelled
        meanwhile gets its steps (they happened) and then RunCancelled; a run another process
        has taken over gets nothing and RunCancelled. The lease is renewed by each write that
        updates the run's row (all of them on PostgreSQL), and between them by the lease keeper."""
        if not steps:
            return
        run_id, first = steps[0].run_id, steps[0].seq
        rows = [_step_values(step) for step in steps]
        mine = {"run": run_id, "me": _me()}
        if state is None and len(steps) == 1 and self._one_statement_steps:  # the step, if the run is ours
            write, params = _INSERT_STEP_IF_MINE, {**rows[0], **mine}
        else:  # the state (or the lease) and the run's ownership, then the steps
            write = _RENEW if state is None else _RENEW_WITH_STATE
            params = {**mine, "lease": lease_until(), **({} if state is None else {"state": state})}
        artifacts, digest = self._changed_artifacts(run_id, steps[-1].seq, state)

        def insert() -> bool:
            with self.engine.begin() as conn:
                owned = conn.execute(write, params).rowcount == 1
                if not owned:
                    row = conn.execute(
                        select(_RUNS.c.status, _RUNS.c.owner).where(_RUNS.c.id == run_id)
                    ).first()
                    if row is None:
                        raise ConfigError(
                            f"step {first} belongs to run {run_id}, which was never started; "
                            "call run_started(run) first"
                        )
                    if row.status != str(RunStatus.CANCELLED):
                        raise RunCancelled(
                            f"run {run_id} is now {row.status} and owned by {row.owner}; this process stops"
                        )
                if not owned or write is not _INSERT_STEP_IF_MINE:
                    conn.execute(_INSERT_STEPS, rows)
                if owned and artifacts is not None:
                    conn.execute(_INSERT_ARTIFACTS, artifacts)
                return owned

        # A connection dropped at COMMIT: the steps may be stored already (then not twice).
        stored = self._exists(
            lambda: select(StepRow.id).where(StepRow.run_id == run_id, StepRow.seq == first)
        )
        owned = retry_on_disconnect(insert, landed=stored)
        if not owned:
            self._leases.release(run_id)
            raise RunCancelled(f"run {run_id} was cancelled")
        if digest is not None:
            self._artifact_digests[run_id] = digest

    def _changed_artifacts(
        self, run_id: str, seq: int, state: dict[str, Any] | None
    ) -> tuple[dict[str, Any] | None, str | None]:
        """The artifacts row to keep as of step `seq` and its digest, when the artifacts changed
        since the last row kept (for re-runs from a later step); else (None, None)."""
        if state is None or not state.get("artifacts"):
            return None, None
        artifacts = state["artifacts"]
        digest = hashlib.sha256(
            json.dumps(artifacts, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        if self._artifact_digests.get(run_id) == digest:
            return None, None
        return {"run_id": run_id, "seq": seq, "artifacts": artifacts}, digest

    def artifacts_before(self, run_id: str, seq: int) -> dict[str, Any] | None:
        """The artifacts (saved form) a run had before its step `seq`, or None."""
        with self._session() as s:
            return s.scalar(
                select(RunArtifactsRow.artifacts)
                .where(RunArtifactsRow.run_id == run_id, RunArtifactsRow.seq < seq)
                .order_by(RunArtifactsRow.seq.desc())
                .limit(1)
            )

    def state_saved(self, run: Run, state: dict[str, Any]) -> None:
        """Commit the loop state alone: before tools start, so a crash while they run leaves a
        state that says which calls may have run (LoopState.running)."""
        mine = {"run": run.id, "me": _me(), "lease": lease_until(), "state": state}

        def save() -> int:
            with self.engine.begin() as conn:
                return conn.execute(_RENEW_WITH_STATE, mine).rowcount

        owned = retry_on_disconnect(save)  # the same values again: safe to repeat
        if not owned:
            self._leases.release(run.id)
            raise RunCancelled(f"run {run.id} was cancelled or taken over before its tools ran")

    def run_finished(self, run: Run) -> bool:
        """Close the run; token totals are summed from the steps actually stored. False when
        the run was cancelled meanwhile: it stays cancelled."""
        self._leases.release(run.id)
        self._artifact_digests.pop(run.id, None)

        values = {
            "run": run.id,
            "me": _me(),
            "p_status": str(run.status),
            "p_answer": run.model_dump(mode="json", include={"final_answer"})["final_answer"],
            "p_error": run.error,
            "p_outcome": run.outcome,
            "p_reasons": run.outcome_reasons or None,
            "p_provenance": run.provenance,
            "p_ended": run.ended_at or utcnow(),
        }

        def close() -> bool:  # one UPDATE: the token totals are its subqueries, no read before it
            with self.engine.begin() as conn:
                closed = conn.execute(_FINISH, values).rowcount == 1
                if not closed and conn.scalar(select(_RUNS.c.id).where(_RUNS.c.id == run.id)) is None:
                    raise ConfigError(f"run {run.id} was never started; call run_started(run) first")
                return closed

        # Cut off at COMMIT: the run may be closed already (its status is then the one written).
        closed = self._exists(
            lambda: select(RunRow.id).where(RunRow.id == run.id, RunRow.status == str(run.status))
        )
        return retry_on_disconnect(close, landed=closed)

    def run_paused(self, run: Run, checkpoint: dict[str, Any]) -> None:
        """Save the loop's state; it replaces the state of an earlier pause of the same run."""
        self._leases.release(run.id)

        def pause() -> None:  # safe to repeat: a second try matches nothing
            with self._session() as s, s.begin():
                s.execute(
                    update(RunRow)
                    .where(RunRow.id == run.id, RunRow.status == _RUNNING, RunRow.owner == _me())
                    .values(status=str(run.status), checkpoint=checkpoint, lease_until=None)
                )

        retry_on_disconnect(pause)

    def run_cancelled(self, run: Run, reason: str) -> None:
        """This process stops its own run (Ctrl-C, the studio's Stop): it ends `cancelled`."""
        self._leases.release(run.id)

        def stop() -> None:  # safe to repeat: a second try matches nothing
            with self._session() as s, s.begin():
                s.execute(
                    update(RunRow)
                    .where(RunRow.id == run.id, RunRow.status == _RUNNING, RunRow.owner == _me())
                    .values(
                        status=str(RunStatus.CANCELLED),
                        error=reason,
                        ended_at=utcnow(),
                        checkpoint=None,
                        lease_until=None,
                    )
                )

        retry_on_disconnect(stop)

    def cancel(self, run_id: str, *, by: str) -> Run:
        """A person cancels a run that is running (its process stops at its next step), waits
        for approval or was interrupted. A run that ended is left as it is (ConfigError)."""
        run = self.get_run(run_id)
        ending = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.INTERRUPTED)
        if run.status not in ending:
            raise ConfigError(f"run {run.id} already ended ({run.status}); there is nothing to cancel")
        with self._session() as s, s.begin():
            done = s.execute(
                update(RunRow)
                .where(
                    RunRow.id == run.id,
                    RunRow.status.in_([_RUNNING, str(RunStatus.WAITING_APPROVAL), str(RunStatus.QUEUED)]),
                )
                .values(
                    status=str(RunStatus.CANCELLED),
                    error=f"cancelled by {by}",
                    ended_at=utcnow(),
                    checkpoint=None,
                    lease_until=None,
                )
            ).rowcount
        if not done:
            raise ConfigError(
                f"run {run.id} ended while it was being cancelled; see `flowcall runs show {run.id[:8]}`"
            )
        return self.get_run(run.id)

    def run_resumed(self, run: Run) -> None:
        """Claim a paused, interrupted or queued run for this process: one compare-and-set, so
        of two resumers (CLI and studio, two tabs, two workers) exactly one goes on and the
        other gets a ConfigError. A queued run starts now: its started_at becomes the claim's.

        A paused run is claimed on its status; an interrupted one on its owner as the caller
        read it (that process is gone) and, for an owner on another host, an expired lease.
        The step count pins the state the caller read: a run that went on meanwhile has more
        steps. The state is kept until the next step commits a new one, so a resumer that dies
        at once leaves the run interrupted, with its state, for the next resume."""
        recorded = select(func.count()).select_from(StepRow).where(StepRow.run_id == run.id).scalar_subquery()
        claim = update(RunRow).where(RunRow.id == run.id, recorded == len(run.steps))
        started: dict[str, Any] = {}
        if run.status == RunStatus.QUEUED:
            claim = claim.where(RunRow.status == str(RunStatus.QUEUED))
            started["started_at"] = utcnow()
        elif run.status == RunStatus.INTERRUPTED:
            same_owner = RunRow.owner.is_(None) if run.owner is None else RunRow.owner == run.owner
            claim = claim.where(RunRow.status == _RUNNING, same_owner)
            if run.owner and not run.owner.startswith(this_process().split("/")[0] + "/"):
                claim = claim.where((RunRow.lease_until.is_(None)) | (RunRow.lease_until < utcnow()))
        else:
            claim = claim.where(RunRow.status == str(RunStatus.WAITING_APPROVAL))
        claim = claim.values(
            status=_RUNNING, owner=_me(), lease_until=lease_until(), **started
        ).execution_options(synchronize_session=False)  # a plain UPDATE: no read before it
        with self._session() as s, s.begin():
            claimed = s.execute(claim).rowcount
        if claimed != 1:
            raise ConfigError(_not_resumable(run.id))
        run.owner = _me()
        run.started_at = started.get("started_at", run.started_at)
        self._leases.hold(run.id)

    def get_checkpoint(self, run_id: str) -> dict[str, Any] | None:
        """The saved state of a run that waits for approval or was interrupted (read, not
        claimed: see run_resumed). An interrupted run may have none: it stopped before its
        first tool round committed, and goes on from its question; a queued run has none,
        unless it is a re-run (queue_rerun), which goes on from where it was cut."""
        run = self.get_run(run_id)  # a prefix becomes the whole id; the status is derived
        if run.status not in (RunStatus.QUEUED, RunStatus.WAITING_APPROVAL, RunStatus.INTERRUPTED):
            raise ConfigError(_not_resumable(run.id, run.status))
        with self._session() as s:
            checkpoint = s.get(RunRow, run.id).checkpoint
        if not checkpoint and run.status == RunStatus.WAITING_APPROVAL:
            raise ConfigError(
                f"run {run.id} waits for approval but has no saved state to go on from; "
                "ask its question again"
            )
        return checkpoint

    # --- Tool pins (ToolPins) -----------------------------------------------------------------

    def tool_pins(self, flow_name: str) -> dict[str, dict[str, Any]]:
        """tool version -> {"fingerprint", "definition"} as first accepted for this flow."""
        with self.engine.connect() as conn:  # read at every run's start: a plain statement, built once
            rows = conn.execute(_PINS, {"flow": flow_name})
            return {r.tool_version: {"fingerprint": r.fingerprint, "definition": r.definition} for r in rows}

    def pin_tool(self, flow_name: str, version: str, fingerprint: str, definition: dict[str, Any]) -> None:
        with self._session() as s, s.begin():
            row = s.scalars(
                select(ToolPinRow).where(
                    ToolPinRow.flow_name == flow_name, ToolPinRow.tool_version == version
                )
            ).first()
            if row is None:
                s.add(
                    ToolPinRow(
                        flow_name=flow_name,
                        tool_version=version,
                        fingerprint=fingerprint,
                        definition=definition,
                        pinned_at=utcnow(),
                    )
                )
            else:
                row.fingerprint, row.definition, row.pinned_at = fingerprint, definition, utcnow()

    # --- Grants (flowcall/trust/consent.py) ----------------------------------------------------------

    def granted_keys(self) -> set[str]:
        with self._session() as s:
            return set(s.scalars(select(GrantRow.key)))

    def grant(self, items: list[Any], *, by: str) -> None:
        """Record a person's grant of each TrustItem (kind, subject, summary, key)."""
        with self._session() as s, s.begin():
            for item in items:
                if s.get(GrantRow, item.key) is None:
                    s.add(
                        GrantRow(
                            key=item.key,
                            kind=item.kind,
                            subject=item.subject,
                            summary=item.summary,
                            granted_by=by,
                            granted_at=utcnow(),
                        )
                    )

    def list_grants(self) -> list[dict[str, Any]]:
        with self._session() as s:
            rows = s.scalars(select(GrantRow).order_by(GrantRow.granted_at)).all()
            return [
                {
                    "key": r.key,
                    "kind": r.kind,
                    "subject": r.subject,
                    "summary": r.summary,
                    "granted_by": r.granted_by,
                    "granted_at": r.granted_at,
                }
                for r in rows
            ]

    def revoke(self, key_prefix: str) -> list[dict[str, Any]]:
        """Revoke the grants whose key starts with `key_prefix` (at least 8 characters)."""
        if len(key_prefix) < 8:
            raise ConfigError("give at least 8 characters of the grant's key (see `flowcall trust --list`)")
        with self._session() as s, s.begin():
            rows = s.scalars(
                select(GrantRow).where(GrantRow.key.startswith(key_prefix, autoescape=True))
            ).all()
            if not rows:
                raise ConfigError(
                    f"no grant has a key starting with {key_prefix!r}; see `flowcall trust --list`"
                )
            gone = [{"key": r.key, "summary": r.summary} for r in rows]
            for row in rows:
                s.delete(row)
            return gone

    # --- Flows --------------------------------------------------------------------------------

    def save_flow(self, flow: Flow, *, api_key: str | None = None) -> tuple[int, int]:
        """Store `flow` as a new version unless it equals the latest; returns (version_id, version).
        `api_key`: the name of the API key that imports it, kept with a flow it creates."""
        try:
            return self._save_flow(flow, api_key)
        except IntegrityError:
            # Another process saved the same flow at the same moment: retry on its result.
            return self._save_flow(flow, api_key)

    def _save_flow(self, flow: Flow, api_key: str | None = None) -> tuple[int, int]:
        spec_hash = flow.content_hash()
        with self._session() as s, s.begin():
            flow_row = s.scalar(select(FlowRow).where(FlowRow.name == flow.name))
            if flow_row is None:
                flow_row = FlowRow(name=flow.name, api_key=api_key)
                s.add(flow_row)
                s.flush()
            if flow.layout is not None:  # the layout belongs to the flow, whatever its version
                flow_row.layout = flow.layout.model_dump(mode="json")
            latest = s.scalar(
                select(FlowVersionRow)
                .where(FlowVersionRow.flow_id == flow_row.id)
                .order_by(FlowVersionRow.version.desc())
                .limit(1)
            )
            if latest is not None and latest.spec_hash == spec_hash:
                return latest.id, latest.version
            row = FlowVersionRow(
                flow_id=flow_row.id,
                version=latest.version + 1 if latest else 1,
                spec=flow.model_dump(mode="json"),
                spec_hash=spec_hash,
            )
            s.add(row)
            s.flush()
            return row.id, row.version

    def get_flow(self, name: str, version: int | None = None) -> tuple[Flow, int, int]:
        """The latest (or the given) version of a flow: (flow, version_id, version)."""
        with self._session() as s:
            flow_id = s.scalar(select(FlowRow.id).where(FlowRow.name == name))
            if flow_id is None:
                known = ", ".join(s.scalars(select(FlowRow.name).order_by(FlowRow.name))) or "none yet"
                raise NotFoundError(f"no flow named {name!r}; known flows: {known}")
            layout = s.scalar(select(FlowRow.layout).where(FlowRow.id == flow_id))
            query = select(FlowVersionRow).where(FlowVersionRow.flow_id == flow_id)
            if version is None:
                query = query.order_by(FlowVersionRow.version.desc()).limit(1)
            else:
                query = query.where(FlowVersionRow.version == version)
            row = s.scalar(query)
            if row is None:
                versions = list(
                    s.scalars(
                        select(FlowVersionRow.version)
                        .where(FlowVersionRow.flow_id == flow_id)
                        .order_by(FlowVersionRow.version)
                    )
                )
                raise NotFoundError(f"flow {name!r} has no version {version}; it has versions {versions}")
            flow = Flow.model_validate(row.spec, context=STORED)
            flow.layout = _layout(layout)
            return flow, row.id, row.version

    def find_version(self, name: str, spec_hash: str) -> tuple[int, int] | None | bool:
        """(version_id, version) of flow `name`'s version with this content; None when no flow
        has that name; False when it exists but has no such version."""
        with self._session() as s:
            flow_id = s.scalar(select(FlowRow.id).where(FlowRow.name == name))
            if flow_id is None:
                return None
            row = s.scalar(
                select(FlowVersionRow)
                .where(FlowVersionRow.flow_id == flow_id, FlowVersionRow.spec_hash == spec_hash)
                .order_by(FlowVersionRow.version.desc())
                .limit(1)
            )
            return (row.id, row.version) if row is not None else False

    def get_flow_version(self, version_id: int) -> Flow:
        """The flow exactly as a run ran it (runs point at a version id)."""
        with self._session() as s:
            row = s.get(FlowVersionRow, version_id)
            if row is None:
                raise NotFoundError(f"flow version {version_id} does not exist (its flow was deleted?)")
            return Flow.model_validate(row.spec, context=STORED)

    def list_flows(self) -> list[dict[str, Any]]:
        """One entry per flow, by name: name, version, version_id, updated_at, description."""
        with self._session() as s:
            return [
                {
                    "name": name,
                    "version": row.version,
                    "version_id": row.id,
                    "updated_at": row.created_at,
                    "description": row.spec.get("description", ""),
                }
                for name, row in s.execute(_LATEST_VERSIONS)
            ]

    def latest_flows(self) -> list[Flow]:
        """The latest version of every saved flow, by name."""
        with self._session() as s:
            return [Flow.model_validate(row.spec, context=STORED) for _, row in s.execute(_LATEST_VERSIONS)]

    def flow_versions(self, name: str) -> list[dict[str, Any]]:
        """Every version of a flow, newest first: version, version_id, spec_hash, created_at."""
        with self._session() as s:
            rows = s.scalars(
                select(FlowVersionRow)
                .join(FlowRow)
                .where(FlowRow.name == name)
                .order_by(FlowVersionRow.version.desc())
            ).all()
        if not rows:
            self.get_flow(name)  # raises the "no flow named ..." error
        return [_version_info(r) for r in rows]

    def delete_flow(self, name: str) -> None:
        """Delete a flow and its versions; its runs stay, with flow_version_id set to NULL.

        Runs are the record of what happened, so they outlive the flow: they keep flow_name, and
        every step holds the literal request sent, which is what a replay needs. The database
        does the work (ON DELETE CASCADE / SET NULL), so it is the same for every client.
        """
        with self._session() as s, s.begin():
            if s.execute(delete(FlowRow).where(FlowRow.name == name)).rowcount == 0:
                raise NotFoundError(f"no flow named {name!r} to delete")

    # --- Runs ---------------------------------------------------------------------------------

    def list_runs(
        self,
        flow_name: str | None = None,
        status: RunStatus | str | None = None,
        limit: int = 50,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        model: str | None = None,
        text: str | None = None,
        api_key: str | None = None,
    ) -> list[Run]:
        """Newest first, without steps (use get_run for those). `model` matches runs with a
        model or polish step whose provider/model name contains it; `text`, runs whose question
        contains it (any case); `api_key`, the runs that API key started. `interrupted` and
        `running` are told apart on reading (a running run's owner is alive or not), so both
        select the stored `running` rows and then filter."""
        query = select(RunRow).order_by(RunRow.started_at.desc(), RunRow.id.desc())
        if flow_name is not None:
            query = query.where(RunRow.flow_name == flow_name)
        if api_key is not None:
            query = query.where(RunRow.api_key == api_key)
        wanted = None
        if status is not None:
            if status not in set(RunStatus):
                raise ConfigError(f"unknown run status {status!r}; use one of {[str(x) for x in RunStatus]}")
            wanted = RunStatus(status)
            stored = _RUNNING if wanted == RunStatus.INTERRUPTED else str(wanted)
            query = query.where(RunRow.status == stored)
        if since is not None:
            query = query.where(RunRow.started_at >= since)
        if until is not None:
            query = query.where(RunRow.started_at < until)
        if text:
            query = query.where(RunRow.question.icontains(text, autoescape=True))
        if model:
            used = select(StepRow.run_id).where(
                StepRow.kind.in_(["model_call", "polish"]), StepRow.name.contains(model, autoescape=True)
            )
            query = query.where(RunRow.id.in_(used))
        if wanted not in (RunStatus.RUNNING, RunStatus.INTERRUPTED):
            query = query.limit(limit)  # else filtered after reading: the limit applies to what is kept
        with self._session() as s:
            runs = (_run_from_row(r) for r in s.scalars(query))
            return [r for r in runs if wanted is None or r.status == wanted][:limit]

    def run_models(self) -> list[str]:
        """Every provider/model name that answered in some run: the inspector's model filter."""
        with self._session() as s:
            names = s.scalars(
                select(StepRow.name).where(StepRow.kind.in_(["model_call", "polish"])).distinct()
            )
            return sorted(n for n in names if n)

    def check_import(self, run: Run, source: str = "run file") -> None:
        """Refuse (ConfigError) a run that cannot be stored as it is, before anything is written:
        a step that belongs to another run, two steps with one number, a key longer than its
        column or an integer beyond the database's. So an import stores all of it or nothing."""
        problems: list[str] = []
        seqs: set[int] = set()
        for step in run.steps:
            if step.run_id != run.id:
                problems.append(
                    f"step {step.seq} belongs to run {step.run_id[:40]!r}, not to {run.id[:40]!r}"
                )
            if step.seq in seqs:
                problems.append(f"two steps are numbered {step.seq}")
            seqs.add(step.seq)
        rows = [_run_to_row(run), *(_step_to_row(step) for step in run.steps[:10_000])]
        problems += [problem for row in rows for problem in misfits(row)]
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise ConfigError(
                f"{source} cannot be imported: "
                + "; ".join(problems[:3])
                + more
                + "; export the run again or fix the file"
            )

    def import_run(self, run: Run) -> Run:
        """Store a run exported elsewhere (or here) with its steps. An id already taken gets a
        new one, so importing never overwrites a record."""
        with self._session() as s, s.begin():
            if s.get(RunRow, run.id) is not None:
                new_id = str(uuid.uuid4())
                run = run.model_copy(
                    update={
                        "id": new_id,
                        "steps": [st.model_copy(update={"run_id": new_id}) for st in run.steps],
                    }
                )
            row = _run_to_row(run)
            row.tokens_in, row.tokens_out = run.tokens_in, run.tokens_out
            s.add(row)
            s.flush()
            s.add_all(_step_to_row(step) for step in run.steps)
        return self.get_run(run.id)

    def find_run(self, run_id: str, *, api_key: str | None = None) -> Run | None:
        """The run with exactly this id (no prefix), with its steps; with `api_key`, only if that
        API key started it. None otherwise: the HTTP API's lookup, where a prefix would be an
        oracle for runs the caller may not see."""
        with self._session() as s:
            query = select(RunRow).where(RunRow.id == run_id)
            if api_key is not None:
                query = query.where(RunRow.api_key == api_key)
            row = s.scalar(query)
            if row is None:
                return None
            return _with_steps(s, row)

    def child_runs(self, run_id: str) -> list[Run]:
        """The runs a run's sub-flow calls started (engine/subflows.py), oldest first, without steps."""
        query = select(RunRow).where(RunRow.parent_run_id == run_id).order_by(RunRow.started_at, RunRow.id)
        with self._session() as s:
            return [_run_from_row(row) for row in s.scalars(query)]

    def get_run(self, run_id: str) -> Run:
        """A run with its steps in order; `run_id` may be a unique prefix, as git does for commits."""
        if not run_id:
            raise ConfigError("give a run id (or a unique prefix of one); `flowcall runs` lists them")
        with self._session() as s:
            row = s.get(RunRow, run_id)
            if row is None:
                by_prefix = select(RunRow).where(RunRow.id.startswith(run_id, autoescape=True)).limit(2)
                matches = s.scalars(by_prefix).all()
                if len(matches) != 1:
                    problem = "no run" if not matches else "more than one run"
                    raise NotFoundError(
                        f"{problem} has an id starting with {run_id!r}; "
                        "give the whole id or a longer prefix (`flowcall runs` lists them)"
                    )
                row = matches[0]
            return _with_steps(s, row)

    # --- Tasks (the create_task plugin) -------------------------------------------------------

    def add_task(self, title: str, priority: int, due_date: date | None) -> dict[str, Any]:
        with self._session() as s, s.begin():
            row = TaskRow(title=title, priority=priority, due_date=due_date)
            s.add(row)
            s.flush()
            return _task_dict(row)

    def list_tasks(self) -> list[dict[str, Any]]:
        """Oldest first, the order they were made in."""
        with self._session() as s:
            return [_task_dict(r) for r in s.scalars(select(TaskRow).order_by(TaskRow.id))]


_stores: dict[str, Store] = {}
_lock = threading.Lock()


def open_store(url: str | None = None) -> Store:
    """The process's Store for `url` (default: the configured database), opened once and shared."""
    key = url or config.database_url()
    with _lock:
        if key not in _stores:
            _stores[key] = Store.open(key)
        return _stores[key]
