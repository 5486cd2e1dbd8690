"""A tool source kind of an installed package in the studio: its source gets a form built from
its config's JSON Schema (flowcall/studio/sources.py, generic_source_form), and listing or trying
its tools asks for the package's grant first, like any other source."""

from __future__ import annotations

import json
import sys

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.service.front import FlowCall, source_kinds
from flowcall.studio.sources import source_tools
from tests.extension.toy import write_toy_kind
from tests.test_studio import texts


@pytest.fixture(autouse=True)
def toy(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(write_toy_kind(tmp_path / "site")))
    yield
    sys.modules.pop("toy_ext", None)


def page(initial: dict | None) -> None:
    import streamlit as st

    from flowcall.studio.sources import source_form

    st.session_state["out"] = source_form("toy", initial, "src")


def form(initial: dict | None = None) -> AppTest:
    app = AppTest.from_function(page, args=(initial,), default_timeout=60)
    app.run()
    assert not app.exception, app.exception
    return app


def test_the_service_lists_the_installed_kind_for_the_studio():
    kinds = {info.kind: info for info in source_kinds()}
    assert [k for k in kinds][:2] == ["mcp", "http"]
    toy = kinds["toy"]
    assert (toy.label, toy.package, toy.flow_field) == ("Toy dice", "toy-ext", "sources")
    assert toy.schema["properties"]["faces"]["type"] == "integer" and toy.fields["faces"].label == "Faces"
    assert kinds["mcp"].package is None and kinds["mcp"].flow_field == "mcp_servers"


def test_a_kind_without_a_form_of_its_own_gets_one_from_its_schema():
    app = form({"name": "dice", "faces": 6})
    assert (
        app.text_input(key="src:f:faces").value == "6" and app.text_input(key="src:f:faces").label == "Faces"
    )
    app.text_input(key="src:f:faces").input("20").run()
    assert app.session_state["out"] == ({"name": "dice", "faces": 20}, None)
    app.text_input(key="src:f:faces").input("1").run()
    value, problem = app.session_state["out"]
    assert value is None and problem == "faces: 1 is less than the minimum of 2; enter a larger value."
    assert json.loads(app.text_area(key="src:json").value) == {"name": "dice", "faces": 1}


def test_listing_its_tools_asks_for_the_package_then_lists_and_tries_them():
    app = form({"name": "dice", "faces": 20})
    app.button(key="src:b:list").click().run()
    assert 'use the tool source kind "toy" of the installed package toy-ext 0.1' in texts(app)
    assert not app.dataframe
    tools, reason = source_tools(FlowCall.open(), {"name": "dice", "faces": 20}, "toy")
    assert tools == [] and reason.startswith("Nothing was started or loaded")

    app.button(key="src:b:grant").click().run()
    assert list(app.dataframe[0].value["reference"]) == ["dice/toy/roll"]
    app.button(key="src:b:try").click().run()
    assert not app.error and json.loads(app.json[-1].value) == {"rolled": 20, "die": "dice"}
    tools, reason = source_tools(FlowCall.open(), {"name": "dice", "faces": 20}, "toy")
    assert reason is None and [t["ref"] for t in tools] == ["dice/toy/roll"] and tools[0]["kind"] == "toy"


def test_the_flows_page_offers_the_kind_and_keeps_its_source_in_the_flow():
    from tests.test_studio import page as studio_page
    from tests.test_studio import widget

    app = studio_page("pages/flows.py")
    widget(app.text_input, "Name").input("dice-flow")
    widget(app.radio, "Start from").set_value("blank")
    widget(app.button, "Create").click().run()
    widget(app.button, "+ Toy dice").click().run()
    assert not app.exception, app.exception
    [name] = [w for w in app.text_input if (w.key or "").endswith("form:f:name")]
    name.input("dice").run()
    [faces] = [w for w in app.text_input if (w.key or "").endswith("form:f:faces")]
    faces.input("12").run()
    widget(app.button, "Keep in the flow").click().run()
    assert not app.exception, app.exception
    assert [b for b in app.button if b.label == "Toy dice: dice"], [b.label for b in app.button]
