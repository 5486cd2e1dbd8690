"""Runs that don't live in a browser tab, in chromium on the embedded model: the studio hands
each run to its runner and the page follows it. Leaving the page, a second tab, a reload or the
studio's death never loses a run: it succeeds, waits its turn, or is interrupted and resumed."""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from flowcall.core.steps import RunStatus, StepKind
from flowcall.service.front import FlowCall
from flowcall.studio.shared import EXAMPLE_QUESTIONS
from tests.e2e.conftest import launched
from tests.e2e.studio_ui import choose, fill, go
from tests.e2e.test_canvas_browser import canvas, node

FLOW, TOOL = "employee-lookup", "tool:hr/v1/lookup_employee"  # a decision, a lookup, an answer
ANSWERED_MS = 600_000  # a bound for a run on the embedded model on a slow machine, not a target

pytestmark = pytest.mark.model


def opened(page: Page, url: str, path: str, title: str) -> None:
    """A page of the studio, reached from its first page as a person does (a studio that has
    served no page yet shows a "Page not found" notice over a bookmarked one: known limits)."""
    go(page, url, "/", "Flows")
    go(page, url, path, title)


def prepared(page: Page, url: str, question: str, flow: str = FLOW) -> None:
    """The Run page with `flow` chosen and the question typed, not run yet."""
    opened(page, url, "/ask", "Run a flow")
    choose(page, "Flow", flow)
    fill(page, "Question", question, area=True)


def started(page: Page) -> str:
    """Run what the page holds; the run's id, from the address the page gives it."""
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_url(re.compile(r"[?&]run=[0-9a-f-]{36}"))
    return parse_qs(urlparse(page.url).query)["run"][0]


def ask(page: Page, url: str, question: str) -> str:
    """Start a run of FLOW on the Run page; its id."""
    prepared(page, url, question)
    return started(page)


def answered(page: Page) -> None:
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWERED_MS)


def test_a_run_goes_on_while_the_person_looks_elsewhere(studio, page, shots, model_path):
    store = FlowCall.open(studio.database_url).store
    run_id = ask(page, studio.url, "张三今年多大了?")
    expect(page.get_by_text(re.compile(r"steps so far"))).to_be_visible()
    page.get_by_role("link", name="Runs & inspector").click()  # at once, while the run goes on
    expect(page.get_by_role("heading", name="Runs & inspector")).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Going on now \(\d+\)$"))).to_be_visible()
    page.screenshot(path=shots / "runs-going-on.png")
    page.get_by_role("link", name="Run", exact=True).click()  # and back
    answered(page)
    assert store.get_run(run_id).status == RunStatus.SUCCEEDED
    graph = canvas(page, 0)
    node(graph, TOOL).click()  # the graph of the ended run is the clickable one
    expect(page.get_by_text("Last arguments")).to_be_visible()


def test_two_tabs_each_run_the_second_waits_its_turn(studio, page, shots, model_path):
    store = FlowCall.open(studio.database_url).store
    other = page.context.new_page()  # a second tab: its own session
    other.set_default_timeout(60_000)
    # both tabs ready before either runs, and the first asks for the longer commute card: the
    # second run starts while the first still holds the model, on a fast machine too
    prepared(page, studio.url, EXAMPLE_QUESTIONS["commute-weather"], "commute-weather")
    prepared(other, studio.url, "李四今年多大了?")
    first = started(page)
    second = started(other)
    expect(other.get_by_text("1st in line for the embedded model", exact=False)).to_be_visible()
    other.screenshot(path=shots / "run-in-line.png")
    answered(page)
    answered(other)
    one, two = store.get_run(first), store.get_run(second)
    assert one.status == two.status == RunStatus.SUCCEEDED
    assert two.started_at >= one.ended_at  # they took turns on the embedded model


def test_a_reload_during_a_run_finds_it_still_going_on(studio, page, model_path):
    store = FlowCall.open(studio.database_url).store
    run_id = ask(page, studio.url, "张三今年多大了?")
    page.reload()
    expect(page.get_by_text(re.compile(r"steps so far"))).to_be_visible()
    answered(page)
    assert store.get_run(run_id).status == RunStatus.SUCCEEDED


def test_a_run_whose_studio_was_killed_is_interrupted_and_resumes(tmp_path, page, model_path):
    database_url = f"sqlite:///{tmp_path / 'flowcall.db'}"
    store = FlowCall.open(database_url).store
    with launched(tmp_path, database_url) as (url, studio):
        run_id = ask(page, url, "张三今年多大了?")
        deadline = time.monotonic() + ANSWERED_MS / 1000
        while not store.get_run(run_id).steps:  # mid-run: it has committed a step
            assert time.monotonic() < deadline, "the run committed no step"
            time.sleep(0.2)
        studio.kill()  # kill -9: no chance to tidy up
        studio.wait()
    run = store.get_run(run_id)
    assert run.status == RunStatus.INTERRUPTED and run.steps
    with launched(tmp_path, database_url) as (url, _):
        opened(page, url, f"/ask?run={run_id}", "Run a flow")
        expect(page.get_by_text("was interrupted", exact=False)).to_be_visible()
        page.get_by_role("button", name="Resume", exact=True).click()
        answered(page)
    done = store.get_run(run_id)
    assert done.status == RunStatus.SUCCEEDED, done.error
    assert [s.name for s in done.steps if s.kind == StepKind.TOOL_CALL] == ["lookup_employee"]
