"""The Experiments page in a real browser (issue 13, point 2; issue 37): a dataset uploaded in the
page (a bad file refused, naming its line), an experiment run from the page with its progress
bar, its results as figures, a table and the two charts, an item picked in the table and its run
opened in the inspector. The flow's decision model is the schema-driven stand-in (provider
"scripted"), so no model file is read and the verdicts are known: one pass, one fail."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from flowcall.core.datasets import DatasetItem, to_jsonl
from flowcall.core.spec import parse_flow
from flowcall.service.front import FlowCall
from flowcall.store.datasets import get_dataset, list_datasets, save_dataset
from flowcall.store.experiments import get_experiment, list_experiments
from tests.e2e.studio_ui import choose, click, fill, go, screenshot, settle, tab, widget

pytestmark = [pytest.mark.browser]

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


def metric(page, label: str):
    """The value of the figure labelled `label`."""
    return (
        page.locator('[data-testid="stMetric"]')
        .filter(has_text=label)
        .locator('[data-testid="stMetricValue"]')
        .first
    )


def test_upload_a_dataset_a_bad_file_refused_then_a_good_one_saved(studio, page, shots, tmp_path):
    app = FlowCall.open(studio.database_url)
    app.store.save_flow(parse_flow(FLOW))
    go(page, studio.url, "/", "Flows")
    page.get_by_role("link", name="Experiments").click()
    expect(page.get_by_role("heading", name="Experiments", exact=True)).to_be_visible()
    settle(page)
    expect(page.get_by_text("make one on the Datasets tab", exact=False)).to_be_visible()
    tab(page, "Datasets")
    fill(page, "Dataset name", "uploaded people")
    bad = tmp_path / "people.csv"
    bad.write_text(
        'question,expect_calls\n你好,\n张三今年多大了?,"[{""name"": ""lookup_employee""}"\n', encoding="utf-8"
    )
    uploader = widget(page, "stFileUploader", "Dataset file").locator('input[type="file"]')
    uploader.set_input_files(str(bad))
    settle(page)
    click(page, "Save the dataset")
    refused = page.locator('[data-testid="stAlertContentError"]')
    expect(refused).to_contain_text("people.csv could not be saved")
    expect(refused).to_contain_text("line 3, field expect_calls: not valid JSON")
    screenshot(page, shots / "experiments-dataset-refused.png", page.get_by_role("tab", name="Datasets"))
    assert "uploaded people" not in [d["name"] for d in list_datasets(app.store)]

    good = tmp_path / "people.jsonl"
    good.write_text(to_jsonl(ITEMS), encoding="utf-8")
    uploader.set_input_files(str(good))
    settle(page)
    click(page, "Save the dataset")
    expect(page.get_by_text("Saved uploaded people as version 1 with 2 items.", exact=False)).to_be_visible()
    assert get_dataset(app.store, "uploaded people").items == ITEMS
    tab(page, "Run")
    picked = widget(page, "stSelectbox", "Dataset").locator("input").first
    expect(picked).to_have_value("uploaded people")
    app.store.close()


def test_run_an_experiment_and_open_an_item_in_the_inspector(studio, page, shots):
    app = FlowCall.open(studio.database_url)
    app.store.save_flow(parse_flow(FLOW))
    save_dataset(app.store, "people", ITEMS, source="test")

    # the studio's first session ever shows Streamlit's "Page not found" over a deep link (the
    # pages are known once app.py has run once), so this one comes in by the front door
    go(page, studio.url, "/", "Flows")
    page.get_by_role("link", name="Experiments").click()
    expect(page.get_by_role("heading", name="Experiments", exact=True)).to_be_visible()
    settle(page)
    choose(page, "Flow", "lookup-stand-in")
    choose(page, "Dataset", "people")
    click(page, "Run the experiment")
    expect(page.get_by_text("2 of 2 runs · 1 failed")).to_be_visible()  # the progress bar's last text
    [experiment] = list_experiments(app.store)
    expect(
        page.get_by_text(
            f"Experiment {experiment.id} finished: 1 of 2 runs passed (50%). See the Results tab.", exact=True
        )
    ).to_be_visible()
    assert experiment.status.value == "finished"

    tab(page, "Results")
    expect(metric(page, "Pass rate")).to_have_text("50%")
    expect(metric(page, "Passed")).to_have_text("1 of 2")
    charts = page.locator('[data-testid="stVegaLiteChart"]')
    expect(charts).to_have_count(2)
    expect(charts.first).to_contain_text("pass rate")  # the axis titles, drawn as SVG text
    expect(charts.last).to_contain_text("seconds")
    grid = page.locator('[data-testid="stDataFrame"]').first
    expect(grid).to_be_visible()
    screenshot(page, shots / "experiments-results.png", page.get_by_role("tab", name="Results"))
    opener = page.get_by_role("button", name="Open its run in the inspector", exact=True)
    expect(opener).to_be_disabled()

    # the grid is drawn on a canvas: pick the first item by its row's selection box, at the left
    # edge of the first row under the header
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
    settle(page)
    expect(opener).to_be_enabled()
    opener.click()
    settle(page)
    expect(page.get_by_role("heading", name="Runs & inspector", exact=True)).to_be_visible()
    first_run = app.store.get_run(get_experiment(app.store, experiment.id).items[0].run_id)
    # the run it opens is the item's, not merely the newest (the table lists both)
    expect(page.get_by_role("heading", name=f"Run {first_run.id[:8]}", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Export run as JSON")).to_be_visible()  # the run is drawn
    screenshot(page, shots / "experiments-item-in-inspector.png")
    app.store.close()


def test_an_experiment_left_running_is_resumed_in_the_browser(studio, page, shots):
    from flowcall.eval.experiments import start

    app = FlowCall.open(studio.database_url)
    flow = parse_flow({**FLOW, "name": "lookup-left-running"})
    app.store.save_flow(flow)
    save_dataset(app.store, "people-left", ITEMS, source="test")
    started = start(app, flow, "lookup-left-running", "people-left")  # its process "died" before any item

    go(page, studio.url, "/", "Flows")
    page.get_by_role("link", name="Experiments").click()
    expect(page.get_by_role("heading", name="Experiments", exact=True)).to_be_visible()
    settle(page)
    tab(page, "Results")  # the newest experiment is the one shown first
    header = page.get_by_text("lookup-left-running v1 × people-left v1", exact=False).first
    expect(header).to_contain_text("running")
    click(page, "Resume it here")
    expect(
        page.get_by_text(f"Experiment {started.id} finished: 1 of 2 runs passed", exact=False)
    ).to_be_visible()
    expect(metric(page, "Passed")).to_have_text("1 of 2")
    # drawn again after the resume: the header says finished and the button is gone
    expect(header).to_contain_text("finished")
    picked = widget(page, "stSelectbox", "Experiment").locator("input").first
    expect(picked).to_have_value(re.compile(r"\bfinished\b"))  # the picker too
    expect(page.get_by_role("button", name="Resume it here")).to_have_count(0)
    assert get_experiment(app.store, started.id).status.value == "finished"
    screenshot(page, shots / "experiments-resumed.png", page.get_by_role("tab", name="Results"))
    app.store.close()
