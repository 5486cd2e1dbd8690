"""The canvas in Debian's chromium: the commute-weather flow built from an empty canvas (decision
model, a tool from the palette, a polish model with the card's JSON Schema), saved and run on
the embedded model, the run drawn on the graph; a tool removed with the Delete key; an MCP
server added through its form, granted in the consent panel, its tools in the palette.
Every user action is counted (ACTIONS), for the issue's comparison with the old form."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from playwright.sync_api import FrameLocator, Page, expect

from flowcall.service.front import FlowCall
from tests.e2e.studio_ui import click, fill, go, screenshot, settle, view
from tests.tools.test_mcp_client import SERVER

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
COMMUTE = json.loads((ROOT / "flows" / "commute_weather.json").read_text(encoding="utf-8"))


class Counted:
    """The person's actions: a click, a typed field, a key, a drag."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, count: int = 1) -> None:
        self.n += count


def canvas(page: Page, index: int = 0) -> FrameLocator:
    return page.frame_locator('iframe[title*="flowcall_canvas"]').nth(index)


def node(frame: FrameLocator, node_id: str):
    return frame.locator(f'.react-flow__node[data-id="{node_id}"]')


@pytest.mark.model
def test_build_the_commute_flow_on_the_canvas_run_it_and_add_an_mcp_server(studio, page, shots, model_path):
    act = Counted()
    store = FlowCall.open(studio.database_url).store
    go(page, studio.url, "/", "Flows")

    # --- a new flow from the blank template: the canvas holds the question and the answer
    page.get_by_role("button", name="New flow").click()
    act()
    fill(page, "Name", "my-commute", commit=False)
    act()
    click(page, "Create")
    act()
    frame = canvas(page)
    expect(node(frame, "question")).to_be_visible()
    expect(node(frame, "decision")).to_have_count(0)

    # --- the decision model from the palette; its settings open beside the canvas
    click(page, "+ Decision model")
    act()
    expect(node(frame, "decision")).to_be_visible()
    fill(page, "System prompt", COMMUTE["decision"]["system_prompt"], area=True)
    act()

    # --- the tool from the palette, connected to the decision model
    fill(page, "Search tools", "get_day_weather")
    act()
    page.get_by_role("button", name="Add", exact=True).first.click()
    act()  # the one tool the search left
    settle(page)
    tool = node(frame, "tool:weather/v1/get_day_weather")
    expect(tool).to_be_visible()
    expect(
        frame.locator('.react-flow__edge[data-id="decision->tool:weather/v1/get_day_weather"]')
    ).to_have_count(1)

    # --- click the decision node: name the tool it must call
    node(frame, "decision").click()
    act()
    settle(page)
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Tool choice").locator("input").first
    box.click()
    act()
    page.get_by_role("option", name="get_day_weather", exact=True).click()
    act()
    settle(page)

    # --- the polish model with the card's JSON Schema, checked as it is typed
    click(page, "+ Polish model")
    act()
    expect(node(frame, "polish")).to_be_visible()
    fill(page, "Polish prompt (empty: FlowCall's default)", COMMUTE["polish"]["system_prompt"], area=True)
    act()
    fill(
        page,
        "Answer as JSON valid against this schema (optional)",
        json.dumps(COMMUTE["polish"]["output_schema"]),
        area=True,
    )
    act()
    expect(page.get_by_text("The schema is valid", exact=False)).to_be_visible()
    screenshot(page, shots / "canvas-side-panel.png")
    click(page, "Save")
    act()
    expect(page.get_by_text("Saved 'my-commute' as version 1.", exact=False)).to_be_visible()
    built_actions = act.n
    flow = store.get_flow("my-commute")[0]
    assert flow.tools == ["weather/v1/get_day_weather"] and flow.tool_choice == "get_day_weather"
    assert flow.polish.output_schema == COMMUTE["polish"]["output_schema"]
    screenshot(page, shots / "canvas.png")

    # --- the picture as it is drawn, to download
    frame.get_by_role("button", name="PNG").click()
    settle(page)
    view(page, "JSON & picture")
    with page.expect_download() as download:
        page.get_by_role("button", name="Picture (PNG)").click()
    assert Path(download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with page.expect_download() as download:
        page.get_by_role("button", name="Picture (SVG)").click()
    assert "get_day_weather" in Path(download.value.path()).read_text(encoding="utf-8")
    view(page, "Canvas")

    # --- a tool selected on the canvas and the Delete key take it off again
    fill(page, "Search tools", "get_weather")
    page.get_by_role("button", name="Add", exact=True).first.click()
    settle(page)
    extra = node(frame, "tool:weather/v1/get_weather")
    expect(extra).to_be_visible()
    extra.click()
    settle(page)
    extra.press("Delete")
    settle(page)
    expect(extra).to_have_count(0)
    expect(tool).to_be_visible()

    # --- run it on the embedded model: the graph shows what the run did
    page.get_by_role("link", name="Run this flow").click()
    act()
    expect(page.get_by_role("heading", name="Run a flow", exact=True)).to_be_visible()
    settle(page)
    expect(page.get_by_role("combobox", name="Flow")).to_have_value("my-commute")
    fill(page, "Question", "明天成都通勤要带伞吗?", area=True)
    act()
    click(page, "Run")
    act()
    # the run goes on in the studio's runner; the page shows the clickable graph as it goes,
    # and the whole run once it has ended
    expect(page.get_by_role("heading", name="What the run did")).to_be_visible(timeout=600_000)
    settle(page)
    run = store.list_runs(flow_name="my-commute")[0]
    assert run.status.value in ("succeeded", "failed"), run.status
    graph = canvas(page, 0)
    expect(
        graph.locator('.react-flow__node[data-id="tool:weather/v1/get_day_weather"] .fc-badge')
    ).to_have_text("1 call")
    expect(graph.locator('.react-flow__node[data-id="decision"] .fc-badge')).to_contain_text("tok")
    node(graph, "tool:weather/v1/get_day_weather").click()
    settle(page)
    expect(page.get_by_text("Last arguments")).to_be_visible()
    screenshot(page, shots / "run-on-graph.png", page.get_by_role("heading", name="What the run did"))

    # --- an MCP server through its form, granted in the consent panel, its tools in the palette
    go(page, studio.url, "/?flow=my-commute", "Flows")
    click(page, "+ MCP server")
    fill(page, "Name", "own")
    fill(page, "Command (the program to start)", sys.executable)
    click(page, "Add an argument")
    page.get_by_placeholder("mcp-server-time").last.fill(SERVER)
    page.get_by_placeholder("mcp-server-time").last.press("Enter")
    settle(page)
    click(page, "Add an argument")
    page.get_by_placeholder("mcp-server-time").last.fill("stdio")
    page.get_by_placeholder("mcp-server-time").last.press("Enter")
    settle(page)
    click(page, "List tools")
    expect(page.get_by_text("nobody on this machine has granted it", exact=False)).to_be_visible()
    click(page, "Grant")
    expect(page.get_by_text("tools; a flow attaches them", exact=False)).to_be_visible(timeout=60_000)
    click(page, "Keep in the flow")
    expect(page.get_by_text("MCP servers", exact=True)).to_be_visible()
    expect(page.locator('[data-testid="stMarkdownContainer"]', has_text="own/mcp").first).to_be_visible()
    screenshot(page, shots / "canvas-mcp-palette.png")
    print(
        f"\nuser actions to build, save and run the commute flow on the canvas: {built_actions} to build and "
        f"save, {act.n} with the run"
    )
