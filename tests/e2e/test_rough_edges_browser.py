"""The studio's rough edges a newcomer met in chromium, each driven as a person does."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.service.front import FlowCall
from tests.e2e.studio_ui import choose, click, fill, go, settle
from tests.e2e.test_canvas_browser import canvas

pytestmark = [pytest.mark.browser]


def test_the_first_click_on_run_runs_a_question_just_typed(studio, page):
    """Typed, not yet sent (no Ctrl+Enter, no click elsewhere): the click on Run sends it and runs
    it. A button disabled while the box looked empty swallowed that first click."""
    go(page, studio.url, "/", "Flows")
    store = FlowCall.open(studio.database_url).store
    store.save_flow(Flow(name="no-example", decision=DecisionConfig(provider="scripted", model="schema")))
    go(page, studio.url, "/ask", "Run a flow")
    choose(page, "Flow", "no-example")
    fill(page, "Question", "what is on today?", area=True, commit=False)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_url(re.compile(r"[?&]run=[0-9a-f-]{36}"))
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=60_000)
    assert [r.question for r in store.list_runs(flow_name="no-example")] == ["what is on today?"]


def test_the_new_flow_popover_closes_after_create(studio, page):
    """After Create the new flow's canvas is in view, not under the form that made it."""
    go(page, studio.url, "/", "Flows")
    page.get_by_role("button", name="New flow").click()
    expect(page.get_by_text("Start from")).to_be_visible()
    fill(page, "Name", "popover-closes", commit=False)
    click(page, "Create")
    expect(page.get_by_role("combobox", name="Flow")).to_have_value(re.compile("popover-closes"))
    expect(page.get_by_text("Start from")).to_be_hidden()
    expect(canvas(page).locator('.react-flow__node[data-id="question"]')).to_be_visible()


def test_a_new_http_source_and_its_form_are_in_view(studio, page, shots):
    """ "+ HTTP source" sits above the tool cards, and its form opens level with it, on screen."""
    go(page, studio.url, "/?flow=commute-weather", "Flows")
    add = page.get_by_role("button", name="+ HTTP source")
    expect(add).to_be_in_viewport()
    add.click()
    settle(page)
    field = page.get_by_role("textbox", name="OpenAPI document (a file path or an http(s) URL)")
    expect(field).to_be_in_viewport()
    page.screenshot(path=shots / "flows-new-http-source.png")
