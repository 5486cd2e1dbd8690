"""The Streamlit pages' logic with streamlit.testing's AppTest, on the real embedded model."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.model
def test_run_page_runs_a_flow_and_lists_steps(model_path):
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    app.run()
    assert not app.exception
    app.selectbox[0].select("employee_lookup.json").run()
    assert app.text_input[0].value == "张三今年多大了?"
    app.button[0].click().run()
    assert not app.exception
    assert "36" in app.success[0].value
    steps = app.dataframe[0].value
    assert list(steps["kind"]) [:2] == ["model_call", "tool_call"]


def test_runs_page_empty_then_lists_a_run():
    app = AppTest.from_file(str(ROOT / "pages" / "1_Runs.py"), default_timeout=60)
    app.run()
    assert not app.exception and "No runs yet" in app.info[0].value


def test_runs_page_shows_a_recorded_run():
    from flowcall.providers.scripted import ScriptedProvider
    from flowcall.service import FlowCall
    from flowcall.spec import DecisionConfig, Flow

    service = FlowCall.open()
    service.provider_factory = lambda cfg: ScriptedProvider([[("get_current_time", {})], "It is noon."])
    flow = Flow(name="clock", tools=["time/v1/get_current_time"], decision=DecisionConfig(provider="scripted"))
    run = service.run(flow, "what time is it?")
    app = AppTest.from_file(str(ROOT / "pages" / "1_Runs.py"), default_timeout=60)
    app.run()
    assert not app.exception
    assert list(app.dataframe[0].value["kind"]) == ["model_call", "tool_call", "model_call"]
    assert run.trace_id in app.markdown[0].value
