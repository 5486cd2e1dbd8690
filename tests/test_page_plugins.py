"""The Plugins page with streamlit.testing's AppTest: real plugins, FlowCall's test MCP server over stdio."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.core.spec import Flow
from flowcall.service.front import FlowCall
from flowcall.tools.trial import source_tools
from tests.test_studio import shown
from tests.tools.test_mcp_client import SERVER

ROOT = Path(__file__).resolve().parents[1]
WEATHER = "weather/v1/get_weather"


@pytest.fixture(autouse=True)
def _offline_weather(monkeypatch):
    monkeypatch.delenv("AMAP_API_KEY", raising=False)


@pytest.fixture
def app() -> AppTest:
    page = AppTest.from_file(str(ROOT / "pages" / "plugins.py"), default_timeout=120)
    page.run()
    assert not page.exception
    return page


def tab(app: AppTest, label: str):
    return next(t for t in app.tabs if t.label == label)


GRANT = "mcp:b:grant"  # the consent panel's Grant (flowcall/studio/sources.py)


def connect_own_server(app: AppTest) -> None:
    """Connect to FlowCall's own test server by command: the consent panel first, then Grant."""
    app.text_input(key="mcp:name").input("own")
    app.text_input(key="mcp:command").input(shlex.join([sys.executable, SERVER, "stdio"]))
    app.button(key="mcp:connect").click().run()
    assert not app.exception
    app.button(key=GRANT).click().run()
    assert not app.exception


def test_lists_every_tool_with_its_token_cost_and_search_filters(app):
    labels = [shown(e.label) for e in tab(app, "Tools").expander]
    weather = next(label for label in labels if WEATHER in label)
    assert "tokens" in weather and int(weather.split("· ")[1].split()[0]) > 50
    assert any("task/v1/create_task" in label for label in labels)
    app.text_input(key="plugins:search").input("3天预报").run()
    assert [shown(e.label).split(" · ")[0] for e in tab(app, "Tools").expander] == [WEATHER]
    assert "1 of" in tab(app, "Tools").caption[0].value


def test_trying_a_plugin_shows_its_result(app):
    app.selectbox(key="plugins:try_tool").select(WEATHER).run()
    app.text_input(key=f"try:{WEATHER}:location").input("成都")
    app.selectbox(key=f"try:{WEATHER}:extensions").select("all")
    app.button(key=f"try:{WEATHER}:run").click().run()
    view = tab(app, "Try it")
    assert not app.exception and not view.error
    assert WEATHER in shown(view.success[0].value) and " ms" in view.success[0].value
    result = json.loads(view.json[0].value)
    assert result["location"] == "成都" and len(result["forecasts"]) == 3  # "all" picked: the forecast


def test_an_empty_required_field_is_named_and_nothing_runs(app):
    app.selectbox(key="plugins:try_tool").select(WEATHER).run()
    app.button(key=f"try:{WEATHER}:run").click().run()
    view = tab(app, "Try it")
    assert "Nothing was run" in view.error[0].value and "location is required" in shown(view.error[0].value)
    assert not view.success and not view.json


def test_a_tool_failure_is_shown_with_what_to_do(app):
    app.selectbox(key="plugins:try_tool").select(WEATHER).run()
    app.text_input(key=f"try:{WEATHER}:location").input("Atlantis")
    app.button(key=f"try:{WEATHER}:run").click().run()
    error = shown(tab(app, "Try it").error[0].value)
    assert error.startswith("TOOL_ERROR: get_weather failed") and "Atlantis" in error
    assert "What to do: the tool itself failed" in error


def test_attaching_the_test_server_lists_and_tries_its_tools(app):
    connect_own_server(app)
    view = tab(app, "Attach an MCP server")
    assert view.status[0].label == "Connected to 'own': 6 tools" and view.status[0].state == "complete"
    assert [shown(e.label).split(" · ")[0] for e in view.expander[-6:]] == [
        f"own/mcp/{n}" for n in ("add", "shout", "save_note", "fail", "hang", "crash")
    ]
    assert all("tokens" in e.label for e in view.expander[-6:])
    app.number_input(key="mcp:own:add:a").set_value(2)
    app.number_input(key="mcp:own:add:b").set_value(40)
    app.button(key="mcp:own:add:run").click().run()
    view = tab(app, "Attach an MCP server")
    assert not app.exception and not view.error
    assert json.loads(view.json[-1].value) == {"sum": 42}


def test_a_destructive_server_tool_needs_the_box_ticked(app):
    connect_own_server(app)
    app.selectbox(key="mcp:try_tool").select("fail").run()
    app.text_input(key="mcp:own:fail:reason").input("no")
    app.button(key="mcp:own:fail:run").click().run()
    view = tab(app, "Attach an MCP server")
    assert "tick the confirmation box" in view.error[0].value
    app.checkbox(key="mcp:own:fail:confirm").check()
    app.button(key="mcp:own:fail:run").click().run()
    error = shown(tab(app, "Attach an MCP server").error[0].value)
    assert error.startswith("TOOL_ERROR: fail failed") and "What to do" in error


def test_a_command_that_does_not_exist_is_a_clear_error(app):
    app.text_input(key="mcp:name").input("ghost")
    app.text_input(key="mcp:command").input("/nonexistent/mcp-server --stdio")
    app.button(key="mcp:connect").click().run()
    if [b for b in app.button if b.key == GRANT]:  # a program that cannot be found may still be asked
        app.button(key=GRANT).click().run()
    view = tab(app, "Attach an MCP server")
    assert not app.exception and view.status[0].state == "error"
    assert "MCP server 'ghost' could not start (/nonexistent/mcp-server --stdio)" in shown(
        view.error[0].value
    )
    assert not view.subheader  # nothing connected


def test_add_to_flow_saves_a_new_version_with_the_server_and_its_tools(app):
    store = FlowCall.open().store
    store.save_flow(Flow(name="clock", tools=["time/v1/get_current_time"]))
    app.run()
    connect_own_server(app)
    app.selectbox(key="mcp:flow").select("clock")
    app.button(key="mcp:add").click().run()
    assert "now version 2" in tab(app, "Attach an MCP server").success[-1].value
    flow, _, version = store.get_flow("clock")
    assert version == 2 and [s.name for s in flow.mcp_servers] == ["own"]
    assert flow.mcp_servers[0].command == [sys.executable, SERVER, "stdio"]
    destructive = {t.name for t in source_tools("mcp", flow.mcp_servers[0]) if t.annotations.destructive}
    assert destructive and flow.tools == [
        "time/v1/get_current_time",
        *(
            f"own/mcp/{n}"
            for n in ("add", "shout", "save_note", "fail", "hang", "crash")
            if n not in destructive
        ),
    ]
    # a destructive tool joins only when picked
    app.multiselect(key="mcp:attach").select(sorted(destructive)[0])
    app.selectbox(key="mcp:flow").select("clock")
    app.button(key="mcp:add").click().run()
    assert f"own/mcp/{sorted(destructive)[0]}" in store.get_flow("clock")[0].tools


def test_a_server_by_command_starts_only_once_granted_the_grant_a_run_asks_for(app):
    """The same rule as the Flows page and the Run page: the consent panel names the program;
    Cancel starts nothing; Grant records the grant a flow's run would ask for, then connects."""
    store = FlowCall.open().store
    app.text_input(key="mcp:name").input("own")
    app.text_input(key="mcp:command").input(shlex.join([sys.executable, SERVER, "stdio"]))
    app.button(key="mcp:connect").click().run()
    view = tab(app, "Attach an MCP server")
    assert any("nobody on this machine has granted it" in w.value for w in view.warning)
    assert not view.status and store.list_grants() == []  # nothing started, nothing granted
    app.button(key="mcp:b:cancel").click().run()
    assert any(
        "nothing was granted, started or sent" in i.value for i in tab(app, "Attach an MCP server").info
    )
    assert store.list_grants() == []
    connect_own_server(app)
    assert tab(app, "Attach an MCP server").status[0].label == "Connected to 'own': 6 tools"
    assert [g["kind"] for g in store.list_grants()] == ["mcp_command"]
