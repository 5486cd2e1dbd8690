"""In Debian's chromium: "Continue it on the Run page" opened in a new tab shows the paused run
under its own flow and question, and the answer lands there; an answer card tells, on hover
and on a click, where each of its values came from."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from flowcall.service.front import FlowCall
from tests.e2e.studio_ui import click, go, screenshot, settle
from tests.test_studio_record import CARD, PROVENANCE, paused_run, recorded

pytestmark = [pytest.mark.browser]


@pytest.fixture
def service(studio, page) -> FlowCall:
    """The studio's own database, with the example flows (seeded by the studio's first page)."""
    go(page, studio.url, "/", "Flows")
    return FlowCall.open(studio.database_url)


def test_continue_in_a_new_tab_shows_the_paused_run_under_its_own_flow(studio, page, service, shots):
    run = paused_run(service)
    go(page, studio.url, f"/inspector?run={run.id}", "Runs & inspector")
    link = page.get_by_role("link", name="Continue it on the Run page")
    expect(link).to_be_visible()
    href = link.get_attribute("href")
    assert href and href.endswith(f"ask?run={run.id}"), href
    tab = page.context.new_page()  # "open link in new tab": a new session, which has seen nothing of this run
    tab.set_default_timeout(60_000)
    tab.goto(f"{studio.url}/{href.lstrip('/')}")
    expect(tab.get_by_role("heading", name="Run a flow", exact=True)).to_be_visible()
    settle(tab)
    flow = tab.get_by_role("combobox", name="Flow")
    expect(flow).to_have_value("git-tidy")
    expect(tab.locator('[data-testid="stTextArea"] textarea').first).to_have_value(run.question)
    expect(tab.get_by_text("Adds a task for each branch", exact=False)).to_be_visible()
    expect(tab.get_by_text("The run waits for you", exact=False)).to_be_visible()
    screenshot(tab, shots / "continue-in-a-new-tab.png")
    click(tab, "Continue the run")
    expect(tab.get_by_role("heading", name="Answer")).to_be_visible()
    expect(flow).to_have_value("git-tidy")  # the answer is under the run's own flow
    expect(tab.get_by_text(f"Run {run.id[:8]} of git-tidy", exact=False)).to_be_visible()
    expect(tab.get_by_role("button", name="Stop", exact=True)).to_have_count(0)
    assert service.store.get_run(run.id).status.value == "succeeded"


def test_the_answer_card_tells_where_each_value_came_from(studio, page, service, shots):
    run = recorded(service, final_answer=CARD, provenance=PROVENANCE)
    go(page, studio.url, f"/ask?run={run.id}", "Run a flow")
    expect(
        page.get_by_text("3 of 4 values traced to tool results or the question; 1 from the model")
    ).to_be_visible()
    unbacked = page.locator('[data-testid="stMetric"]').filter(has_text="need umbrella")
    expect(unbacked).to_contain_text("⚠ from the model")  # marked on the card itself

    # hover: the value's source
    page.locator('[data-testid="stMetric"]').filter(has_text="temp high").locator(
        '[data-testid="stTooltipHoverTarget"]'
    ).first.hover()
    expect(page.get_by_text("from get_day_weather → /daily/0/temp_max")).to_be_visible()
    screenshot(page, shots / "answer-provenance-hover.png")

    # click: every value, its source and where
    page.get_by_text("Where each value came from").click()
    table = page.locator('[data-testid="stTable"]')
    expect(table).to_contain_text("get_day_weather → /daily/0/rain (normalised)")
    expect(table).to_contain_text("no tool gave this")
    expect(table).to_contain_text("the question")
    screenshot(page, shots / "answer-provenance-table.png", table)


def test_a_run_that_starts_waiting_elsewhere_shows_in_an_open_tab(studio, page, service, shots):
    """A tab left open on the Flows page: a run paused meanwhile by another process shows in its
    sidebar without a reload, and approving it from there continues it in the studio's runner."""
    expect(page.get_by_text("Waiting for you", exact=False)).to_have_count(0)
    run = paused_run(service)  # paused by this test's process: another tab, the CLI, a worker
    waiting = page.get_by_role("link", name="git-tidy", exact=False)
    expect(waiting).to_be_visible(timeout=30_000)  # the sidebar redraws itself
    screenshot(page, shots / "waiting-in-an-open-tab.png")
    waiting.click()
    expect(page.get_by_text("The run waits for you", exact=False)).to_be_visible()
    settle(page)
    click(page, "Continue the run")
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=120_000)
    assert service.store.get_run(run.id).status.value == "succeeded"
