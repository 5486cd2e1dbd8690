"""End to end in Debian's chromium: create a flow, run it on the embedded model, open the run
in the inspector, step through it, compare it with another run, export it and import it back.
A screenshot of every page is kept (test-artifacts/screenshots/)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from flowcall.service.front import FlowCall
from tests.e2e.studio_ui import choose, click, fill, go, screenshot, settle, tab, view

pytestmark = [pytest.mark.browser]


def text(page, needle: str):
    return page.get_by_text(needle, exact=False).first


@pytest.mark.model
def test_create_run_inspect_compare_export_import(studio, page, shots, tmp_path, model_path):
    # --- Flows: create a flow (the form view: every setting on one page, for the keyboard)
    go(page, studio.url, "/", "Flows")
    page.screenshot(path=shots / "flows.png")
    page.get_by_role("button", name="New flow").click()
    fill(page, "Name", "e2e-lookup", commit=False)
    click(page, "Create")
    click(page, "+ Decision model")
    click(page, "Save")
    expect(text(page, "Saved 'e2e-lookup' as version 1.")).to_be_visible()
    view(page, "Form")
    fill(
        page,
        "System prompt",
        "When the user asks about a colleague or employee, call lookup_employee with the person's name.",
        area=True,
    )
    tools = (
        page.locator('[data-testid="stMultiSelect"]').filter(has_text="Attached tools").locator("input").first
    )
    tools.click()
    page.keyboard.type("lookup_employee")  # the list shows each tool with its description
    page.get_by_role("option").filter(has_text="hr/v1/lookup_employee").first.click()
    page.keyboard.press("Escape")
    page.get_by_role(
        "heading", name="Tools", exact=True
    ).click()  # the list closes: a click lands where aimed
    settle(page)
    click(page, "Add a polish model")
    fill(
        page,
        "Polish prompt (empty: FlowCall's default)",
        "Answer the user's question about the employee "
        "in one short sentence, in the user's language, using only the lookup result.",
        area=True,
    )
    click(page, "Save")
    expect(text(page, "Saved 'e2e-lookup' as version 2.")).to_be_visible()
    screenshot(page, shots / "flow-form.png")
    view(page, "Versions")
    expect(text(page, '+    "hr/v1/lookup_employee"')).to_be_visible()
    screenshot(page, shots / "flow-versions.png")

    # an invalid flow file: a clear error, and nothing changes
    bad = tmp_path / "bad-flow.json"
    bad.write_text('{"name": "broken", "max_rounds": 0}')
    page.get_by_role("button", name="Import").click()
    page.locator('[data-testid="stFileUploader"] input[type=file]').first.set_input_files(bad)
    settle(page)
    expect(text(page, "max_rounds")).to_be_visible()
    expect(text(page, "Nothing was changed")).to_be_visible()
    unknown = tmp_path / "unknown-tool.json"
    unknown.write_text('{"name": "ghost-tools", "tools": ["foo/v1/bar"]}')
    if not page.locator('[data-testid="stFileUploader"]').first.is_visible():
        page.get_by_role("button", name="Import").click()
    page.locator('[data-testid="stFileUploader"] input[type=file]').first.set_input_files(unknown)
    settle(page)
    expect(text(page, "no tool 'foo/v1/bar' is registered")).to_be_visible()
    store = FlowCall.open(studio.database_url).store
    assert not {"broken", "ghost-tools"} & {f["name"] for f in store.list_flows()}
    created = store.get_flow("e2e-lookup")[0]
    assert created.tools == ["hr/v1/lookup_employee"] and created.polish is not None

    # --- Run: twice on the embedded model, so there is something to compare
    go(page, studio.url, "/ask", "Run a flow")
    choose(page, "Flow", "e2e-lookup")
    for question in ("张三今年多大了?", "李四今年多大了?"):
        fill(page, "Question", question, area=True)
        click(page, "Run")  # the run goes on in the studio's runner; the page follows it
        expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=600_000)
        settle(page)
    page.screenshot(path=shots / "run.png")
    runs = store.list_runs(flow_name="e2e-lookup")
    assert len(runs) == 2 and all(r.status.value == "succeeded" for r in runs)

    # --- Inspector: step through the newest run, compare it with the first
    go(page, studio.url, "/inspector", "Runs & inspector")
    expect(
        text(page, "#### [1]").or_(page.get_by_role("heading", name="[1] model_call", exact=False))
    ).to_be_visible()
    click(
        page, "Next ▶"
    )  # the first steps score the tool's relevance (one or two readings); then the decision
    expect(page.get_by_role("heading", name="[2] model_call", exact=False)).to_be_visible()
    expect(text(page, "Request (exactly as sent)")).to_be_visible()
    screenshot(page, shots / "inspector-request.png", page.get_by_role("tab", name="Timeline"))
    for _ in range(3):  # on to the tool call, however many scoring steps came first
        click(page, "Next ▶")
        if page.get_by_role("heading", name="tool_call", exact=False).count():
            break
    expect(page.get_by_role("heading", name="tool_call", exact=False)).to_be_visible()
    expect(page.locator('[data-testid="stCode"]', has_text="李四").first).to_be_visible()
    # the run's graph: a click on the decision model goes to its first step in the timeline
    graph = page.frame_locator('iframe[title*="flowcall_canvas"]').first
    expect(graph.locator('.react-flow__node[data-id="tool:hr/v1/lookup_employee"] .fc-badge')).to_have_text(
        "1 call"
    )
    graph.locator('.react-flow__node[data-id="decision"]').click()
    settle(page)
    expect(page.get_by_role("heading", name="model_call", exact=False)).to_be_visible()
    graph.locator('.react-flow__node[data-id="tool:hr/v1/lookup_employee"]').click()
    settle(page)
    expect(page.get_by_role("heading", name="tool_call", exact=False)).to_be_visible()
    screenshot(page, shots / "inspector-step.png", page.get_by_role("tab", name="Timeline"))
    click(page, "◀ Previous")
    expect(page.get_by_role("heading", name="model_call", exact=False)).to_be_visible()
    tab(page, "Charts")
    screenshot(page, shots / "inspector-charts.png", page.get_by_role("tab", name="Charts"))
    tab(page, "Compare")
    expect(text(page, "aligned steps are the same")).to_be_visible()
    screenshot(page, shots / "inspector-compare.png", page.get_by_role("tab", name="Compare"))

    # --- export the run, then import it back
    with page.expect_download() as download:
        page.get_by_role("button", name="Export run as JSON").click()
    exported = tmp_path / "run.json"
    download.value.save_as(exported)
    data = json.loads(exported.read_text())
    assert data["format"] == "flowcall.run/v1" and data["run"]["id"] == runs[0].id and data["run"]["steps"]
    text(page, "Import a run (JSON exported from an inspector)").click()
    page.locator('[data-testid="stFileUploader"] input[type=file]').first.set_input_files(exported)
    settle(page)
    expect(text(page, "Imported run")).to_be_visible()
    imported = store.list_runs(flow_name="e2e-lookup")
    assert len(imported) == 3
    copy = next(r for r in imported if r.id not in {r.id for r in runs})
    assert len(store.get_run(copy.id).steps) == len(data["run"]["steps"])


def test_plugins_and_models_pages_render(studio, page, shots):
    go(page, studio.url, "/tools", "Plugins")
    expect(text(page, "weather/v1/get_weather")).to_be_visible()
    page.screenshot(path=shots / "plugins.png")
    # try a tool with the form generated from its JSON Schema
    tab(page, "Try it")
    choose(page, "Tool", "weather/v1/get_weather")
    fill(page, "location *", "成都", commit=False)
    click(page, "Run")
    expect(text(page, "weather/v1/get_weather answered in")).to_be_visible()
    expect(page.locator('[data-testid="stJson"]', has_text="成都").first).to_be_visible()
    screenshot(page, shots / "plugins-try.png", page.get_by_role("tab", name="Try it"))
    go(page, studio.url, "/model-setup", "Models")
    page.screenshot(path=shots / "models.png")


@pytest.mark.model
def test_structured_answer_shows_as_a_card_beside_its_json(studio, page, shots, model_path):
    go(page, studio.url, "/ask", "Run a flow")
    choose(page, "Flow", "commute-weather")  # an example flow, with the seeds' weather card schema
    page.get_by_role("button", name="Run", exact=True).click()
    # while the polish model writes, its text shows as it comes (issue 12, point 6)
    writing = page.get_by_text(re.compile(r"^polish · .+ · writing$"))
    expect(writing).to_be_visible(timeout=300_000)
    screenshot(page, shots / "run-writing.png", page.get_by_role("heading", name="Run a flow"))
    expect(page.locator('[data-testid="stText"]:visible', has_text="{").first).to_be_visible(
        timeout=60_000
    )  # the JSON being written
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=600_000)
    settle(page)
    expect(writing).to_have_count(0)  # gone once the step's record is in
    expect(text(page, "Raw JSON (valid against the polish schema)")).to_be_visible()
    expect(page.locator('[data-testid="stMetric"]').first).to_be_visible()
    screenshot(page, shots / "run-card.png", page.get_by_role("heading", name="Answer"))
