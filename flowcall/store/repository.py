"""The repository: flows (versioned), runs and their steps, tasks.

`Store` is the engine's StepSink. Each call is its own short transaction, so a step is on
disk the moment `step_recorded` returns, and another process (the UI) can watch a run grow.
"""

from __future__ import annotations

import threading
import uuid
from datetime import date, datetime
from typing import Any

from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from flowcall import config
from flowcall.errors import ConfigError
from flowcall.spec import Flow
from flowcall.steps import REUSED_NOTE, Run, RunStatus, Step, utcnow
from flowcall.store.db import make_engine
from flowcall.store.migrate import upgrade
from flowcall.store.models import FlowRow, FlowVersionRow, GrantRow, RunRow, StepRow, TaskRow, ToolPinRow

_TIMES = {"started_at", "ended_at"}


# --- The one place where ORM rows and pydantic records meet. ---------------------------------
# JSON-mode dumps turn enums into their values (psycopg would write an Enum's *name*) and make
# nested values JSON-safe; datetimes are passed as objects for the timezone-aware columns.


def _step_to_row(step: Step) -> StepRow:
    data = step.model_dump(mode="json", exclude=_TIMES)
    return StepRow(**data, started_at=step.started_at, ended_at=step.ended_at)


def _step_from_row(row: StepRow) -> Step:
    return Step.model_validate({name: getattr(row, name) for name in Step.model_fields})


def _run_to_row(run: Run) -> RunRow:
    data = run.model_dump(mode="json", exclude=_TIMES | {"steps"})
    return RunRow(**data, started_at=run.started_at, ended_at=run.ended_at, tokens_in=0, tokens_out=0)


def _run_from_row(row: RunRow, steps: list[StepRow] | None = None) -> Run:
    data = {name: getattr(row, name) for name in Run.model_fields if name != "steps"}
    return Run.model_validate({**data, "steps": [_step_from_row(s) for s in steps or []]})


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
    now = f" (it is {status}, not waiting for approval)" if status else ""
    return f"run {run_id} is already being resumed (or finished); see `flowcall runs show {run_id}`{now}"


class Store:
    """All persistence of FlowCall behind one object; open it with `Store.open()`."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

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
        self.engine.dispose()

    def _session(self) -> Session:
        return self._sessions()

    # --- StepSink -----------------------------------------------------------------------------

    def run_started(self, run: Run) -> None:
        with self._session() as s, s.begin():
            s.add(_run_to_row(run))

    def step_recorded(self, step: Step) -> None:
        """Insert and commit at once: a crash later in the run keeps this step."""
        with self._session() as s, s.begin():
            if s.get(RunRow, step.run_id) is None:
                raise ConfigError(
                    f"step {step.seq} belongs to run {step.run_id}, which was never started; "
                    "call run_started(run) first"
                )
            s.add(_step_to_row(step))

    def run_finished(self, run: Run) -> None:
        """Close the run; token totals are summed from the steps actually stored."""
        with self._session() as s, s.begin():
            totals = select(
                func.coalesce(func.sum(StepRow.tokens_in), 0), func.coalesce(func.sum(StepRow.tokens_out), 0)
            ).where(StepRow.run_id == run.id,  # a re-run's reused steps were spent by the run it re-ran
                    ~func.coalesce(StepRow.note, "").contains(REUSED_NOTE, autoescape=True))
            tokens_in, tokens_out = s.execute(totals).one()
            result = s.execute(
                update(RunRow)
                .where(RunRow.id == run.id)
                .values(
                    status=str(run.status),
                    final_answer=run.model_dump(mode="json", include={"final_answer"})["final_answer"],
                    error=run.error,
                    ended_at=run.ended_at or utcnow(),
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    checkpoint=None,  # a finished run has no paused state left to resume from
                )
            )
            if result.rowcount == 0:
                raise ConfigError(f"run {run.id} was never started; call run_started(run) first")

    def run_paused(self, run: Run, checkpoint: dict[str, Any]) -> None:
        """Save the loop's state; it replaces the state of an earlier pause of the same run."""
        with self._session() as s, s.begin():
            s.execute(update(RunRow).where(RunRow.id == run.id).values(status=str(run.status), checkpoint=checkpoint))

    def run_resumed(self, run: Run) -> None:
        """Claim a paused run for this process: one compare-and-set on its status, so of two
        resumers (CLI and studio, two tabs) exactly one goes on and the other gets a ConfigError.

        The step count pins the pause the caller read: a run resumed and paused again meanwhile
        has more steps, and is not claimed with the older state. The checkpoint is kept: it is
        replaced when the run pauses again and cleared when it finishes, so a process that dies
        after claiming leaves the paused state in the database (the run stays `running`; nothing
        detects the dead process yet, so `runs resume` refuses it like any claimed run)."""
        recorded = select(func.count()).select_from(StepRow).where(StepRow.run_id == run.id).scalar_subquery()
        claim = (
            update(RunRow)
            .where(RunRow.id == run.id, RunRow.status == str(RunStatus.WAITING_APPROVAL), recorded == len(run.steps))
            .values(status=str(RunStatus.RUNNING))
            .execution_options(synchronize_session=False)  # a plain UPDATE: no read before it
        )
        with self._session() as s, s.begin():
            claimed = s.execute(claim).rowcount
        if claimed != 1:
            raise ConfigError(_not_resumable(run.id))

    def get_checkpoint(self, run_id: str) -> dict[str, Any]:
        """The saved state of a run that waits for approval (read, not claimed: see run_resumed)."""
        run_id = self.get_run(run_id).id  # a prefix becomes the whole id
        with self._session() as s:
            row = s.get(RunRow, run_id)
            status, checkpoint = row.status, row.checkpoint
        if status != RunStatus.WAITING_APPROVAL:
            raise ConfigError(_not_resumable(run_id, status))
        if not checkpoint:
            raise ConfigError(f"run {run_id} waits for approval but has no saved state to go on from; "
                              "ask its question again")
        return checkpoint

    # --- Tool pins (ToolPins) -----------------------------------------------------------------

    def tool_pins(self, flow_name: str) -> dict[str, dict[str, Any]]:
        """tool version -> {"fingerprint", "definition"} as first accepted for this flow."""
        with self._session() as s:
            rows = s.scalars(select(ToolPinRow).where(ToolPinRow.flow_name == flow_name)).all()
            return {r.tool_version: {"fingerprint": r.fingerprint, "definition": r.definition} for r in rows}

    def pin_tool(self, flow_name: str, version: str, fingerprint: str, definition: dict[str, Any]) -> None:
        with self._session() as s, s.begin():
            row = s.scalars(select(ToolPinRow).where(ToolPinRow.flow_name == flow_name,
                                                     ToolPinRow.tool_version == version)).first()
            if row is None:
                s.add(ToolPinRow(flow_name=flow_name, tool_version=version, fingerprint=fingerprint,
                                 definition=definition, pinned_at=utcnow()))
            else:
                row.fingerprint, row.definition, row.pinned_at = fingerprint, definition, utcnow()

    # --- Grants (flowcall/trust.py) ----------------------------------------------------------

    def granted_keys(self) -> set[str]:
        with self._session() as s:
            return set(s.scalars(select(GrantRow.key)))

    def grant(self, items: list[Any], *, by: str) -> None:
        """Record a person's grant of each TrustItem (kind, subject, summary, key)."""
        with self._session() as s, s.begin():
            for item in items:
                if s.get(GrantRow, item.key) is None:
                    s.add(GrantRow(key=item.key, kind=item.kind, subject=item.subject, summary=item.summary,
                                   granted_by=by, granted_at=utcnow()))

    def list_grants(self) -> list[dict[str, Any]]:
        with self._session() as s:
            rows = s.scalars(select(GrantRow).order_by(GrantRow.granted_at)).all()
            return [{"key": r.key, "kind": r.kind, "subject": r.subject, "summary": r.summary,
                     "granted_by": r.granted_by, "granted_at": r.granted_at} for r in rows]

    def revoke(self, key_prefix: str) -> list[dict[str, Any]]:
        """Revoke the grants whose key starts with `key_prefix` (at least 8 characters)."""
        if len(key_prefix) < 8:
            raise ConfigError("give at least 8 characters of the grant's key (see `flowcall trust --list`)")
        with self._session() as s, s.begin():
            rows = s.scalars(select(GrantRow).where(GrantRow.key.startswith(key_prefix, autoescape=True))).all()
            if not rows:
                raise ConfigError(f"no grant has a key starting with {key_prefix!r}; see `flowcall trust --list`")
            gone = [{"key": r.key, "summary": r.summary} for r in rows]
            for row in rows:
                s.delete(row)
            return gone

    # --- Flows --------------------------------------------------------------------------------

    def save_flow(self, flow: Flow) -> tuple[int, int]:
        """Store `flow` as a new version unless it equals the latest; returns (version_id, version)."""
        try:
            return self._save_flow(flow)
        except IntegrityError:
            # Another process saved the same flow at the same moment: retry on its result.
            return self._save_flow(flow)

    def _save_flow(self, flow: Flow) -> tuple[int, int]:
        spec_hash = flow.content_hash()
        with self._session() as s, s.begin():
            flow_row = s.scalar(select(FlowRow).where(FlowRow.name == flow.name))
            if flow_row is None:
                flow_row = FlowRow(name=flow.name)
                s.add(flow_row)
                s.flush()
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
                raise ConfigError(f"no flow named {name!r}; known flows: {known}")
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
                raise ConfigError(f"flow {name!r} has no version {version}; it has versions {versions}")
            return Flow.model_validate(row.spec), row.id, row.version

    def find_version(self, name: str, spec_hash: str) -> tuple[int, int] | None | bool:
        """(version_id, version) of flow `name`'s version with this content; None when no flow
        has that name; False when it exists but has no such version."""
        with self._session() as s:
            flow_id = s.scalar(select(FlowRow.id).where(FlowRow.name == name))
            if flow_id is None:
                return None
            row = s.scalar(select(FlowVersionRow).where(FlowVersionRow.flow_id == flow_id,
                                                        FlowVersionRow.spec_hash == spec_hash)
                           .order_by(FlowVersionRow.version.desc()).limit(1))
            return (row.id, row.version) if row is not None else False

    def get_flow_version(self, version_id: int) -> Flow:
        """The flow exactly as a run ran it (runs point at a version id)."""
        with self._session() as s:
            row = s.get(FlowVersionRow, version_id)
            if row is None:
                raise ConfigError(f"flow version {version_id} does not exist (its flow was deleted?)")
            return Flow.model_validate(row.spec)

    def list_flows(self) -> list[dict[str, Any]]:
        """One entry per flow, by name: name, version, version_id, updated_at, description."""
        latest = (
            select(FlowVersionRow.flow_id, func.max(FlowVersionRow.version).label("version"))
            .group_by(FlowVersionRow.flow_id)
            .subquery()
        )
        query = (
            select(FlowRow.name, FlowVersionRow)
            .join(latest, latest.c.flow_id == FlowRow.id)
            .join(
                FlowVersionRow,
                (FlowVersionRow.flow_id == FlowRow.id) & (FlowVersionRow.version == latest.c.version),
            )
            .order_by(FlowRow.name)
        )
        with self._session() as s:
            return [
                {
                    "name": name,
                    "version": row.version,
                    "version_id": row.id,
                    "updated_at": row.created_at,
                    "description": row.spec.get("description", ""),
                }
                for name, row in s.execute(query)
            ]

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
                raise ConfigError(f"no flow named {name!r} to delete")

    # --- Runs ---------------------------------------------------------------------------------

    def list_runs(
        self, flow_name: str | None = None, status: RunStatus | str | None = None, limit: int = 50, *,
        since: datetime | None = None, until: datetime | None = None, model: str | None = None,
        text: str | None = None,
    ) -> list[Run]:
        """Newest first, without steps (use get_run for those). `model` matches runs with a
        model or polish step whose provider/model name contains it; `text`, runs whose question
        contains it (any case)."""
        query = select(RunRow).order_by(RunRow.started_at.desc(), RunRow.id.desc()).limit(limit)
        if flow_name is not None:
            query = query.where(RunRow.flow_name == flow_name)
        if status is not None:
            if status not in set(RunStatus):
                raise ConfigError(f"unknown run status {status!r}; use one of {[str(x) for x in RunStatus]}")
            query = query.where(RunRow.status == str(RunStatus(status)))
        if since is not None:
            query = query.where(RunRow.started_at >= since)
        if until is not None:
            query = query.where(RunRow.started_at < until)
        if text:
            query = query.where(RunRow.question.icontains(text, autoescape=True))
        if model:
            used = select(StepRow.run_id).where(StepRow.kind.in_(["model_call", "polish"]),
                                                StepRow.name.contains(model, autoescape=True))
            query = query.where(RunRow.id.in_(used))
        with self._session() as s:
            return [_run_from_row(r) for r in s.scalars(query)]

    def run_models(self) -> list[str]:
        """Every provider/model name that answered in some run: the inspector's model filter."""
        with self._session() as s:
            names = s.scalars(select(StepRow.name).where(StepRow.kind.in_(["model_call", "polish"])).distinct())
            return sorted(n for n in names if n)

    def import_run(self, run: Run) -> Run:
        """Store a run exported elsewhere (or here) with its steps. An id already taken gets a
        new one, so importing never overwrites a record."""
        with self._session() as s, s.begin():
            if s.get(RunRow, run.id) is not None:
                new_id = str(uuid.uuid4())
                run = run.model_copy(update={"id": new_id,
                                             "steps": [st.model_copy(update={"run_id": new_id}) for st in run.steps]})
            row = _run_to_row(run)
            row.tokens_in, row.tokens_out = run.tokens_in, run.tokens_out
            s.add(row)
            s.flush()
            s.add_all(_step_to_row(step) for step in run.steps)
        return self.get_run(run.id)

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
                    raise ConfigError(
                        f"{problem} has an id starting with {run_id!r}; "
                        "give the whole id or a longer prefix (`flowcall runs` lists them)"
                    )
                row = matches[0]
            steps = s.scalars(select(StepRow).where(StepRow.run_id == row.id).order_by(StepRow.seq))
            return _run_from_row(row, list(steps))

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
