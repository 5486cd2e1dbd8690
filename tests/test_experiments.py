"""Experiments with the scripted model: queued runs executed by id (in this process, or by another
service on the same database, as a worker will), every item scored and kept, totals and latency
percentiles, repeats, items with their own tools, stopping on a missing key or Ctrl-C, compare."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowcall.core.datasets import DatasetItem
from flowcall.core.errors import ConfigError
from flowcall.core.experiment_record import (
    Experiment,
    ExperimentStatus,
    ItemResult,
    Verdict,
    compare,
    percentile,
    summarize,
)
from flowcall.core.messages import ModelRequest
from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import RunStatus, StepKind, utcnow
from flowcall.eval import experiments
from flowcall.providers import NotConfigured
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.store import Store
from flowcall.store import experiments as stored
from flowcall.store.datasets import save_dataset
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

FLOW = Flow(name="weather", tools=["weather/v1/get_weather"], decision=DecisionConfig(provider="scripted"))
CITIES = ("成都", "北京", "上海")
executed: list[str] = []


def get_weather(city: str) -> dict:
    """Tomorrow's weather in a city."""
    executed.append(city)
    return {"city": city, "rain": city == "成都"}


def decide(request: ModelRequest) -> Any:
    """Calls get_weather for the city the question names, then answers from its result."""
    question = next(m.content for m in request.messages if m.role == "user")
    results = [m.content for m in request.messages if m.role == "tool"]
    city = next((c for c in CITIES if c in question), None)
    if request.tools and city and not results:
        return [(request.tools[0].name, {"city": city})]
    if results:
        return "rain tomorrow: " + ("yes" if '"rain": true' in results[0] else "no")
    return "hi there"


ITEMS = [
    {
        "id": "cd",
        "question": "成都 rain?",
        "expect_calls": [{"name": "get_weather", "arguments": {"city": "成都"}}],
        "answer_contains": "yes",
    },
    {
        "id": "bj",
        "question": "北京 rain?",
        "answer_regex": "no$",
        "expect_calls": [
            {"name": "weather/v1/get_weather", "arguments": {"city": {"any_of": ["北京", "Beijing"]}}}
        ],
    },
    {
        "id": "hi",
        "question": "hello",
        "expect_no_call": True,
        "answer_equals": "hi there",
        "max_latency_s": 60,
    },
    {
        "id": "sh",
        "question": "上海 rain?",
        "expect_calls": [{"name": "get_weather", "arguments": {"city": "广州"}}],
    },
]


def make_service(url: str, factory=None) -> FlowCall:
    app = FlowCall(
        store=Store.open(url), provider_factory=factory or (lambda cfg: ScriptedProvider([decide] * 5))
    )
    app.registry = ToolRegistry([build_tool(get_weather, "weather/v1/get_weather")])  # no plugin folders
    return app


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'experiments.db'}"


@pytest.fixture
def app(url: str) -> Iterator[FlowCall]:
    executed.clear()
    made = make_service(url)
    save_dataset(
        made.store, "weather-questions", [DatasetItem.model_validate(i) for i in ITEMS], source="test"
    )
    yield made
    made.store.close()


def test_a_submitted_run_is_queued_until_executed_by_its_id_once(app: FlowCall):
    run = app.submit(app.prepare(FLOW), "成都 rain?")
    queued = app.store.get_run(run.id)
    assert queued.status == RunStatus.QUEUED and queued.steps == [] and queued.queued_at is not None
    assert queued.owner is None and executed == []
    done = app.execute(run.id)
    assert done.status == RunStatus.SUCCEEDED and done.final_answer == "rain tomorrow: yes"
    stored_run = app.store.get_run(run.id)
    assert [s.kind for s in stored_run.steps] == [
        StepKind.MODEL_CALL,
        StepKind.TOOL_CALL,
        StepKind.MODEL_CALL,
    ]
    assert stored_run.started_at >= stored_run.queued_at and executed == ["成都"]
    with pytest.raises(ConfigError, match="is succeeded, not queued"):
        app.execute(run.id)
    assert executed == ["成都"]


def test_a_missing_key_leaves_the_run_queued(app: FlowCall):
    run = app.submit(app.prepare(FLOW), "成都 rain?")
    app.provider_factory = lambda cfg: (_ for _ in ()).throw(NotConfigured("set SCRIPTED_API_KEY"))
    with pytest.raises(NotConfigured):
        app.execute(run.id)
    assert app.store.get_run(run.id).status == RunStatus.QUEUED
    assert app.store.cancel(run.id, by="test").status == RunStatus.CANCELLED  # a queued run can be cancelled


def test_an_experiment_runs_every_item_and_keeps_verdicts_runs_and_totals(app: FlowCall):
    seen: list[ItemResult] = []
    experiment = experiments.run_experiment(
        app, FLOW, "weather.json", "weather-questions", on_item=seen.append
    )
    assert experiment.status == ExperimentStatus.FINISHED and experiment.ended_at is not None
    assert (experiment.flow_name, experiment.flow_version, experiment.dataset_version) == ("weather", 1, 1)
    assert (experiment.model, experiment.calling_way, experiment.flow_ref) == (
        "scripted/embedded",
        "auto",
        "weather.json",
    )
    assert [i.item_key for i in experiment.items] == ["cd", "bj", "hi", "sh"] and len(seen) == 4
    assert [i.passed for i in experiment.items] == [True, True, True, False]
    failing = experiment.items[3]
    assert [(v.expectation, v.passed) for v in failing.verdicts] == [
        ("succeeded", True),
        ("expect_calls", False),
    ]
    assert failing.verdicts[1].reason.startswith("expected call 1: no call of get_weather fits:")
    for item in experiment.items:  # each item is a normal recorded run
        run = app.store.get_run(item.run_id)
        assert run.status == RunStatus.SUCCEEDED and run.flow_version_id is not None
        assert item.tokens_in == run.tokens_in and item.latency_ms == pytest.approx(
            (run.ended_at - run.started_at).total_seconds() * 1000
        )
    summary = experiment.summary
    assert (summary.runs, summary.passed, summary.failed, summary.not_run) == (4, 3, 1, 0)
    assert summary.pass_rate == 0.75 and summary.statuses == {"succeeded": 4}
    assert summary.by_expectation["expect_calls"] == {"passed": 2, "total": 3}
    assert summary.by_expectation["succeeded"] == {"passed": 4, "total": 4}
    assert summary.tokens_in == sum(i.tokens_in for i in experiment.items) > 0
    seconds = sorted(i.latency_ms / 1000 for i in experiment.items)
    assert summary.latency_p50_s == pytest.approx(statistics.median(seconds))
    assert seconds[0] <= summary.latency_p95_s <= seconds[-1]
    assert stored.get_experiment(app.store, experiment.id) == experiment


def test_repeat_runs_every_item_k_times_and_pins_the_dataset_version(app: FlowCall):
    save_dataset(app.store, "weather-questions", [DatasetItem(question="hello")], source="v2")
    experiment = experiments.run_experiment(
        app, FLOW, "weather", "weather-questions", dataset_version=1, repeat=2
    )
    assert experiment.dataset_version == 1 and experiment.repeat == 2
    assert [(i.attempt, i.position) for i in experiment.items] == [(a, p) for a in (0, 1) for p in range(4)]
    assert len({i.run_id for i in experiment.items}) == 8 and experiment.summary.passed == 6
    with pytest.raises(ConfigError, match="at least 1"):
        experiments.run_experiment(app, FLOW, "weather", "weather-questions", repeat=0)


def test_another_service_on_the_database_executes_and_scores_a_run_given_only_its_id(app: FlowCall, url: str):
    experiment = experiments.start(app, FLOW, "weather", "weather-questions")
    assert all(i.passed is None for i in experiment.items)
    worker = make_service(url)
    try:
        for run_id in stored.pending_runs(worker.store, experiment.id):
            result = experiments.execute_run(worker, run_id)
            assert result.run_id == run_id and result.passed is not None
    finally:
        worker.store.close()
    done = experiments.finish(app, experiment.id, ExperimentStatus.FINISHED)
    assert [i.passed for i in done.items] == [True, True, True, False] and done.summary.runs == 4
    with pytest.raises(ConfigError, match="belongs to no experiment"):
        experiments.execute_run(app, app.submit(app.prepare(FLOW), "hello").id)


def test_a_run_cancelled_before_it_started_is_scored_as_cancelled_and_the_rest_go_on(app: FlowCall):
    experiment = experiments.start(app, FLOW, "weather", "weather-questions")
    app.cancel(experiment.items[1].run_id, by="a person")
    for run_id in stored.pending_runs(app.store, experiment.id):
        experiments.execute_run(app, run_id)
    done = experiments.finish(app, experiment.id, ExperimentStatus.FINISHED)
    assert [i.status for i in done.items] == ["succeeded", "cancelled", "succeeded", "succeeded"]
    assert done.items[1].verdicts[0].reason == "the run cancelled: cancelled by a person"
    assert executed == ["成都", "上海"] and done.summary.statuses == {"succeeded": 3, "cancelled": 1}
    again = experiments.execute_run(app, experiment.items[0].run_id)  # delivered twice: scored, not run again
    assert again.passed is True and executed == ["成都", "上海"]


def test_an_item_with_its_own_tools_asks_the_decision_model_only(app: FlowCall):
    calc = {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
    }
    items = [
        DatasetItem.model_validate(
            {
                "id": "sum",
                "question": "1+2?",
                "tools": [calc],
                "expect_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
            }
        ),
        DatasetItem.model_validate(
            {"id": "none", "question": "hello", "tools": [calc], "expect_no_call": True}
        ),
    ]
    save_dataset(app.store, "own-tools", items, source="test")
    sent: list[ModelRequest] = []

    def model(request: ModelRequest) -> Any:
        sent.append(request)
        return [("add", {"a": 1, "b": 2})] if "1+2" in request.messages[-1].content else "no tool fits"

    app.provider_factory = lambda cfg: ScriptedProvider([model])
    experiment = experiments.run_experiment(app, FLOW, "weather", "own-tools")
    assert [i.passed for i in experiment.items] == [True, True], [i.verdicts for i in experiment.items]
    assert [t.name for t in sent[0].tools] == [
        "add"
    ] and executed == []  # the flow's tool was never offered or run
    run = app.store.get_run(experiment.items[0].run_id)
    assert [s.kind for s in run.steps] == [StepKind.MODEL_CALL] and run.flow_name == "weather"
    assert run.final_answer["tool_calls"][0]["arguments"] == {"a": 1, "b": 2}


def test_a_missing_key_stops_the_experiment_and_cancels_the_runs_not_started(app: FlowCall):
    app.provider_factory = lambda cfg: (_ for _ in ()).throw(NotConfigured("set SCRIPTED_API_KEY"))
    with pytest.raises(NotConfigured):
        experiments.run_experiment(app, FLOW, "weather", "weather-questions")
    experiment = stored.list_experiments(app.store)[0]
    experiment = stored.get_experiment(app.store, experiment.id)
    assert experiment.status == ExperimentStatus.FAILED and "SCRIPTED_API_KEY" in experiment.error
    assert experiment.summary.not_run == 4 and experiment.summary.pass_rate is None
    statuses = {app.store.get_run(i.run_id).status for i in experiment.items}
    assert statuses == {RunStatus.CANCELLED}


def test_a_hosted_model_without_its_key_is_refused_before_an_experiment_is_recorded(
    app: FlowCall, monkeypatch
):
    from flowcall.providers import provider_for

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app.provider_factory = provider_for  # the real providers: openai needs its key
    hosted = FLOW.model_copy(update={"decision": DecisionConfig(provider="openai", model="gpt-4o-mini")})
    with pytest.raises(NotConfigured, match="OPENAI_API_KEY"):
        experiments.run_experiment(app, hosted, "weather", "weather-questions")
    assert stored.list_experiments(app.store) == [] and app.store.list_runs() == []  # nothing left behind


def test_ctrl_c_cancels_the_running_item_and_the_rest_and_keeps_what_was_scored(app: FlowCall):
    calls = {"n": 0}

    def interrupted(request: ModelRequest) -> Any:
        calls["n"] += 1
        if "北京" in request.messages[-1].content:
            raise KeyboardInterrupt
        return decide(request)

    app.provider_factory = lambda cfg: ScriptedProvider([interrupted] * 5)
    with pytest.raises(KeyboardInterrupt):
        experiments.run_experiment(app, FLOW, "weather", "weather-questions")
    experiment = stored.get_experiment(app.store, stored.list_experiments(app.store)[0].id)
    assert experiment.status == ExperimentStatus.CANCELLED and experiment.error == "stopped with Ctrl-C"
    assert [i.passed for i in experiment.items] == [True, None, None, None]
    assert [app.store.get_run(i.run_id).status for i in experiment.items] == [
        RunStatus.SUCCEEDED,
        RunStatus.CANCELLED,
        RunStatus.CANCELLED,
        RunStatus.CANCELLED,
    ]


# --- the record: summary, percentiles, compare ------------------------------------------------------


def _item(
    position: int, ok: bool | None, key: str | None = None, attempt: int = 0, latency_ms: float = 100
) -> ItemResult:
    verdicts = None if ok is None else [Verdict(expectation="succeeded", passed=ok, reason="")]
    return ItemResult(
        position=position,
        attempt=attempt,
        item_key=key or f"k{position}",
        run_id=f"run-{position}-{ok}",
        status=None if ok is None else "succeeded",
        passed=ok,
        verdicts=verdicts,
        latency_ms=latency_ms,
    )


def _experiment(items: list[ItemResult], number: int = 1) -> Experiment:
    return Experiment(
        id=number,
        flow_ref="f",
        flow_name="f",
        flow_version=1,
        flow_version_id=1,
        dataset_name="d",
        dataset_version=1,
        dataset_version_id=1,
        model="m",
        polish_model=None,
        calling_way="auto",
        repeat=1,
        status=ExperimentStatus.FINISHED,
        started_at=utcnow(),
        items=items,
    )


def test_compare_lists_changed_verdicts_pass_to_fail_first():
    before = _experiment(
        [
            _item(0, True),
            _item(1, False),
            _item(2, True),
            _item(3, True),
            _item(4, None),
            _item(5, True, key="gone"),
        ]
    )
    after = _experiment(
        [
            _item(0, True),
            _item(1, True),
            _item(2, False),
            _item(3, False),
            _item(4, False),
            _item(6, True, key="new"),
        ],
        2,
    )
    result = compare(before, after)
    assert [(c.key, c.broke) for c in result.changes] == [("k2", True), ("k3", True), ("k1", False)]
    assert result.same == 1 and result.only_before == ["gone"] and result.only_after == ["k4", "new"]
    assert result.changes[0].before.run_id == "run-2-True" and result.changes[0].after.run_id == "run-2-False"


def test_summarize_counts_only_scored_items():
    summary = summarize([_item(0, True, latency_ms=1000), _item(1, False, latency_ms=3000), _item(2, None)])
    assert (summary.runs, summary.passed, summary.failed, summary.not_run, summary.pass_rate) == (
        2,
        1,
        1,
        1,
        0.5,
    )
    assert summary.latency_p50_s == 2.0 and summary.latency_p95_s == pytest.approx(2.9)
    assert summarize([]).latency_p50_s is None


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=40), st.integers(1, 99))
def test_percentiles_agree_with_statistics_and_stay_within_the_values(values, q):
    assert min(values) <= percentile(values, q) <= max(values)
    assert percentile(values, 0) == min(values) and percentile(values, 100) == max(values)
    assert percentile(values, q) <= percentile(values, min(q + 1, 100)) + 1e-9
    if len(values) > 1:
        expected = statistics.quantiles(values, n=100, method="inclusive")[q - 1]
        assert percentile(values, q) == pytest.approx(expected, rel=1e-9, abs=1e-6)


def test_latency_counts_from_the_claim_not_from_the_queue(app: FlowCall):
    run = app.submit(app.prepare(FLOW), "hello")
    from sqlalchemy import update

    from flowcall.store.models import RunRow

    with app.store.engine.begin() as conn:  # as if it had waited in a queue for an hour
        conn.execute(
            update(RunRow)
            .where(RunRow.id == run.id)
            .values(queued_at=utcnow() - timedelta(hours=1), started_at=utcnow() - timedelta(hours=1))
        )
    done = app.execute(run.id)
    assert (done.ended_at - done.started_at).total_seconds() < 60
    assert (done.started_at - app.store.get_run(run.id).queued_at).total_seconds() >= 3600


def test_grounded_and_answered_without_tools_are_scored_and_summed(url: str):
    """`grounded` passes when every answer value is traced to a tool result; a run whose tool
    failed answered without tools, and the summary counts it."""

    def get_weather(city: str) -> dict:
        """Fails for 上海."""
        if city == "上海":
            raise RuntimeError("service down")
        return {"city": city, "rain": city == "成都"}

    def answer(request: ModelRequest) -> Any:
        results = [m.content for m in request.messages if m.role == "tool"]
        if results:
            return "rain tomorrow: yes" if '"rain": true' in results[0] else "晴, 31 度"
        city = next(c for c in CITIES if c in next(m.content for m in request.messages if m.role == "user"))
        return [(request.tools[0].name, {"city": city})]

    app = FlowCall(store=Store.open(url), provider_factory=lambda cfg: ScriptedProvider([answer] * 5))
    app.registry = ToolRegistry([build_tool(get_weather, "weather/v1/get_weather")])
    items = [
        {"id": "cd", "question": "成都 rain?", "grounded": True},
        {"id": "sh", "question": "上海 rain?", "grounded": True},
    ]
    save_dataset(app.store, "grounded", [DatasetItem.model_validate(i) for i in items], source="test")
    experiment = experiments.run_experiment(app, FLOW, "weather", "grounded")
    cd, sh = experiment.items
    assert cd.passed and cd.outcome is None
    assert (
        not sh.passed and sh.outcome == "answered_without_tools" and (sh.traced, sh.answer_values) == (0, 1)
    )
    assert sh.verdicts[-1].reason == "answered without tools: no tool result backs it"
    summary = experiment.summary
    assert summary.answered_without_tools == 1 and summary.by_expectation["grounded"] == {
        "passed": 1,
        "total": 2,
    }
    assert stored.get_experiment(app.store, experiment.id) == experiment
    app.store.close()
