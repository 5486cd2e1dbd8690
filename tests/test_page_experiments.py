"""The Experiments page and the Run page's queued runs, with Streamlit's AppTest on the per-test
SQLite database: an experiment run from the page on the schema-driven stand-in model (no model
file), its progress naming each item before it ends, its results as figures, a table and two
charts with their axes, two experiments compared; a dataset written in the page or uploaded,
bad ones refused line by line with nothing saved; a queued run shown as it waits; a broker with
SQLite refused on the page, naming both settings."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from flowcall.core.datasets import DatasetItem, to_csv
from flowcall.core.spec import parse_flow
from flowcall.eval.experiments import run_experiment
from flowcall.eval.scoring import answer_text
from flowcall.rendering import short
from flowcall.service.front import FlowCall
from flowcall.store.datasets import get_dataset, list_datasets, save_dataset
from flowcall.store.experiments import get_experiment, list_experiments
from tests.test_studio import page, shown, texts, widget

FLOW = {
    "format": "flowcall.flow/v1",
    "name": "lookup-stand-in",
    "tools": ["hr/v1/lookup_employee"],
    "decision": {"provider": "scripted", "model": "schema"},
}
ITEMS = [
    DatasetItem(id="age", question="张三今年多大了?", expect_calls=[{"name": "lookup_employee"}]),
    DatasetItem(id="hello", question="你好", expect_no_call=True),
]


@pytest.fixture
def saved() -> FlowCall:
    app = FlowCall.open()
    app.store.save_flow(parse_flow(FLOW))
    save_dataset(app.store, "people", ITEMS, source="test")
    return app


def charts(app) -> list[tuple[dict, pd.DataFrame]]:
    """Each chart on the page, in page order: its Vega-Lite spec and the data it draws."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    from tests.test_page_models import walk

    return [
        (json.loads(n.proto.spec), convert_arrow_bytes_to_pandas_df(n.proto.datasets[0].data.data))
        for n in walk(app._tree)
        if type(getattr(n, "proto", None)).__name__ == "VegaLiteChart"
    ]


def metrics(app) -> dict[str, str]:
    return {shown(m.label): m.value for m in app.metric}


def test_an_experiment_runs_from_the_page_and_shows_its_results(saved: FlowCall) -> None:
    app = page("pages/experiments.py")
    widget(app.selectbox, "Flow").select("lookup-stand-in")
    widget(app.selectbox, "Dataset").select("people")
    next(b for b in app.button if b.label == "Run the experiment").click().run()
    assert not app.exception, app.exception
    [experiment] = list_experiments(saved.store)
    assert experiment.status.value == "finished"
    assert f"Experiment {experiment.id} finished: 1 of 2 runs passed (50%)." in texts(app)
    [bar] = app.progress
    assert (bar.value, bar.text) == (100, "2 of 2 runs · 1 failed")

    # the summary as figures, not lines of CLI text
    figures = metrics(app)
    assert figures["Pass rate"] == "50%" and figures["Passed"] == "1 of 2"
    assert figures["Failed"] == "1" and figures["Errors"] == "0"
    assert figures["Median time"].endswith(" s") and "→" in figures["Tokens"]
    assert not app.text, [t.value for t in app.text]

    # a row per item: its question, the answer, the verdict and the expectation it missed, in words
    table = app.dataframe[0].value
    widths = {name: c.get("width") for name, c in json.loads(app.dataframe[0].proto.columns).items()}
    assert "large" not in widths.values(), widths  # every column fits the page, none cut at its edge
    assert list(table.columns) == [
        "item",
        "id",
        "question",
        "verdict",
        "failed expectations",
        "answer",
        "seconds",
        "run",
    ]
    assert list(table["question"]) == ["张三今年多大了?", "你好"] and list(table["id"]) == ["age", "hello"]
    assert list(table["verdict"]) == ["passed", "failed"]
    assert table["failed expectations"][0] == ""
    assert table["failed expectations"][1].startswith("no tool call: called lookup_employee(")
    runs = [saved.store.get_run(i.run_id) for i in get_experiment(saved.store, experiment.id).items]
    assert runs[0].final_answer and table["answer"][0] == short(answer_text(runs[0].final_answer), 300)

    # the charts say what they measure: pass rate 0-100 % per expectation, seconds per item
    (rates, rated), (seconds, timed) = charts(app)
    bars = rates["layer"][0]
    assert rates["title"] == "Pass rate per expectation" and bars["mark"]["type"] == "bar"
    assert bars["encoding"]["x"]["title"] == "pass rate" and bars["encoding"]["x"]["axis"]["format"] == "%"
    assert bars["encoding"]["x"]["scale"]["domain"] == [0, 1]
    assert bars["encoding"]["y"]["field"] == "expectation"
    assert seconds["title"] == "Time per item" and seconds["mark"]["type"] == "bar"
    assert seconds["encoding"]["y"]["field"] == "seconds" and seconds["encoding"]["y"]["title"] == "seconds"
    assert seconds["encoding"]["x"]["title"] == "item" and "aggregate" not in seconds["encoding"]["y"]
    assert rated.set_index("expectation")["pass rate"].to_dict() == {
        "run succeeds": 1.0,
        "expected tool calls": 1.0,
        "no tool call": 0.0,
    }
    assert list(timed["item"]) == ["#1", "#2"] and list(timed["verdict"]) == ["passed", "failed"]
    assert list(timed["seconds"]) == [
        i.latency_ms / 1000 for i in get_experiment(saved.store, experiment.id).items
    ]
    assert any(b.label == "Open its run in the inspector" and b.disabled for b in app.button)


def test_the_bar_names_the_item_running_before_it_ends(
    saved: FlowCall, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the progress bar says, in order, against when each item's run begins and ends."""
    from streamlit.delta_generator import DeltaGenerator

    import flowcall.eval.experiments as experiments

    said: list[tuple[str, object]] = []
    real_progress, real_execute = DeltaGenerator.progress, experiments.execute_run

    def progress(self, value, text=None):
        said.append(("bar", shown(text)))
        return real_progress(self, value, text=text)

    def execute_run(service, run_id):
        said.append(("begins", saved.store.get_run(run_id).question))
        result = real_execute(service, run_id)
        said.append(("ends", result.item_key))
        return result

    monkeypatch.setattr(DeltaGenerator, "progress", progress)
    monkeypatch.setattr(experiments, "execute_run", execute_run)
    app = page("pages/experiments.py")
    next(b for b in app.button if b.label == "Run the experiment").click().run()
    assert not app.exception, app.exception
    assert said == [
        ("bar", "2 runs to go · starting the first"),
        ("bar", "item 1 of 2: 张三今年多大了?"),
        ("begins", "张三今年多大了?"),
        ("ends", "age"),
        ("bar", "1 of 2 runs · 0 failed"),
        ("bar", "item 2 of 2: 你好 · 1 of 2 runs done, 0 failed"),
        ("begins", "你好"),
        ("ends", "hello"),
        ("bar", "2 of 2 runs · 1 failed"),
    ]


def test_on_the_workers_the_bar_names_the_item_a_worker_runs(saved: FlowCall) -> None:
    """The page polls the database while workers run the items: what the bar says meanwhile."""
    from sqlalchemy import update
    from sqlalchemy.orm import Session

    from flowcall.eval.experiments import start
    from flowcall.store.experiments import running_item
    from flowcall.store.models import RunRow
    from flowcall.studio.experiments import Progress

    class Bar:
        said: list[tuple[float, str]] = []

        def progress(self, value: float, text: str) -> None:
            self.said.append((value, shown(text)))

    started = start(saved, parse_flow(FLOW), "lookup-stand-in", "people")
    progress = Progress(Bar())
    progress.started(started, saved)
    progress.waiting()
    assert running_item(saved.store, started.id) is None
    with Session(saved.store.engine) as s, s.begin():  # a worker took the second item
        s.execute(update(RunRow).where(RunRow.id == started.items[1].run_id).values(status="running"))
    assert running_item(saved.store, started.id) == (1, 0, "你好")
    progress.running(*running_item(saved.store, started.id))
    progress.running(*running_item(saved.store, started.id))  # polled again, nothing new: nothing sent
    assert progress.bar.said == [
        (0.0, "2 runs to go · starting the first"),
        (0.0, "waiting for a worker to take the runs · 0 of 2 runs done"),
        (0.0, "item 2 of 2: 你好"),
    ]


def test_an_experiment_left_running_is_resumed_from_the_results_tab(saved: FlowCall) -> None:
    from flowcall.eval.experiments import start

    started = start(
        saved, parse_flow(FLOW), "lookup-stand-in", "people"
    )  # its process "died" before any item
    app = page("pages/experiments.py")
    assert "No run of this experiment has ended yet." in texts(app)
    resume = next(b for b in app.button if b.label == "Resume it here")
    resume.click().run()
    assert not app.exception, app.exception
    [experiment] = list_experiments(saved.store)
    assert experiment.id == started.id and experiment.status.value == "finished"
    assert metrics(app)["Passed"] == "1 of 2"
    assert not any(b.label == "Resume it here" for b in app.button)  # drawn again: finished now
    assert any(
        f"Experiment {started.id} finished: 1 of 2 runs passed" in m.value.replace("\\", "")
        for m in app.success
    )
    assert "running" not in " ".join(m.value for m in app.markdown)


def test_a_half_run_experiment_shows_its_results_so_far(saved: FlowCall) -> None:
    from flowcall.eval.experiments import execute_run, start

    started = start(saved, parse_flow(FLOW), "lookup-stand-in", "people")
    execute_run(saved, started.items[0].run_id)  # one item scored; the other not run yet
    app = page("pages/experiments.py")
    assert "So far: the experiment still runs." in texts(app)
    assert metrics(app)["Not run yet"] == "1" and metrics(app)["Passed"] == "1 of 1"
    table = app.dataframe[0].value
    assert list(table["verdict"]) == ["passed", "not run yet"] and table["answer"][1] == ""


# ------------------------------------------------------------------ a dataset made in the page


def save_written(app, name: str, text: str):
    widget(app.text_input, "Dataset name").input(name)
    widget(app.radio, "The items").set_value("Write them here").run()
    widget(app.text_area, "Items, one JSON object per line").input(text)
    return next(b for b in app.button if b.label == "Save the dataset").click().run()


def test_a_dataset_written_in_the_page_is_saved_and_offered_to_run(saved: FlowCall) -> None:
    app = page("pages/experiments.py")
    save_written(
        app,
        "greetings",
        '{"id": "hi", "question": "你好", "expect_no_call": true}\n\n'
        '{"question": "张三今年多大了?", "expect_calls": [{"name": "lookup_employee"}], '
        '"max_latency_s": 30}\n',
    )
    assert not app.exception, app.exception
    assert "Saved greetings as version 1 with 2 items. Pick it on the Run tab." in texts(app)
    dataset = get_dataset(saved.store, "greetings")
    assert [i.question for i in dataset.items] == ["你好", "张三今年多大了?"] and dataset.items[
        0
    ].expect_no_call
    assert dataset.items[1].max_latency_s == 30 and dataset.source == "written in the studio"
    assert widget(app.selectbox, "Dataset").value == "greetings"  # the Run tab offers it at once
    next(b for b in app.button if b.label == "Save the dataset").click().run()  # the same items again
    assert "greetings version 1 already has exactly these 2 items; no new version." in texts(app)


def test_items_written_wrong_are_refused_line_by_line_and_nothing_is_saved(saved: FlowCall) -> None:
    app = page("pages/experiments.py")
    save_written(
        app,
        "broken",
        '{"question": "你好", "expect_no_call": true}\n'
        '{"question": "   "}\n'
        '{"question": "hi", "expect_call": [{"name": "x"}]}\n'
        '{"question": "hi", "expect_calls": [{"name": "x"}]\n',
    )
    assert not app.exception, app.exception
    [error] = app.error
    said = shown(error.value)
    assert said.startswith("**The items written here could not be saved** (3 problems); nothing was saved:")
    assert "- line 2, field question: the question is blank" in said
    assert "- line 3, field expect_call: unknown field; an item has id, question, expect_calls" in said
    assert "- line 4: not valid JSON (column 51: Expecting ',' delimiter)" in said
    assert "Fix the lines named above, then save again." in said
    assert [d["name"] for d in list_datasets(saved.store)] == ["people"]


def test_an_uploaded_file_is_read_as_the_importer_reads_it(saved: FlowCall) -> None:
    app = page("pages/experiments.py")
    widget(app.text_input, "Dataset name").input("people")  # a new version of a saved dataset
    good = to_csv([*ITEMS, DatasetItem(question="=1+1 是多少?", answer_contains="2")]).encode()
    app.file_uploader[0].upload("people.csv", good, "text/csv").run()
    next(b for b in app.button if b.label == "Save the dataset").click().run()
    assert not app.exception, app.exception
    assert "Saved people as version 2 with 3 items." in texts(app)
    dataset = get_dataset(saved.store, "people")
    assert dataset.items[2].question == "=1+1 是多少?" and dataset.source == "uploaded people.csv"
    assert widget(app.selectbox, "Dataset version").options == ["2", "1"]


def test_a_bad_uploaded_file_shows_an_error_naming_the_line_and_saves_nothing(saved: FlowCall) -> None:
    app = page("pages/experiments.py")
    widget(app.text_input, "Dataset name").input("new")
    bad = 'question,expect_calls\n你好,\n张三今年多大了?,"[{""name"": ""lookup_employee""}"\n'.encode()
    app.file_uploader[0].upload("[x](http://e.test).csv", bad, "text/csv").run()
    next(b for b in app.button if b.label == "Save the dataset").click().run()
    assert not app.exception, app.exception
    [error] = app.error
    said = shown(error.value)
    assert "[x](http://e.test).csv could not be saved" in said  # the file's name, as text: no link
    assert "\\[x\\]\\(http" in error.value
    assert (
        "- line 3, field expect_calls: not valid JSON" in said
        and "(in CSV this column holds JSON text)" in said
    )
    assert list_datasets(saved.store)[0]["version"] == 1 and len(list_datasets(saved.store)) == 1
    # a name is needed, and a file or items
    widget(app.text_input, "Dataset name").input(" ").run()
    next(b for b in app.button if b.label == "Save the dataset").click().run()
    assert [shown(e.value) for e in app.error] == ["Give the dataset a name first."]


def test_with_no_dataset_the_run_tab_points_to_the_datasets_tab() -> None:
    app = page("pages/experiments.py")
    assert (
        "An experiment needs a dataset: make one on the Datasets tab (upload a file or write the items)."
        in texts(app)
    )


def test_two_experiments_side_by_side(saved: FlowCall) -> None:
    flow = parse_flow(FLOW)
    run_experiment(saved, flow, "lookup-stand-in", "people")
    save_dataset(
        saved.store,
        "people",
        [ITEMS[0].model_copy(update={"expect_calls": None, "expect_no_call": True}), ITEMS[1]],
        source="test",
    )
    run_experiment(saved, flow, "lookup-stand-in", "people")
    app = page("pages/experiments.py")
    assert "1 pass→fail · 0 fail→pass · 1 unchanged" in texts(app).replace("**", "")
    [compared] = [d.value for d in app.dataframe if "change" in d.value.columns]
    assert list(compared["item"]) == ["age"] and list(compared["change"]) == ["pass→fail"]


def test_a_queued_run_shows_it_waits_for_a_worker(saved: FlowCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:6379/0")
    adopted = saved.prepare(parse_flow(FLOW))
    run = saved.submit(adopted, "张三今年多大了?")
    app = page("pages/run.py")
    app.session_state["run_id"] = run.id
    app.run()
    assert not app.exception, app.exception
    assert f"Run {run.id[:8]}: waiting for a worker" in texts(app) and "0 steps so far" in texts(app)
    assert [b for b in app.button if b.label == "Stop"]  # Stop, from any tab


def test_the_run_page_refuses_a_broker_with_sqlite(saved: FlowCall, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWCALL_BROKER_URL", "redis://127.0.0.1:6379/0")
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("lookup-stand-in").run()
    widget(app.text_area, "Question").input("张三今年多大了?").run()
    next(b for b in app.button if b.label == "Run").click().run()
    error = texts(app)
    assert "FLOWCALL_BROKER_URL" in error and "FLOWCALL_DATABASE_URL" in error
    assert saved.store.list_runs() == []


def test_the_pass_rate_chart_names_every_expectation_and_shows_a_zero_rate() -> None:
    """One row per expectation, so no label is hidden by its neighbour; each bar says its rate,
    so a 0 % bar, which has no length, still shows."""
    from flowcall.core.experiment_record import Summary
    from flowcall.studio.experiments import in_words, pass_rate_chart

    rates = {"succeeded": (4, 4), "expect_calls": (3, 4), "answer_schema": (0, 4), "grounded": (2, 4)}
    rates["answer_contains"] = (1, 4)
    summary = Summary(
        runs=4,
        passed=0,
        failed=4,
        not_run=0,
        pass_rate=0.0,
        by_expectation={name: {"passed": p, "total": t} for name, (p, t) in rates.items()},
    )
    spec = pass_rate_chart(summary).to_dict()
    bars, labels = spec["layer"]
    assert bars["mark"]["type"] == "bar" and labels["mark"]["type"] == "text"
    assert labels["encoding"]["text"] == {"field": "pass rate", "format": ".0%", "type": "quantitative"}
    assert bars["encoding"]["y"]["field"] == "expectation"  # one row each, across
    assert bars["encoding"]["y"]["axis"]["labelOverlap"] is False
    values = next(iter(spec["datasets"].values()))
    assert [row["expectation"] for row in values] == [in_words(name) for name in rates]
    assert [row["pass rate"] for row in values if row["expectation"] == in_words("answer_schema")] == [0.0]
