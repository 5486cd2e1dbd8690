"""A sub-flow on the canvas, in Debian's chromium: the tool that runs another flow is a node in
the sub-flows' own color, and its panel opens the flow it runs (the version it is pinned to)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from flowcall.core.spec import parse_flow
from flowcall.service.front import FlowCall
from tests.e2e.studio_ui import go, settle

pytestmark = [pytest.mark.browser]
ROOT = Path(__file__).resolve().parents[2]
FLOW_TEAL = "rgb(14, 154, 167)"  # .fc-group-flow in the canvas's stylesheet


def test_a_sub_flow_is_a_tool_node_of_its_own_color_that_opens_its_flow(studio, page):
    app = FlowCall.open(studio.database_url)
    child = json.loads((ROOT / "flows" / "current_time.json").read_text(encoding="utf-8"))
    app.save_flow(parse_flow({**child, "name": "the-clock"}))
    parent = {
        "name": "asks-the-clock",
        "decision": {"provider": "local", "model": "qwen2.5-coder-0.5b-instruct"},
        "tools": ["clock/flow/clock"],
        "sources": {"flow": [{"name": "clock", "flow": "the-clock", "version": 1}]},
    }
    app.save_flow(parse_flow(parent))

    go(page, studio.url, "/?flow=asks-the-clock", "Flows")
    frame = page.frame_locator('iframe[title*="flowcall_canvas"]').first
    tool = frame.locator('.react-flow__node[data-id="tool:clock/flow/clock"]')
    expect(tool).to_be_visible()
    expect(tool.locator(".fc-node")).to_have_class(re.compile(r"\bfc-group-flow\b"))
    expect(tool.locator(".fc-node")).to_have_css("border-left-color", FLOW_TEAL)
    expect(tool).to_contain_text("sub-flow · the-clock v1")

    tool.click()
    settle(page)
    page.get_by_role("button", name=re.compile(r"Open the flow the-clock \(it runs version 1\)")).click()
    settle(page)
    opened = page.frame_locator('iframe[title*="flowcall_canvas"]').first
    expect(opened.locator('.react-flow__node[data-id="tool:time/v1/get_current_time"]')).to_be_visible()
