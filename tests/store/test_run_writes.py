"""A run's writes (the Store as StepSink) on SQLite and PostgreSQL: one transaction per sink
call, no read before a write, and still every guarantee: a cancelled run raises RunCancelled at
its next write and stays cancelled, a run taken over gets nothing, the state committed before
tools run stays. Counted with SQLAlchemy's events, never timed."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from sqlalchemy import event, func, select, update

from flowcall.core.errors import ConfigError
from flowcall.core.steps import REUSED_NOTE, Run, RunCancelled, RunStatus, Step, StepKind
from flowcall.store import Store
from flowcall.store.models import RunArtifactsRow, RunRow, StepRow


def _run() -> Run:
    return Run(
        id=str(uuid.uuid4()),
        flow_name="writes",
        question="q",
        trace_id=uuid.uuid4().hex,
        started_at=datetime.now(UTC),
    )


def _step(run: Run, seq: int, kind: StepKind = StepKind.MODEL_CALL, **fields: object) -> Step:
    return Step(run_id=run.id, seq=seq, kind=kind, **fields)


@dataclass
class Statements:
    """What a block of writes sent: each statement's first word, and the transactions committed."""

    sent: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)  # the SELECTs in full
    commits: int = 0

    def count(self, word: str) -> int:
        return sum(1 for s in self.sent if s == word)


@contextmanager
def counting(store: Store) -> Iterator[Statements]:
    seen = Statements()

    def sent(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001
        seen.sent.append(statement.split(None, 1)[0].upper())
        if seen.sent[-1] == "SELECT":
            seen.reads.append(statement)

    def committed(conn) -> None:  # noqa: ANN001
        seen.commits += 1

    event.listen(store.engine, "before_cursor_execute", sent)
    event.listen(store.engine, "commit", committed)
    try:
        yield seen
    finally:
        event.remove(store.engine, "before_cursor_execute", sent)
        event.remove(store.engine, "commit", committed)


def _three_rounds(store: Store, run: Run) -> int:
    """The sink calls of a run of three tool rounds and an answer, as the engine makes them:
    per round the model's step, the state saved before its tools, the tool steps with the state
    after them; then the answer and the end. Returns how many calls that was."""
    calls, seq = 0, 0
    store.run_started(run)
    calls += 1
    for round_no in (1, 2, 3):
        seq += 1
        store.steps_recorded([_step(run, seq, round=round_no, tokens_in=10, tokens_out=2)])
        store.state_saved(run, {"v": 1, "round_no": round_no, "running": [f"c{round_no}"]})
        seq += 2
        store.steps_recorded(
            [
                _step(run, seq - 1, StepKind.TOOL_CALL, round=round_no, result="a"),
                _step(run, seq, StepKind.TOOL_CALL, round=round_no, result="b"),
            ],
            {"v": 1, "round_no": round_no, "running": []},
        )
        calls += 3
    store.steps_recorded([_step(run, seq + 1, round=4, tokens_in=10, tokens_out=5)])
    run.status, run.final_answer, run.ended_at = RunStatus.SUCCEEDED, "done", datetime.now(UTC)
    assert store.run_finished(run)
    return calls + 2


def test_a_run_commits_once_per_write_and_reads_nothing(store: Store) -> None:
    store.run_started(_run())  # the first connection, its set-up statements (pragmas) and a first run
    run = _run()
    with counting(store) as seen:
        calls = _three_rounds(store, run)
    assert seen.commits == calls == 12  # one transaction per sink call
    assert seen.reads == []  # no read in the hot path: ownership is the write's rowcount
    # a round: its state (an UPDATE) and its steps; the state before tools: one UPDATE; the end:
    # one UPDATE that sums the tokens in place; a step alone: on SQLite one INSERT that checks
    # ownership itself, on PostgreSQL the run's row first (see test_a_step_written_while_...)
    alone = 4
    lease_updates = alone if store.engine.dialect.name == "postgresql" else 0
    assert seen.count("INSERT") == 1 + alone + 3, seen.sent
    assert seen.count("UPDATE") == 3 + 3 + 1 + lease_updates, seen.sent
    stored = store.get_run(run.id)
    assert stored.status is RunStatus.SUCCEEDED and [s.seq for s in stored.steps] == list(range(1, 11))
    assert (stored.tokens_in, stored.tokens_out) == (40, 11)
    with store.engine.connect() as conn:
        assert conn.execute(
            select(RunRow.tokens_in, RunRow.tokens_out, RunRow.checkpoint).where(RunRow.id == run.id)
        ).one() == (40, 11, None)


def _cancel(store: Store, run: Run) -> None:
    store.cancel(run.id, by="a test")


@pytest.mark.parametrize("write", ["step", "steps with state", "state before tools"])
def test_a_run_cancelled_elsewhere_raises_at_its_next_write_and_stays_cancelled(
    open_stores: Callable[[], Store], write: str
) -> None:
    runner, person = open_stores(), open_stores()  # two engines, like a worker and the studio
    run = _run()
    runner.run_started(run)
    runner.steps_recorded([_step(run, 1)])
    runner.state_saved(run, {"v": 1, "running": ["c1"]})
    _cancel(person, run)

    with pytest.raises(RunCancelled):
        if write == "step":
            runner.steps_recorded([_step(run, 2, StepKind.ERROR)])
        elif write == "steps with state":
            runner.steps_recorded(
                [_step(run, 2, StepKind.TOOL_CALL), _step(run, 3, StepKind.TOOL_CALL)],
                {"v": 1, "running": [], "artifacts": {"t": 1}},
            )
        else:
            runner.state_saved(run, {"v": 1, "running": ["c2"]})
    stored = person.get_run(run.id)
    assert stored.status is RunStatus.CANCELLED and stored.error == "cancelled by a test"
    expected = {"step": [1, 2], "steps with state": [1, 2, 3], "state before tools": [1]}[write]
    assert [s.seq for s in stored.steps] == expected  # steps that happened are kept, the state is not
    with runner.engine.connect() as conn:
        assert conn.scalar(select(RunRow.checkpoint).where(RunRow.id == run.id)) is None
        assert conn.scalar(select(func.count()).select_from(RunArtifactsRow)) == 0
    run.status = RunStatus.SUCCEEDED
    assert runner.run_finished(run) is False  # it stays cancelled
    assert person.get_run(run.id).status is RunStatus.CANCELLED


@pytest.mark.parametrize("write", ["step", "steps with state", "state before tools"])
def test_a_run_another_process_took_over_gets_nothing(store: Store, write: str) -> None:
    run = _run()
    store.run_started(run)
    store.state_saved(run, {"v": 1, "running": ["c1"]})
    with store.engine.begin() as conn:  # a resumer elsewhere claimed it (Store.run_resumed)
        conn.execute(update(RunRow).where(RunRow.id == run.id).values(owner="elsewhere/1/1"))

    with pytest.raises(RunCancelled, match="elsewhere/1/1|cancelled or taken over"):
        if write == "step":
            store.steps_recorded([_step(run, 1)])
        elif write == "steps with state":
            store.steps_recorded([_step(run, 1, StepKind.TOOL_CALL)], {"v": 1, "running": []})
        else:
            store.state_saved(run, {"v": 1, "running": ["c2"]})
    with store.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(StepRow)) == 0
        assert conn.execute(select(RunRow.status, RunRow.owner, RunRow.checkpoint)).one() == (
            "running",
            "elsewhere/1/1",
            {"v": 1, "running": ["c1"]},
        )  # the state before tools stays


@pytest.mark.parametrize("with_state", [False, True])
def test_a_step_written_while_a_resumer_claims_the_run_waits_for_the_claim_and_gets_nothing(
    store: Store, with_state: bool
) -> None:
    """The step's write and a claim (Store.run_resumed) take turns on the run's row: the step
    waits for the claim's transaction, then finds the run someone else's."""
    run = _run()
    store.run_started(run)
    outcome: list[BaseException | None] = []

    def write() -> None:
        try:
            store.steps_recorded([_step(run, 1)], {"v": 1} if with_state else None)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    with store.engine.connect() as claimer:
        claim = claimer.begin()
        claimer.execute(update(RunRow).where(RunRow.id == run.id).values(owner="elsewhere/1/1"))
        writer = threading.Thread(target=write)
        writer.start()
        writer.join(0.5)
        waited = writer.is_alive()
        claim.commit()
    writer.join(10)
    assert waited and isinstance(outcome[0], RunCancelled), outcome
    with store.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(StepRow)) == 0


def test_writes_to_a_run_never_started_are_config_errors(store: Store) -> None:
    ghost = _run()
    with pytest.raises(ConfigError, match="never started"):
        store.steps_recorded([_step(ghost, 1)])
    with pytest.raises(ConfigError, match="never started"):
        store.steps_recorded([_step(ghost, 1)], {"v": 1})
    ghost.status = RunStatus.SUCCEEDED
    with pytest.raises(ConfigError, match="never started"):
        store.run_finished(ghost)


def test_the_end_sums_the_stored_tokens_but_not_those_a_rerun_reused(store: Store) -> None:
    run = _run()
    store.run_started(run)
    store.steps_recorded([_step(run, 1, tokens_in=100, tokens_out=7, note=f"{REUSED_NOTE}abcd1234")])
    store.steps_recorded([_step(run, 2, tokens_in=5, tokens_out=3)])
    run.steps = [_step(run, 9, tokens_in=1000)]  # the totals come from the database, not the Run object
    run.status = RunStatus.SUCCEEDED
    assert store.run_finished(run)
    with store.engine.connect() as conn:
        assert conn.execute(select(RunRow.tokens_in, RunRow.tokens_out)).one() == (5, 3)


def test_artifacts_are_kept_when_they_change(store: Store) -> None:
    run = _run()
    store.run_started(run)
    table = {"kind": "table", "rows": [[1, "一"]]}
    for seq, artifacts in ((1, {"t": table}), (2, {"t": table}), (3, {"t": {**table, "rows": []}})):
        store.steps_recorded([_step(run, seq, StepKind.TOOL_CALL)], {"v": 1, "artifacts": artifacts})
    with store.engine.connect() as conn:
        kept = conn.execute(select(RunArtifactsRow.seq).order_by(RunArtifactsRow.seq)).scalars().all()
    assert kept == [1, 3]
    assert store.artifacts_before(run.id, 3) == {"t": table}


def test_a_long_name_is_cut_to_its_column_on_every_write(store: Store) -> None:
    run = _run()
    store.run_started(run)
    store.steps_recorded([_step(run, 1, StepKind.TOOL_CALL, name="n" * 300)])  # the one-statement write
    store.steps_recorded([_step(run, 2, StepKind.TOOL_CALL, name="m" * 300)], {"v": 1})
    names = [s.name for s in store.get_run(run.id).steps]
    assert [len(n) for n in names] == [255, 255] and all(n.endswith("…") for n in names)


def echo(text: str) -> str:
    """Returns its input."""
    return text


def test_the_engine_commits_once_per_sink_call_and_reads_nothing(store: Store) -> None:
    """The same through the engine itself: three tool rounds and an answer."""
    from flowcall.core.spec import DecisionConfig, Flow
    from flowcall.engine.loop import Engine
    from flowcall.providers.scripted import ScriptedProvider
    from flowcall.tools.python_plugins import build_tool
    from flowcall.tools.registry import ToolRegistry

    writes = ("run_started", "steps_recorded", "state_saved", "run_finished", "run_paused", "run_cancelled")
    called: list[str] = []

    class Counted:
        def __getattr__(self, name: str) -> object:
            if name in writes:
                called.append(name)
            return getattr(store, name)

    registry = ToolRegistry([build_tool(echo, "writes/v1/echo")])
    flow = Flow(
        name="writes", tools=["writes/v1/echo"], max_rounds=4, decision=DecisionConfig(provider="scripted")
    )
    script = [[("echo", {"text": str(r)})] for r in range(3)] + ["done"]
    store.run_started(_run())  # the first connection's set-up statements
    with counting(store) as seen:
        run = Engine(registry, lambda cfg: ScriptedProvider(script), Counted()).run(flow, "go")
    assert run.status is RunStatus.SUCCEEDED and run.final_answer == "done"
    assert seen.commits == len(called) >= 4 * 2 + 2, called
    # no read: a flow of plugins has no tool pins to read (only MCP and HTTP tools are pinned)
    assert seen.reads == [], seen.reads
