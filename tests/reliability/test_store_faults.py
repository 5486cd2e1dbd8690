"""The store under faults (flowcall/store/db.py): values PostgreSQL refuses (NaN, NUL), and the
database connection dropped mid-run (pg_terminate_backend)."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError, OperationalError

from flowcall.core.steps import Run, RunStatus, Step, StepKind
from flowcall.store import Store
from flowcall.store.db import NUL_REPLACEMENT, retry_on_disconnect
from flowcall.store.models import RunRow

# The store tests' databases: db_url is an empty SQLite file, then a PostgreSQL database.
from tests.store.conftest import db_url, pg_database  # noqa: F401
from tests.support.reliability import db_drop_runs


@pytest.fixture
def store(db_url: str):  # noqa: F811
    opened = Store.open(db_url)
    yield opened
    opened.close()


def _run_with(store: Store, question: str = "q", **step_fields) -> Run:
    run = Run(id="00000000-0000-4000-8000-00000000000a", flow_name="f", question=question, trace_id="t")
    store.run_started(run)
    step = Step(run_id=run.id, seq=1, kind=StepKind.TOOL_CALL, **step_fields)
    record = getattr(store, "steps_recorded", None)
    if record is not None:
        record([step])
    else:
        store.step_recorded(step)
    run.status = RunStatus.SUCCEEDED
    store.run_finished(run)
    return store.get_run(run.id)


def test_nan_and_infinity_are_stored_alike_on_both_databases(store: Store) -> None:
    """A model may write NaN in its arguments (Python's json reads it), a tool may return it; the
    engine's saved state holds such values as they are. PostgreSQL's json refuses NaN, so the
    write (and the run) would fail there: every JSON column stores them as strings instead."""
    run = _run_with(store)
    state = {"v": 1, "x": float("nan"), "y": [float("inf"), -float("inf"), 1.5]}
    with store.engine.begin() as conn:
        conn.execute(update(RunRow).where(RunRow.id == run.id).values(checkpoint=state))
    with store.engine.connect() as conn:
        saved = conn.execute(select(RunRow.checkpoint).where(RunRow.id == run.id)).scalar_one()
    assert saved == {"v": 1, "x": "NaN", "y": ["Infinity", "-Infinity", 1.5]}


def test_a_nul_character_never_stops_a_step_from_recording(store: Store) -> None:
    stored = _run_with(
        store, question="a\x00b", name="probe", error_message="failed: \x00", result="nul \x00 in json"
    )
    step = stored.steps[0]
    assert step.result == "nul \x00 in json"  # JSON text escapes it: kept on both databases
    if store.engine.dialect.name == "postgresql":  # PostgreSQL text cannot hold it
        assert (
            stored.question == f"a{NUL_REPLACEMENT}b" and step.error_message == f"failed: {NUL_REPLACEMENT}"
        )
    else:
        assert stored.question == "a\x00b" and step.error_message == "failed: \x00"


def _dropped() -> OperationalError:
    return OperationalError(
        "INSERT ...",
        {},
        Exception("terminating connection due to administrator command"),
        connection_invalidated=True,
    )


def test_retry_on_disconnect_runs_the_transaction_again_only_for_a_dropped_connection() -> None:
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise _dropped()
        return "done"

    assert retry_on_disconnect(flaky, wait_s=0) == "done" and len(calls) == 3

    def always() -> None:
        raise _dropped()

    with pytest.raises(OperationalError):
        retry_on_disconnect(always, attempts=2, wait_s=0)

    other = []

    def constraint() -> None:
        other.append(1)
        raise IntegrityError("INSERT ...", {}, Exception("duplicate key"))

    with pytest.raises(IntegrityError):
        retry_on_disconnect(constraint, wait_s=0)
    assert len(other) == 1  # not a disconnect: raised at once


def test_a_commit_that_landed_before_the_connection_dropped_is_not_made_twice() -> None:
    made = []

    def insert() -> None:
        made.append(1)
        raise _dropped()  # the commit went through, the answer did not

    assert retry_on_disconnect(insert, wait_s=0, landed=lambda: bool(made)) is True
    assert len(made) == 1


@pytest.mark.postgres
def test_runs_whose_connections_are_dropped_mid_run_end_recorded(pg_database: str) -> None:  # noqa: F811
    """The store as it is: a run whose connection is dropped must end recorded (succeeded, or
    failed with a clear error), never stay `running` with the exception escaping the engine.
    The Store's StepSink writes go through db.retry_on_disconnect."""
    figures = db_drop_runs(pg_database)
    assert all(f.ok for f in figures), [f.line() for f in figures]
