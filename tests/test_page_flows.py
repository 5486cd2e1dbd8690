"""The Flows page with streamlit.testing's AppTest, on the real store and registry: a flow built
from a blank canvas with the palette and the side panel, checked as it is typed, saved,
versions restored, the flow kept in the address, duplicated and deleted. (The canvas itself,
dragging and clicking nodes, is driven in a real browser in tests/e2e/test_canvas_browser.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from flowcall.service.front import FlowCall
from tests.test_studio import page, shown, texts, widget

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_BOX = "Answer as JSON valid against this schema (optional)"


def view(app: AppTest, name: str) -> None:
    app.get("button_group")[0].set_value(name).run()
    assert not app.exception, app.exception


def button(app: AppTest, key_end: str):
    found = [b for b in app.button if (b.key or "").endswith(key_end)]
    assert found, f"no button whose key ends with {key_end!r}"
    return found[0]


def errors(app: AppTest) -> list[str]:
    return [shown(e.value) for e in app.error]


def test_a_flow_built_from_a_blank_canvas_with_the_palette_and_side_panel():
    store = FlowCall.open().store
    app = page("pages/flows.py")
    widget(app.text_input, "Name").input("my-commute")
    widget(app.radio, "Start from").set_value("blank")
    widget(app.button, "Create").click().run()
    assert widget(app.selectbox, "Flow").value == "my-commute"
    assert app.query_params["flow"] == ["my-commute"] or app.query_params["flow"] == "my-commute"
    # an empty canvas: nothing to save yet, and it says the next step, as guidance, not an error
    assert widget(app.button, "Save").disabled
    assert errors(app) == []
    assert any("Next: add a decision model" in shown(i.value) for i in app.info)
    assert "my-commute" not in [f["name"] for f in store.list_flows()]  # a draft until saved

    widget(app.button, "+ Decision model").click().run()
    # the panel says what the loop's settings mean for this flow, not only their names
    meaning = [shown(c.value) for c in app.caption if shown(c.value).startswith("For this flow:")]
    at_once = widget(app.checkbox, "Several calls at once").value
    assert meaning and ("several calls at once" if at_once else "one call at a time") in meaning[0]
    assert "up to 2 rounds of calling tools" in meaning[0]
    button(app, "add:weather/v1/get_day_weather").click().run()
    assert not widget(app.button, "Save").disabled
    widget(app.button, "+ Polish model").click().run()  # its settings open beside the canvas
    for typed, problem in [
        ('{"type": "object"', "not valid JSON"),
        ('{"type": "object", "properties": {"city": {"type": "strin"}}}', "not a valid JSON Schema"),
        ('{"properties": {"city": {"$ref": "http://169.254.169.254/x"}}}', "outside the schema"),
    ]:
        widget(app.text_area, SCHEMA_BOX).input(typed).run()
        assert any(problem in e for e in errors(app)), (problem, errors(app))
        assert widget(app.button, "Save").disabled
    card = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    widget(app.text_area, SCHEMA_BOX).input(json.dumps(card)).run()
    assert any("schema is valid" in s.value for s in app.success)
    widget(app.button, "Save").click().run()
    assert "Saved 'my-commute' as version 1." in texts(app)
    flow, _, version = store.get_flow("my-commute")
    assert version == 1 and flow.tools == ["weather/v1/get_day_weather"] and flow.polish.output_schema == card
    # the new-flow defaults suit the built-in model
    assert (flow.decision.calling_way, flow.parallel_tool_calls, flow.max_rounds) == ("schema", True, 2)
    assert set(flow.layout.positions) == {
        "question",
        "decision",
        "tool:weather/v1/get_day_weather",
        "polish",
        "answer",
    }

    widget(app.button, "Save").click().run()  # nothing changed: no new version
    assert "unchanged (still version 1)" in texts(app)
    assert len(store.flow_versions("my-commute")) == 1


def test_the_form_view_edits_the_same_draft_then_versions_diff_and_restore():
    store = FlowCall.open().store
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("current-time").run()
    view(app, "Form")
    widget(app.number_input, "Rounds").set_value(3).run()
    widget(app.multiselect, "Attached tools (type to search)").select("weather/v1/get_weather").run()
    widget(app.button, "Save").click().run()
    assert "as version 2" in texts(app)
    flow = store.get_flow("current-time")[0]
    assert flow.max_rounds == 3 and "weather/v1/get_weather" in flow.tools

    view(app, "Versions")
    diff = next(c.value for c in app.code if c.value.startswith("--- v1"))
    assert '"max_rounds": 3' in diff and "weather/v1/get_weather" in diff
    widget(app.selectbox, "Restore version").select(1).run()
    widget(app.button, "Restore version 1").click().run()
    assert "Restored version 1 as version 3." in texts(app)
    restored, _, version = store.get_flow("current-time")
    assert version == 3 and restored.content_hash() == store.get_flow("current-time", 1)[0].content_hash()


def test_the_address_keeps_the_flow_and_a_reload_opens_it():
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    app.query_params["flow"] = "clean-data"
    app.run()
    assert not app.exception, app.exception
    assert widget(app.selectbox, "Flow").value == "clean-data"
    widget(app.selectbox, "Flow").select("employee-lookup").run()
    assert "employee-lookup" in str(app.query_params["flow"])


def test_a_setting_out_of_range_is_a_plain_sentence_that_names_the_field():
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("employee-lookup").run()
    view(app, "Form")
    widget(app.text_area, "What this flow does (its description)").input("x").run()
    assert not errors(app)
    # a name the flow cannot have is refused at creation, in words
    view(app, "Canvas")
    widget(app.text_input, "Name").input("my/flow")
    widget(app.button, "Create").click().run()
    said = errors(app)
    assert any("Flow name" in e and "use only letters" in e for e in said), said


def test_duplicate_and_delete_with_confirmation():
    service = FlowCall.open()
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("current-time").run()
    view(app, "Duplicate / delete")
    widget(app.text_input, "Name of the copy").input("clock-2")
    widget(app.button, "Duplicate").click().run()
    names = [f["name"] for f in service.store.list_flows()]
    assert "clock-2" in names and service.store.get_flow("clock-2")[0].tools == ["time/v1/get_current_time"]
    assert widget(app.selectbox, "Flow").value == "clock-2"
    view(app, "Duplicate / delete")
    assert widget(app.button, "Delete flow").disabled  # not before the confirmation
    widget(
        app.checkbox, "Yes, delete 'clock-2' and all its versions (its runs stay, for the record)"
    ).check().run()
    widget(app.button, "Delete flow").click().run()
    assert [f["name"] for f in service.store.list_flows()] == [n for n in names if n != "clock-2"]
    # said once deleted, with what went and what stays
    said = [shown(m.value) for m in app.success]
    assert "Deleted 'clock-2' and its 1 version. Its 0 runs stay in Runs & inspector, for the record." in said


def test_json_view_exports_the_flow_with_its_layout_and_an_svg_picture():
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("commute-weather").run()
    view(app, "JSON & picture")
    exported = json.loads(next(c.value for c in app.code if c.value.startswith("{")))
    assert exported["name"] == "commute-weather" and "decision" in exported
    downloads = app.get("download_button")
    assert {d.proto.label for d in downloads} >= {"Export as JSON", "Picture (SVG)", "Picture (PNG)"}


def test_the_palette_says_what_each_tool_does_in_the_studios_language_and_which_look_alike(monkeypatch):
    """The example plugins describe themselves in Chinese, then English: the palette shows the
    studio's language in full (English by default), and says which names look alike."""
    monkeypatch.delenv("FLOWCALL_LANGUAGE", raising=False)
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("commute-weather").run()
    captions = [shown(c.value) for c in app.caption]
    day = next(c for c in captions if c.startswith("Get a city's weather for one day"))
    assert "today's includes the current conditions" in day and not re.search(r"[\u4e00-\u9fff]", day)
    assert "Not the same as get_weather: compare what each does." in captions
    assert "Not the same as get_day_weather: compare what each does." in captions
    monkeypatch.setenv("FLOWCALL_LANGUAGE", "zh")
    app.run()
    assert any(shown(c.value).startswith("获取城市某一天的天气预报") for c in app.caption)
