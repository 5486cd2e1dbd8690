"""The studio's pages with streamlit.testing's AppTest: the real store (a per-test SQLite
file), the real registry, and for runs the real embedded model (marked `model`) or runs
recorded beforehand through the service with a scripted model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.core.spec import DecisionConfig, Flow, PolishConfig, load_flow
from flowcall.core.steps import RunStatus, StepKind
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from tests.support.studio import followed

ROOT = Path(__file__).resolve().parents[1]


def page(name: str, timeout: float = 60) -> AppTest:
    """The studio as a user opens it (app.py, which seeds an empty database with the example
    flows), switched to the page `name`."""
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    app.run()
    if name != "app.py":
        app.switch_page(name)
        app.run()
    assert not app.exception, app.exception
    return app


def shown(markdown: str) -> str:
    """What a person reads of Markdown the studio escaped (flowcall.studio.shared.md): the text as written."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", str(markdown)).replace("\u2060", "").replace("  \n", "\n")


def widget(elements, label: str):
    found = [e for e in elements if shown(e.label) == label]
    assert found, f"no widget labelled {label!r}; there are {[e.label for e in elements]}"
    return found[0]


def texts(app: AppTest) -> str:
    parts = [
        e.value
        for kind in ("markdown", "caption", "success", "info", "error", "warning", "code", "text")
        for e in getattr(app, kind)
    ]
    return "\n".join(shown(p) for p in parts)


# ------------------------------------------------------------------ the app and the Flows page


def test_app_opens_on_the_flows_page_with_the_example_flows():
    app = page("app.py")
    assert app.title[0].value == "Flows"
    names = set(widget(app.selectbox, "Flow").options)
    assert {"commute-weather", "employee-lookup", "create-task", "current-time", "clean-data"} <= names


# the Flows page's editor, versions, duplicate and delete: tests/test_page_flows.py


# ------------------------------------------------------------------ the Run page


@pytest.mark.model
def test_run_page_runs_a_flow_on_the_embedded_model(model_path):
    app = page("pages/run.py", timeout=300)
    widget(app.selectbox, "Flow").select("employee-lookup").run()
    assert widget(app.text_area, "Question").value == "张三今年多大了?"
    widget(app.button, "Run").click().run()
    followed(app)  # the run goes on in the studio's runner; the page shows it when it ends
    assert not app.exception
    assert "36" in app.success[0].value
    steps = app.dataframe[0].value
    # the decision (the schema way, tool_choice lookup_employee: no relevance veto), then the call
    assert list(steps["kind"])[:2] == ["model_call", "tool_call"]


@pytest.mark.model
def test_run_page_pauses_for_approval_and_runs_the_edited_call(model_path):
    service = FlowCall.open()
    flow = load_flow(ROOT / "flows" / "create_task.json")
    service.store.save_flow(flow.model_copy(update={"needs_approval": ["task/v1/add_task"]}))
    app = page("pages/run.py", timeout=300)
    widget(app.selectbox, "Flow").select("create-task").run()
    widget(app.button, "Run").click().run()
    followed(app)
    assert any("waits for you" in w.value for w in app.warning)
    run_id = app.session_state["run_id"]
    assert service.store.get_run(run_id).status == RunStatus.WAITING_APPROVAL
    assert service.store.list_tasks() == []  # nothing ran yet
    call_id = next(s.tool_call_id for s in service.store.get_run(run_id).steps if s.kind == StepKind.APPROVAL)
    widget(app.radio, "Decision").set_value("edit")
    arguments = json.loads(widget(app.text_area, "Arguments (edit them, then choose edit)").value)
    arguments["title"] = "写季度总结"
    widget(app.text_area, "Arguments (edit them, then choose edit)").input(
        json.dumps(arguments, ensure_ascii=False)
    )
    widget(app.button, "Continue the run").click().run()
    followed(app)
    assert not app.exception
    run = service.store.get_run(run_id)
    assert run.status == RunStatus.SUCCEEDED
    assert [t["title"] for t in service.store.list_tasks()] == ["写季度总结"]
    approval = [s for s in run.steps if s.kind == StepKind.APPROVAL and s.result]
    assert approval[0].tool_call_id == call_id and approval[0].result["action"] == "edit"


@pytest.mark.model
def test_run_page_deny_tells_the_model_and_runs_nothing(model_path):
    service = FlowCall.open()
    flow = load_flow(ROOT / "flows" / "create_task.json")
    service.store.save_flow(flow.model_copy(update={"needs_approval": ["task/v1/add_task"]}))
    app = page("pages/run.py", timeout=300)
    widget(app.button, "Run").click().run()
    followed(app)
    widget(app.radio, "Decision").set_value("deny")
    widget(app.text_input, "Reason (told to the model when you deny)").input("not this week")
    widget(app.button, "Continue the run").click().run()
    followed(app)
    assert not app.exception
    run = service.store.get_run(app.session_state["run_id"])
    assert run.status != RunStatus.WAITING_APPROVAL
    assert service.store.list_tasks() == []
    denied = [s for s in run.steps if s.kind == StepKind.TOOL_CALL]
    assert denied and denied[0].error_code == "APPROVAL_DENIED" and "not this week" in denied[0].error_message


# ------------------------------------------------------------------ the inspector


def scripted_runs(service: FlowCall) -> tuple:
    flow = Flow(
        name="weather",
        tools=["weather/v1/get_weather"],
        decision=DecisionConfig(provider="scripted"),
        polish=PolishConfig(provider="scripted", output_schema={"type": "object"}),
    )
    script = {
        "decision": [
            [("get_weather", {"location": "成都"}), ("get_weather", {"location": "北京"})],
            "ok",
            [("get_weather", {"location": "成都"})],
            "ok",
        ],
        "polish": [
            '{"location": "成都", "rain_probability": 0.7, "need_umbrella": true}',
            '{"location": "成都"}',
        ],
    }
    deciding, polishing = ScriptedProvider(script["decision"]), ScriptedProvider(script["polish"])
    service.provider_factory = lambda cfg: polishing if isinstance(cfg, PolishConfig) else deciding
    return service.run(flow, "成都和北京天气?"), service.run(flow, "成都天气?")


def test_inspector_steps_through_a_run_and_shows_the_exact_request():
    first, second = scripted_runs(FlowCall.open())
    app = page("pages/runs.py")
    app.session_state["run_id"] = first.id
    app.run()
    assert widget(app.selectbox, "Run").value == first.id
    assert "#### [1] model_call" in texts(app)
    assert '"tool_choice": "auto"' in texts(app)  # the request, as sent
    widget(app.button, "Next ▶").click().run()
    assert "#### [2] tool_call" in texts(app) and "成都" in texts(app)
    widget(app.slider, "Step").set_value(5).run()
    assert "#### [5] polish" in texts(app)
    assert widget(app.button, "Next ▶").disabled
    widget(app.button, "◀ Previous").click().run()
    assert "#### [4] model_call" in texts(app)
    # the structured answer as a card beside its raw JSON
    assert any(m.label == "rain probability" and m.value == "70%" for m in app.metric)


def test_inspector_compares_two_runs_step_aligned_and_filters():
    first, second = scripted_runs(FlowCall.open())
    app = page("pages/runs.py")
    app.session_state["run_id"], app.session_state["compare_with"] = first.id, second.id
    app.run()
    table = app.dataframe[-2].value  # the aligned steps (the last table is "All steps")
    assert list(table["differences"])[2] == "only in the left run"
    assert list(table["this"])[2].startswith("3 tool_call")
    widget(app.text_input, "Question contains").input("北京").run()
    assert list(app.dataframe[0].value["question"]) == ["成都和北京天气?"]
    widget(app.text_input, "Question contains").input("").run()
    widget(app.selectbox, "Model").select("scripted/scripted").run()
    assert len(app.dataframe[0].value) == 2
    widget(app.selectbox, "Status").select("failed").run()
    assert "No runs match" in app.info[0].value


@pytest.mark.model
def test_inspector_reruns_from_a_tool_call_with_edited_arguments(model_path):
    service = FlowCall.open()
    original = service.run(load_flow(ROOT / "flows" / "employee_lookup.json"), "张三今年多大了?")
    tool_step = next(s for s in original.steps if s.kind == StepKind.TOOL_CALL)
    app = page("pages/runs.py", timeout=300)
    widget(app.slider, "Step").set_value(tool_step.seq).run()
    widget(app.text_area, "Arguments").input('{"name": "李四"}')
    widget(app.button, "Re-run from this step").click().run()
    followed(app)
    assert not app.exception
    new = service.store.get_run(app.session_state["run_id"])
    assert new.id != original.id and new.status == RunStatus.SUCCEEDED
    assert "reused" in new.steps[0].note
    assert [s.arguments for s in new.steps if s.kind == StepKind.TOOL_CALL] == [{"name": "李四"}]
    assert app.session_state["compare_with"] == original.id


# ------------------------------------------------------------------ interrupted runs


def test_run_page_resumes_an_interrupted_run_and_the_inspector_says_so():
    """A run whose process died (here: owned by a host whose lease ran out) reads `interrupted`;
    the Run page's Resume goes on with it, here from its question (no tool round was committed)."""
    from datetime import timedelta

    from sqlalchemy import update

    from flowcall.core.steps import Run, utcnow
    from flowcall.store.models import RunRow

    service = FlowCall.open()
    flow = Flow(
        name="clock",
        tools=["time/v1/get_current_time"],
        max_rounds=2,
        decision=DecisionConfig(provider="scripted", model="schema"),
    )
    version_id, _ = service.store.save_flow(flow)
    run = Run(
        id="0badc0de-0000-4000-8000-000000000001",
        flow_name="clock",
        flow_version_id=version_id,
        question="what time is it?",
        trace_id="t",
    )
    service.store.run_started(run)
    with service.store._session() as s, s.begin():
        s.execute(
            update(RunRow)
            .where(RunRow.id == run.id)
            .values(owner="gone-host/1/1", lease_until=utcnow() - timedelta(minutes=1))
        )
    service.store._leases.release(run.id)

    inspector = page("pages/runs.py")
    inspector.session_state["run_id"] = run.id
    inspector.run()
    assert "This run was interrupted" in texts(inspector)

    app = page("pages/run.py")
    app.session_state["run_id"] = run.id
    app.run()
    assert "was interrupted" in texts(app)
    widget(app.button, "Resume").click().run()
    followed(app, run.id)
    assert not app.exception, app.exception
    resumed = service.store.get_run(run.id)
    assert resumed.status == RunStatus.SUCCEEDED, resumed.error
    assert [s.name for s in resumed.steps if s.kind == StepKind.TOOL_CALL] == ["get_current_time"]
