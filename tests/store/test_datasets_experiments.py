"""Datasets, experiments and queued runs in real SQLite and PostgreSQL databases (conftest.py)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from flowcall.core.datasets import DatasetItem
from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.experiment_record import ExperimentStatus, ItemResult, Verdict, summarize
from flowcall.core.steps import Run, RunStatus
from flowcall.store import Store
from flowcall.store import experiments as stored
from flowcall.store.datasets import dataset_item, get_dataset, get_version, list_datasets, save_dataset

ITEMS = [
    DatasetItem(id="a", question="成都明天下雨吗?", answer_contains="雨"),
    DatasetItem(question="hello", expect_no_call=True, answer_equals={"x": [1, "二"]}),
]


def _queued(store: Store, question: str = "q") -> Run:
    run = Run(id=str(uuid.uuid4()), flow_name="f", question=question, trace_id=uuid.uuid4().hex)
    store.queue_run(run)
    return run


def test_datasets_are_versioned_by_content(store: Store) -> None:
    first = save_dataset(store, "weather", ITEMS, source="weather.jsonl")
    assert (first.version, first.created) == (1, True)
    again = save_dataset(
        store, "weather", [DatasetItem.model_validate(i.dump()) for i in ITEMS], source="copy.jsonl"
    )
    assert (again.version, again.version_id, again.created) == (1, first.version_id, False)
    changed = save_dataset(store, "weather", ITEMS[:1], source="smaller.jsonl")
    assert (changed.version, changed.created) == (2, True)
    assert get_dataset(store, "weather").items == ITEMS[:1]
    old = get_dataset(store, "weather", 1)
    assert old.items == ITEMS and old.source == "weather.jsonl" and old.version_id == first.version_id
    assert get_version(store, first.version_id).name == "weather"
    assert dataset_item(store, first.version_id, 1) == ITEMS[1]
    assert [(d["name"], d["version"], d["items"]) for d in list_datasets(store)] == [("weather", 2, 1)]


def test_unknown_datasets_and_versions_say_what_exists(store: Store) -> None:
    save_dataset(store, "weather", ITEMS, source="x")
    with pytest.raises(NotFoundError, match="no dataset named 'nope'; known datasets: weather"):
        get_dataset(store, "nope")
    with pytest.raises(NotFoundError, match=r"has no version 7; it has versions \[1\]"):
        get_dataset(store, "weather", 7)
    with pytest.raises(NotFoundError, match="has no item 3"):
        dataset_item(store, get_dataset(store, "weather").version_id, 2)
    with pytest.raises(ConfigError, match="not allowed"):
        save_dataset(store, "bad/name", ITEMS, source="x")
    with pytest.raises(ConfigError, match="no items"):
        save_dataset(store, "empty", [], source="x")
    assert [d["name"] for d in list_datasets(store)] == ["weather"]


def test_many_items_keep_their_order(store: Store) -> None:
    items = [DatasetItem(question=f"q{n}", max_latency_s=n + 1) for n in range(2000)]
    saved = save_dataset(store, "big", items, source="gen")
    assert (
        get_dataset(store, "big").items == items
        and dataset_item(store, saved.version_id, 1999) == items[1999]
    )


def test_a_queued_run_is_claimed_by_exactly_one_store(open_stores: Callable[[], Store]) -> None:
    one, two = open_stores(), open_stores()
    run = _queued(one)
    read = two.get_run(run.id)
    assert read.status == RunStatus.QUEUED and read.owner is None and read.queued_at is not None
    assert two.get_checkpoint(run.id) is None
    one.run_resumed(one.get_run(run.id))
    with pytest.raises(ConfigError, match="already being resumed"):
        two.run_resumed(read)
    claimed = two.get_run(run.id)
    assert claimed.status == RunStatus.RUNNING and claimed.owner is not None
    assert claimed.started_at >= claimed.queued_at
    assert [r.id for r in two.list_runs(status="queued")] == []


def test_a_queued_run_can_be_cancelled(store: Store) -> None:
    run = _queued(store)
    assert [r.id for r in store.list_runs(status="queued")] == [run.id]
    cancelled = store.cancel(run.id, by="test")
    assert cancelled.status == RunStatus.CANCELLED and cancelled.error == "cancelled by test"


def test_experiments_keep_items_results_and_summary(store: Store) -> None:
    saved = save_dataset(store, "weather", ITEMS, source="x")
    experiment_id = stored.create_experiment(
        store,
        flow_ref="flows/w.json",
        flow_name="w",
        flow_version=1,
        flow_version_id=None,
        dataset_name="weather",
        dataset_version=1,
        dataset_version_id=saved.version_id,
        model="scripted/m",
        polish_model=None,
        calling_way="auto",
        repeat=2,
    )
    runs = {}
    for attempt in (1, 0):
        for position, item in enumerate(ITEMS):
            runs[(position, attempt)] = _queued(store, item.question)
            stored.add_items(
                store, experiment_id, [(position, attempt, item.key(), runs[(position, attempt)].id)]
            )
    order = [runs[(p, a)].id for a in (0, 1) for p in (0, 1)]
    assert stored.pending_runs(store, experiment_id) == order
    ref = stored.item_for_run(store, runs[(1, 1)].id)
    assert (ref.experiment_id, ref.position, ref.attempt, ref.item_key, ref.dataset_version_id) == (
        experiment_id,
        1,
        1,
        "hello",
        saved.version_id,
    )
    result = ItemResult(
        position=0,
        attempt=0,
        item_key="a",
        run_id=runs[(0, 0)].id,
        status="succeeded",
        passed=False,
        verdicts=[Verdict(expectation="answer_contains", passed=False, reason="not found: 雨")],
        latency_ms=1234.5,
        tokens_in=10,
        tokens_out=3,
    )
    stored.save_result(store, experiment_id, result)
    assert stored.pending_runs(store, experiment_id) == order[1:]
    store.run_resumed(store.get_run(runs[(1, 0)].id))  # one run started: it is not cancelled below
    assert stored.cancel_queued(store, experiment_id, "stopped") == 3
    assert store.get_run(runs[(1, 0)].id).status == RunStatus.RUNNING
    assert store.get_run(runs[(0, 1)].id).status == RunStatus.CANCELLED
    experiment = stored.get_experiment(store, experiment_id)
    stored.finish_experiment(
        store, experiment_id, ExperimentStatus.FAILED, summarize(experiment.items), "stopped"
    )
    got = stored.get_experiment(store, str(experiment_id))
    assert got.status == ExperimentStatus.FAILED and got.error == "stopped" and got.ended_at is not None
    assert got.items[0] == result and got.summary.runs == 1 and got.summary.latency_p50_s == 1.2345
    assert [e.id for e in stored.list_experiments(store)] == [experiment_id]
    with pytest.raises(NotFoundError, match="no experiment 999"):
        stored.get_experiment(store, 999)
    with pytest.raises(ConfigError, match="is a number"):
        stored.get_experiment(store, "abc")
