"""The store against real SQLite and PostgreSQL databases (fixtures in conftest.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, select, text

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow
from flowcall.core.steps import Run, RunStatus, Step, StepKind
from flowcall.store import Store, make_engine, open_store
from flowcall.store.migrate import alembic_config
from flowcall.store.models import Base, RunRow

TABLES = {"flows", "flow_versions", "runs", "steps", "tasks", "alembic_version"}


def _run(
    flow_name: str = "weather",
    *,
    run_id: str | None = None,
    version_id: int | None = None,
    started_at: datetime | None = None,
    question: str = "明天上海要带伞吗？",
) -> Run:
    return Run(
        id=run_id or str(uuid.uuid4()),
        flow_name=flow_name,
        flow_version_id=version_id,
        question=question,
        trace_id=uuid.uuid4().hex,
        started_at=started_at or datetime.now(UTC),
    )


def _finish(store: Store, run: Run, status: RunStatus = RunStatus.SUCCEEDED, answer: object = "好") -> None:
    run.status, run.final_answer, run.ended_at = status, answer, datetime.now(UTC)
    store.run_finished(run)


# --- schema and migrations -------------------------------------------------------------------


def test_migrations_create_schema_and_are_idempotent(open_stores: Callable[[], Store]) -> None:
    first = open_stores()
    assert TABLES <= set(inspect(first.engine).get_table_names())
    first.save_flow(Flow(name="kept"))
    second = open_stores()  # migrating again is a no-op and loses nothing
    assert second.get_flow("kept")[2] == 1
    with second.engine.connect() as conn:
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [head]


def test_orm_metadata_matches_migrated_schema(store: Store) -> None:
    with store.engine.connect() as conn:
        opts = {"compare_type": True, "compare_server_default": True}
        assert compare_metadata(MigrationContext.configure(conn, opts=opts), Base.metadata) == []


def test_sqlite_pragmas_are_on(tmp_path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'a' / 'b' / 'f.db'}")
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        store.close()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("not a url", "cannot be parsed"),
        ("mysql://u@h/db", "not supported"),
        ("postgresql://postgres@127.0.0.1:5432", "names no database"),
    ],
)
def test_bad_url_is_a_config_error(url: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as caught:
        make_engine(url)
    assert "FLOWCALL_DATABASE_URL" in str(caught.value) or "e.g." in str(caught.value)


def test_unreachable_database_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot open the database .*FLOWCALL_DATABASE_URL"):
        Store.open("postgres://postgres:secret@127.0.0.1:1/nothing")


def test_postgres_url_aliases_use_psycopg() -> None:
    for scheme in ("postgres", "postgresql", "postgresql+psycopg"):
        engine = make_engine(f"{scheme}://u@h/db")
        assert engine.url.drivername == "postgresql+psycopg"
        engine.dispose()


# --- flows -----------------------------------------------------------------------------------


def test_flow_versioning(store: Store) -> None:
    flow = Flow(name="weather", description="天气卡片", tools=["weather/v1/get_weather"])
    vid1, v1 = store.save_flow(flow)
    assert v1 == 1
    assert store.save_flow(flow.model_copy()) == (vid1, 1)  # unchanged: no new version

    changed = flow.model_copy(update={"max_rounds": 6})
    vid2, v2 = store.save_flow(changed)
    assert v2 == 2 and vid2 != vid1

    assert store.get_flow("weather") == (changed, vid2, 2)
    assert store.get_flow("weather", version=1) == (flow, vid1, 1)
    assert [v["version"] for v in store.flow_versions("weather")] == [2, 1]

    store.save_flow(Flow(name="another"))
    listed = store.list_flows()
    assert [f["name"] for f in listed] == ["another", "weather"]
    assert listed[1]["version"] == 2 and listed[1]["description"] == "天气卡片"
    assert listed[1]["updated_at"].tzinfo is not None


def test_get_flow_errors_name_what_exists(store: Store) -> None:
    store.save_flow(Flow(name="weather"))
    with pytest.raises(ConfigError, match="known flows: weather"):
        store.get_flow("wether")
    with pytest.raises(ConfigError, match=r"has no version 7; it has versions \[1\]"):
        store.get_flow("weather", version=7)


def test_run_points_at_its_version_and_survives_flow_deletion(store: Store) -> None:
    vid1, _ = store.save_flow(Flow(name="weather"))
    run = _run(version_id=vid1)
    store.run_started(run)
    store.save_flow(Flow(name="weather", max_rounds=9))  # a later edit does not move the run
    assert store.get_run(run.id).flow_version_id == vid1

    store.delete_flow("weather")
    with pytest.raises(ConfigError):
        store.get_flow("weather")
    kept = store.get_run(run.id)
    assert kept.flow_version_id is None and kept.flow_name == "weather"
    assert store.save_flow(Flow(name="weather"))[1] == 1  # the name starts afresh
    with pytest.raises(ConfigError, match="no flow named"):
        store.delete_flow("never-was")


# --- runs and steps --------------------------------------------------------------------------


def test_run_and_steps_round_trip(store: Store) -> None:
    run = _run()
    store.run_started(run)
    t0 = datetime(2026, 3, 1, 8, 30, 0, 123456, tzinfo=UTC)
    model_step = Step(
        run_id=run.id,
        seq=0,
        kind=StepKind.MODEL_CALL,
        name="local/qwen",
        calling_way="prompt",
        request={
            "messages": [{"role": "user", "content": "明天上海要带伞吗？"}],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "get_weather", "parameters": {"properties": {"city": {}}}},
                }
            ],
        },
        response={"choices": [{"message": {"content": '```json\n{"name": "get_weather"}\n```'}}]},
        rendered_prompt="<|im_start|>user\n明天上海要带伞吗？<|im_end|>",
        tool_calls=[{"id": "c1", "name": "get_weather", "arguments": {"city": "上海"}}],
        tokens_in=120,
        tokens_out=30,
        latency_ms=812.5,
        retries=[{"attempt": 1, "error": "RATE_LIMITED", "wait_s": 0.5}],
        request_id="req-1",
        started_at=t0,
        ended_at=t0 + timedelta(seconds=1),
    )
    tool_step = Step(
        run_id=run.id,
        seq=1,
        kind=StepKind.TOOL_CALL,
        round=1,
        name="get_weather",
        tool_call_id="c1",
        arguments={"city": "上海", "days": [1, 2]},
        result={"城市": "上海", "forecast": [{"rain": 0.8, "温度": {"高": 12, "低": 5}}]},
    )
    error_step = Step(
        run_id=run.id,
        seq=2,
        kind=StepKind.ERROR,
        round=1,
        name="create_task",
        error_code="MISSING_REQUIRED_FIELD",
        error_message="缺少字段 title",
        result="参数错误",
    )
    for step in (model_step, tool_step, error_step):
        store.step_recorded(step)
    _finish(store, run, answer={"带伞": True, "理由": ["降雨概率 80%"]})

    loaded = store.get_run(run.id)
    assert loaded.steps == [model_step, tool_step, error_step]
    assert loaded.steps[0].started_at == t0 and loaded.steps[0].started_at.tzinfo is not None
    assert loaded.question == run.question and loaded.status is RunStatus.SUCCEEDED
    assert loaded.final_answer == {"带伞": True, "理由": ["降雨概率 80%"]}
    assert (loaded.tokens_in, loaded.tokens_out) == (120, 30)
    with store.engine.connect() as conn:  # the totals are columns too, for listing without steps
        assert conn.execute(text("SELECT tokens_in, tokens_out FROM runs")).one() == (120, 30)


@pytest.mark.parametrize(
    "result", ["plain text", {"a": {"b": [1, None]}}, [1, "二", {}], 3.5, 0, False, None]
)
def test_step_result_may_be_any_json(store: Store, result: object) -> None:
    run = _run()
    store.run_started(run)
    store.step_recorded(Step(run_id=run.id, seq=0, kind=StepKind.TOOL_CALL, result=result))
    assert store.get_run(run.id).steps[0].result == result


def test_steps_are_committed_as_they_arrive(open_stores: Callable[[], Store]) -> None:
    writer, reader = open_stores(), open_stores()  # two engines: two connections, like UI and engine
    run = _run()
    writer.run_started(run)
    writer.step_recorded(Step(run_id=run.id, seq=0, kind=StepKind.MODEL_CALL, tokens_in=5))
    seen = reader.get_run(run.id)
    assert seen.status is RunStatus.RUNNING and [s.seq for s in seen.steps] == [0]
    with pytest.raises(ConfigError, match="never started"):
        writer.step_recorded(Step(run_id="no-such-run", seq=0, kind=StepKind.ERROR))


def test_failed_run_keeps_error(store: Store) -> None:
    run = _run()
    store.run_started(run)
    run.error = "MAX_ROUNDS: 决策模型超过 4 轮"
    _finish(store, run, RunStatus.FAILED, answer=None)
    loaded = store.get_run(run.id)
    assert loaded.status is RunStatus.FAILED and loaded.error == run.error and loaded.final_answer is None
    assert loaded.ended_at is not None and loaded.ended_at.tzinfo is not None


def test_list_runs_filters_and_orders(store: Store) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    runs = [
        _run("weather", started_at=base),
        _run("tasks", started_at=base + timedelta(minutes=1)),
        _run("weather", started_at=base + timedelta(minutes=2)),
    ]
    for run in runs:
        store.run_started(run)
    _finish(store, runs[0])
    _finish(store, runs[1], RunStatus.FAILED)

    assert [r.id for r in store.list_runs()] == [runs[2].id, runs[1].id, runs[0].id]
    assert [r.id for r in store.list_runs(flow_name="weather")] == [runs[2].id, runs[0].id]
    assert [r.id for r in store.list_runs(status=RunStatus.FAILED)] == [runs[1].id]
    assert [r.id for r in store.list_runs(flow_name="weather", status="running")] == [runs[2].id]
    assert len(store.list_runs(limit=1)) == 1
    assert all(r.steps == [] for r in store.list_runs())
    with pytest.raises(ConfigError, match="unknown run status"):
        store.list_runs(status="done")


def test_get_run_by_prefix(store: Store) -> None:
    a, b = _run(run_id="abc12345-0000"), _run(run_id="abc99999-0000")
    store.run_started(a)
    store.run_started(b)
    assert store.get_run("abc1").id == a.id
    assert store.get_run(b.id).id == b.id
    with pytest.raises(ConfigError, match="more than one run"):
        store.get_run("abc")
    with pytest.raises(ConfigError, match="no run"):
        store.get_run("zzz")
    with pytest.raises(ConfigError, match="no run"):
        store.get_run("%")  # LIKE wildcards are taken literally
    with pytest.raises(ConfigError):
        store.get_run("")


# --- tasks and the shared store --------------------------------------------------------------


def test_tasks(store: Store) -> None:
    first = store.add_task("给客户回电话", 2, date(2026, 3, 5))
    second = store.add_task("Write report", 1, None)
    assert first["title"] == "给客户回电话" and first["due_date"] == date(2026, 3, 5)
    assert first["created_at"].tzinfo is not None
    assert [t["id"] for t in store.list_tasks()] == [first["id"], second["id"]]
    assert store.list_tasks()[1]["due_date"] is None


def test_open_store_is_shared_per_url(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCALL_DATABASE_URL", db_url)
    shared = open_store()
    try:
        assert open_store() is shared and open_store(db_url) is shared
        shared.add_task("共享", 1, None)
    finally:
        shared.close()
    again = open_store(db_url)  # closing drops it from the cache
    try:
        assert again is not shared and again.list_tasks()[0]["title"] == "共享"
    finally:
        again.close()


# --- what the studio adds: run filters, run import, model profiles (both backends) ------------


def test_runs_filter_by_model_and_date_and_import_keeps_every_step(store: Store) -> None:
    run = _run(started_at=datetime(2026, 11, 20, 9, 0, tzinfo=UTC))
    store.run_started(run)
    step = Step(run_id=run.id, seq=1, kind=StepKind.MODEL_CALL, name="openai/gpt-4o_mini", tokens_in=10)
    store.step_recorded(step)
    _finish(store, run)
    assert [r.id for r in store.list_runs(model="gpt-4o_mini")] == [run.id]
    assert store.list_runs(model="gpt-4o%mini") == []  # LIKE wildcards are matched literally
    assert store.list_runs(since=datetime(2026, 11, 21, tzinfo=UTC)) == []
    assert len(store.list_runs(until=datetime(2026, 11, 21, tzinfo=UTC))) == 1
    assert store.run_models() == ["openai/gpt-4o_mini"]
    assert [r.id for r in store.list_runs(text="上海")] == [run.id] and store.list_runs(text="北京") == []

    again = store.import_run(store.get_run(run.id))  # the id is taken: a copy, nothing overwritten
    assert again.id != run.id and again.steps[0].model_dump(exclude={"run_id"}) == step.model_dump(
        exclude={"run_id"}
    )
    assert again.tokens_in == 10 and len(store.list_runs()) == 2


def test_model_profiles_are_replaced_by_key(store: Store) -> None:
    from flowcall.core.model_profile import Check, ModelProfile
    from flowcall.store.profiles import get_profile, list_profiles, save_profile

    first = ModelProfile(
        provider="openai-compatible",
        model="qwen",
        base_url="http://127.0.0.1:8080/v1",
        checks=[Check(name="native_tools", passed=False, detail="text")],
    )
    save_profile(store, first)
    save_profile(
        store, first.model_copy(update={"checks": [Check(name="native_tools", passed=True, detail="ok")]})
    )
    stored = get_profile(store, "openai-compatible", "qwen", "http://127.0.0.1:8080/v1")
    assert stored is not None and stored.checks[0].passed and len(list_profiles(store)) == 1
    assert get_profile(store, "openai-compatible", "qwen") is None  # another base_url is another model


# --- pausing and resuming -------------------------------------------------------------------


def _raw_checkpoint(store: Store, run_id: str) -> object:
    """The checkpoint column as stored, whatever the run's status."""
    with store.engine.connect() as conn:
        return conn.execute(select(RunRow.checkpoint).where(RunRow.id == run_id)).scalar_one()


def test_claiming_a_paused_run_is_one_compare_and_set(open_stores: Callable[[], Store]) -> None:
    first, second = open_stores(), open_stores()  # two engines, like the CLI and the studio
    run = _run()
    first.run_started(run)
    first.step_recorded(Step(run_id=run.id, seq=1, kind=StepKind.APPROVAL, name="delete_file"))
    run.steps = first.get_run(run.id).steps
    run.status = RunStatus.WAITING_APPROVAL
    first.run_paused(run, {"v": 1, "pending": ["a"]})
    seen_by_second = second.get_run(run.id)

    first.run_resumed(run)  # claimed: running, and the paused state is still there
    assert first.get_run(run.id).status is RunStatus.RUNNING
    assert _raw_checkpoint(first, run.id) == {"v": 1, "pending": ["a"]}
    with pytest.raises(
        ConfigError,
        match=rf"run {run.id} is already being resumed \(or finished\); "
        rf"see `flowcall runs show {run.id}`$",
    ):
        second.run_resumed(seen_by_second)
    with pytest.raises(
        ConfigError,
        match=r"already being resumed \(or finished\).*"
        r"\(it is running: only a run that waits for approval or was interrupted goes on\)",
    ):
        second.get_checkpoint(run.id)

    first.step_recorded(Step(run_id=run.id, seq=2, kind=StepKind.APPROVAL, name="delete_file"))
    run.steps = first.get_run(run.id).steps
    run.status = RunStatus.WAITING_APPROVAL
    first.run_paused(run, {"v": 1, "pending": ["b"]})  # paused again: the state is replaced
    assert second.get_checkpoint(run.id) == {"v": 1, "pending": ["b"]}
    with pytest.raises(ConfigError, match="already being resumed"):
        second.run_resumed(seen_by_second)  # it read the first pause (one step): not claimed with that
    second.run_resumed(second.get_run(run.id))
    _finish(second, run)
    assert _raw_checkpoint(second, run.id) is None  # finished: nothing left to resume from
    with pytest.raises(ConfigError, match=r"\(it is succeeded: only a run that waits"):
        first.get_checkpoint(run.id[:8])


def test_what_does_not_exist_is_a_not_found_error(open_stores: Callable[[], Store]) -> None:
    from flowcall.core.errors import NotFoundError

    store = open_stores()
    for missing in (
        lambda: store.get_run("nope"),
        lambda: store.get_flow("nope"),
        lambda: store.get_flow_version(12345),
        lambda: store.delete_flow("nope"),
    ):
        with pytest.raises(NotFoundError):
            missing()
