"""The Experiments page and the Run page's queued runs, with Streamlit's AppTest on the per-test
SQLite database: an experiment run from the page on the schema-driven stand-in model (no model
file), its results and charts, two experiments compared; a queued run shown as it waits; a
broker with SQLite refused on the page, naming both settings."""

from __future__ import annotations

import pytest

from flowcall.datasets import DatasetItem
from flowcall.experiments import run_experiment
from flowcall.service import FlowCall
from flowcall.spec import parse_flow
from flowcall.store.datasets import save_dataset
from flowcall.store.experiments import list_experiments
from tests.test_studio import page, texts, widget

FLOW = {"format": "flowcall.flow/v1", "name": "lookup-stand-in", "tools": ["hr/v1/lookup_employee"],
        "decision": {"provider": "scripted", "model": "schema"}}
ITEMS = [DatasetItem(id="age", question="张三今年多大了?", expect_calls=[{"name": "lookup_employee"}]),
         DatasetItem(id="hello", question="你好", expect_no_call=True)]


@pytest.fixture
def saved() -> FlowCall:
    app = FlowCall.open()
    app.store.save_flow(parse_flow(FLOW))
    save_dataset(app.store, "people", ITEMS, source="test")
    return app


def test_an_experiment_runs_from_the_page_and_shows_its_results(saved: FlowCall) -> None:
    app = page("pages/experiments.py")
    widget(app.selectbox, "Flow").select("lookup-stand-in")
    widget(app.selectbox, "Dataset").select("people")
    next(b for b in app.button if b.label == "Run the experiment").click().run()
    assert not app.exception, app.exception
    [experiment] = list_experiments(saved.store)
    assert experiment.status.value == "finished"
    shown = texts(app)
    assert "passed 1 of 2 runs (50.0%)" in shown  # the summary, on the Results tab
    table = app.dataframe[0].value
    assert list(table["verdict"]) == ["pass", "FAIL"] and list(table["key"]) == ["age", "hello"]
    from tests.test_page_models import walk

    charts = [str(n.proto) for n in walk(app._tree) if "vega" in type(getattr(n, "proto", None)).__name__.lower()]
    assert len(charts) == 2, [type(getattr(n, "proto", None)).__name__ for n in walk(app._tree)]
    assert "Pass rate per expectation" in charts[0] and "Latency distribution" in charts[1]
    assert any(b.label == "Open its run in the inspector" and b.disabled for b in app.button)


def test_an_experiment_left_running_is_resumed_from_the_results_tab(saved: FlowCall) -> None:
    from flowcall.experiments import start

    started = start(saved, parse_flow(FLOW), "lookup-stand-in", "people")  # its process "died" before any item
    app = page("pages/experiments.py")
    resume = next(b for b in app.button if b.label == "Resume it here")
    resume.click().run()
    assert not app.exception, app.exception
    [experiment] = list_experiments(saved.store)
    assert experiment.id == started.id and experiment.status.value == "finished"
    assert "passed 1 of 2 runs (50.0%)" in texts(app)
    assert not any(b.label == "Resume it here" for b in app.button)  # drawn again: finished now
    assert any("finished" in m.value for m in app.success) and "running" not in " ".join(m.value for m in app.markdown)


def test_two_experiments_side_by_side(saved: FlowCall) -> None:
    flow = parse_flow(FLOW)
    run_experiment(saved, flow, "lookup-stand-in", "people")
    save_dataset(saved.store, "people", [ITEMS[0].model_copy(update={"expect_calls": None, "expect_no_call": True}),
                                         ITEMS[1]], source="test")
    run_experiment(saved, flow, "lookup-stand-in", "people")
    app = page("pages/experiments.py")
    assert "1 pass→fail · 0 fail→pass · 1 unchanged" in texts(app).replace("**", "")
    compared = app.dataframe[-1].value
    assert list(compared["item"]) == ["age"] and list(compared["change"]) == ["pass→fail"]


def test_a_queued_run_shows_it_waits_for_a_worker(saved: FlowCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:6379/0")
    adopted = saved.prepare(parse_flow(FLOW))
    run = saved.submit(adopted, "张三今年多大了?")
    app = page("pages/run.py")
    app.session_state["run_id"] = run.id
    app.run()
    assert not app.exception, app.exception
    assert f"Run {run.id[:8]} waits for a worker · 0 steps so far" in texts(app)
    assert any(e.label.startswith("Queued and running runs (1)") for e in app.expander)


def test_the_run_page_refuses_a_broker_with_sqlite(saved: FlowCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:6379/0")
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("lookup-stand-in").run()
    widget(app.text_area, "Question").input("张三今年多大了?").run()
    assert widget(app.toggle, "On a worker").value is True
    next(b for b in app.button if b.label == "Run").click().run()
    error = texts(app)
    assert "FLOWCALL_BROKER_URL" in error and "FLOWCALL_DATABASE_URL" in error
    assert saved.store.list_runs() == []
