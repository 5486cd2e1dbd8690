"""The record and the pages say what happened (issue 34, point 4), with streamlit.testing's
AppTest on the real store: what a grammar held the reply to, beside the exact request; a paused
run continued under its own flow from a fresh tab; a reused step's time not counted again; Stop
only while a run runs; reasons for errors in the open; an answer no tool backs shown as a
warning, and where each value of an answer came from."""

from __future__ import annotations

import json
import uuid

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.calling.schema import held
from flowcall.core.messages import ModelRequest, ModelTurn, ToolCall, ToolSpec
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.core.steps import (
    ANSWERED_WITHOUT_TOOLS,
    PARTLY_DONE,
    Run,
    RunStatus,
    StepKind,
    is_reused,
    utcnow,
)
from flowcall.engine.compare import summary
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider
from flowcall.rendering import describe_step, provenance_rows, provenance_summary, run_seconds
from flowcall.service.front import FlowCall
from flowcall.studio.shared import steps_table
from tests.support.studio import followed
from tests.test_studio import ROOT, page, shown, texts, widget

GRAMMAR = Capabilities(json_schema_output=True, grammar=True)
WEATHER = "weather/v1/get_weather"


@pytest.fixture(autouse=True)
def _offline_weather(monkeypatch):
    monkeypatch.delenv("AMAP_API_KEY", raising=False)


def scripted(
    service: FlowCall, decision: list, polish: list, capabilities: Capabilities | None = None
) -> None:
    deciding = ScriptedProvider(decision, **({"capabilities": capabilities} if capabilities else {}))
    polishing = ScriptedProvider(polish)
    service.provider_factory = lambda cfg: polishing if isinstance(cfg, PolishConfig) else deciding


def fresh_tab(path: str, query: dict | None = None, **state) -> AppTest:
    """The studio opened in a new browser tab at `path` (a new session), with `state` as the
    session already holds it (e.g. the flow last open on the Flows page)."""
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in state.items():
        app.session_state[key] = value
    app.query_params.update(query or {})
    app.run()
    app.switch_page(path)
    app.run()
    assert not app.exception, app.exception
    return app


# ------------------------------------------------------------------ 1. what the grammar held the reply to


def test_held_says_what_the_grammar_enforces():
    tools = [
        ToolSpec(name="get_weather", description="", parameters={"type": "object"}),
        ToolSpec(name="get_time", description="", parameters={"type": "object"}),
    ]

    def request(choice, parallel=False):
        return ModelRequest(messages=[], tools=tools, tool_choice=choice, parallel_tool_calls=parallel)

    assert (
        held(request("get_weather"), GRAMMAR) == "tool held to get_weather by the grammar, one call at most"
    )
    assert (
        held(request("required", True), GRAMMAR)
        == "reply held to a call of get_weather, get_time by the grammar"
    )
    assert (
        held(request("auto", True), GRAMMAR)
        == "reply held to a call of get_weather, get_time or an answer by the grammar"
    )
    assert held(request("none"), GRAMMAR) == "reply held to an answer, no tool call, by the grammar"
    assert held(request("get_weather"), Capabilities(json_schema_output=True)) is None  # only asked, not held


def test_the_inspector_says_what_the_grammar_held_the_tool_to_beside_the_exact_request():
    service = FlowCall.open()
    flow = Flow(
        name="weather",
        tools=[WEATHER],
        tool_choice="get_weather",
        max_rounds=1,
        decision=DecisionConfig(provider="scripted", calling_way="schema"),
        polish=PolishConfig(provider="scripted"),
    )
    scripted(
        service,
        ['{"tool_calls": [{"name": "get_weather", "arguments": {"location": "成都"}}]}'],
        ["成都明天有雨。"],
        GRAMMAR,
    )
    run = service.run(flow, "成都明天下雨吗?")
    assert run.status == RunStatus.SUCCEEDED, run.error
    decision = run.steps[0]
    assert decision.kind == StepKind.MODEL_CALL and "tool held to get_weather by the grammar" in decision.note
    assert decision.request["tool_choice"] == "auto"  # as sent: the schema holds the choice
    assert "held" not in json.dumps(decision.request)  # nothing added to the request itself

    app = page("pages/runs.py")
    app.session_state["run_id"] = run.id
    app.run()
    assert "#### [1] model_call" in texts(app)
    beside = [shown(i.value) for i in app.info if "Not in the request" in i.value]
    assert beside and "Not in the request: tool held to get_weather by the grammar" in beside[0]
    assert '"tool_choice": "auto"' in texts(app)


# ------------------------------------------------------------------ 2. continue a paused run from any tab


def paused_run(service: FlowCall) -> Run:
    """A run of the flow "git-tidy" that waits for a person to approve its call; the example
    flows are there too (clean-data first in the list)."""
    service.seed_examples()
    flow = Flow(
        name="git-tidy",
        description="Adds a task for each branch to tidy.",
        tools=["task/v1/add_task"],
        needs_approval=["task/v1/add_task"],
        max_rounds=1,
        decision=DecisionConfig(provider="scripted", model="schema"),
    )
    service.store.save_flow(flow)
    run = service.run(flow, "add a task: delete the merged git branches")
    assert run.status == RunStatus.WAITING_APPROVAL, run.error
    return run


def test_continue_opens_the_paused_run_under_its_own_flow_in_a_fresh_tab():
    service = FlowCall.open()
    run = paused_run(service)

    inspector = fresh_tab("pages/runs.py", {"run": run.id})
    assert widget(inspector.selectbox, "Run").value == run.id  # the address names the run
    link = next(p for p in inspector.get("page_link") if p.value == "Continue it on the Run page")
    assert link.proto.query_string == f"run={run.id}"  # a link: it works in this tab or a new one

    # a new tab, whose session last had clean-data open on the Flows page
    app = fresh_tab("pages/run.py", {"run": run.id}, flow="clean-data")
    assert widget(app.selectbox, "Flow").value == "git-tidy"
    assert widget(app.text_area, "Question").value == run.question
    assert any("Adds a task for each branch" in shown(c.value) for c in app.caption)
    assert any("waits for you" in w.value for w in app.warning)
    why = "Why it waits: this flow asks a person to approve each call of this tool"
    assert any(shown(c.value).startswith(why) for c in app.caption)
    widget(app.button, "Continue the run").click().run()
    followed(app)  # it goes on in the studio's runner
    assert not app.exception, app.exception
    done = service.store.get_run(run.id)
    assert done.status == RunStatus.SUCCEEDED, done.error
    assert widget(app.selectbox, "Flow").value == "git-tidy"  # the answer shows under its own flow
    assert any(f"Run {run.id[:8]} of git-tidy" in shown(c.value) for c in app.caption)
    assert app.query_params["run"] == run.id  # so a reload shows it too

    # picking another flow lets the run go: it is not shown under that flow
    widget(app.selectbox, "Flow").select("clean-data").run()
    assert not any(run.id[:8] in shown(c.value) for c in app.caption)
    assert "run" not in app.query_params


def test_a_link_to_a_run_that_does_not_exist_says_so():
    FlowCall.open().seed_examples()
    app = fresh_tab("pages/run.py", {"run": "0000dead"})
    assert any("no run" in shown(w.value) for w in app.warning)
    assert not app.exception


# ------------------------------------------------------------------ 3. a reused step's time


def test_a_reused_step_says_reused_from_its_run_not_the_time_again():
    service = FlowCall.open()
    flow = Flow(
        name="weather",
        tools=[WEATHER],
        max_rounds=2,
        decision=DecisionConfig(provider="scripted"),
        polish=PolishConfig(provider="scripted"),
    )
    slow = ModelTurn(
        tool_calls=[
            ToolCall(
                id="call_a",
                name="get_weather",
                arguments={"location": "成都"},
                raw_arguments='{"location": "成都"}',
            )
        ],
        finish_reason="tool_calls",
        latency_ms=25_000.0,
    )  # a decision that took 25 s
    scripted(service, [slow, "done"], ["Chengdu."])
    original = service.run(flow, "成都天气?")
    assert original.status == RunStatus.SUCCEEDED, original.error
    assert original.steps[0].latency_ms == 25_000.0
    scripted(service, ["done again"], ["Shanghai."])
    tool_step = next(s for s in original.steps if s.kind == StepKind.TOOL_CALL)
    new = service.rerun_from(original.id, tool_step.seq, arguments={"location": "上海"})
    assert new.status == RunStatus.SUCCEEDED, new.error
    reused = new.steps[0]
    assert is_reused(reused) and reused.latency_ms == 25_000.0  # the record keeps what happened

    assert run_seconds(new) < 25  # the re-run did not spend it again
    assert summary(new, original)["step time (s)"][0] < 25
    assert "reused" in describe_step(reused) and "25.00" not in describe_step(reused)
    assert steps_table(new)[0]["latency ms"] is None

    app = page("pages/runs.py")
    app.session_state["run_id"] = new.id
    app.run()
    latency = next(m for m in app.metric if m.label == "Latency")
    assert latency.value == "reused" and f"run {original.id[:8]}" in latency.proto.help
    assert f"reused from run {original.id[:8]}" in texts(app)
    header = next(m.value for m in app.markdown if "tokens ·" in m.value)
    assert " 25." not in shown(header)


# ------------------------------------------ 4 and 5. Stop only while running; reasons in the open


def test_stop_shows_only_while_a_run_runs():
    service = FlowCall.open()
    service.seed_examples()
    service.store.save_flow(
        Flow(
            name="clock",
            tools=["time/v1/get_current_time"],
            max_rounds=1,
            decision=DecisionConfig(provider="scripted", model="schema"),
        )
    )
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("clock").run()
    widget(app.text_area, "Question").input("what time is it?").run()
    widget(app.button, "Run").click().run()
    followed(app)
    assert not app.exception, app.exception
    assert service.store.get_run(app.session_state["run_id"]).status == RunStatus.SUCCEEDED
    assert not [b for b in app.button if b.label == "Stop"]  # the run has ended


def test_a_second_question_runs_as_typed_not_as_the_run_shown():
    """After a run the page shows it; a new question typed then is the one the next run asks
    (the page once put the shown run's question back into the box)."""
    service = FlowCall.open()
    service.store.save_flow(
        Flow(
            name="clock",
            tools=["time/v1/get_current_time"],
            max_rounds=1,
            decision=DecisionConfig(provider="scripted", model="schema"),
        )
    )
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("clock").run()
    for question in ("what time is it?", "and in London?"):
        widget(app.text_area, "Question").input(question).run()
        widget(app.button, "Run").click().run()
        followed(app)
        assert not app.exception, app.exception
    assert [r.question for r in service.store.list_runs(flow_name="clock")] == [
        "and in London?",
        "what time is it?",
    ]
    assert widget(app.text_area, "Question").value == "and in London?"


def test_could_not_run_shows_its_reason_expanded(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    service = FlowCall.open()
    service.seed_examples()
    service.store.save_flow(
        Flow(name="remote", decision=DecisionConfig(provider="openai", model="gpt-4o-mini"))
    )
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("remote").run()
    widget(app.text_area, "Question").input("hello").run()
    widget(app.button, "Run").click().run()
    assert not app.exception, app.exception
    assert app.error and "OPENAI_API_KEY" in shown(app.error[0].value)  # the reason, in the open
    assert service.store.list_runs(flow_name="remote") == []  # nothing recorded, nothing left failed


def test_could_not_connect_shows_its_reason_expanded():
    app = AppTest.from_file(str(ROOT / "pages" / "plugins.py"), default_timeout=120)
    app.run()
    app.text_input(key="mcp:name").input("ghost")
    app.text_input(key="mcp:command").input("/nonexistent/mcp-server --stdio")
    app.button(key="mcp:connect").click().run()
    if [b for b in app.button if b.key == "mcp:b:grant"]:  # the consent panel, first
        app.button(key="mcp:b:grant").click().run()
    assert not app.exception
    status = app.status[0]
    assert status.label.startswith("Could not connect") and status.proto.expanded and not status.error
    assert any("could not start" in shown(e.value) for e in app.error)


# ------------------------------------------------------------------ 6. outcome and provenance


def recorded(service: FlowCall, **fields) -> Run:
    """A finished run as the engine records it, with `fields` (outcome, provenance...) set."""
    service.seed_examples()
    _, version_id, _ = service.store.get_flow("commute-weather")
    run = Run(
        id=str(uuid.uuid4()),
        flow_name="commute-weather",
        flow_version_id=version_id,
        question="我明天要在成都上下班通勤,会下雨吗?",
        trace_id="t",
    )
    service.store.run_started(run)
    run = run.model_copy(update={"status": RunStatus.SUCCEEDED, "ended_at": utcnow(), **fields})
    service.store.run_finished(run)
    return run


UNBACKED = {
    "final_answer": "成都明天晴,不用带伞。",
    "outcome": ANSWERED_WITHOUT_TOOLS,
    "outcome_reasons": ["get_day_weather was refused by a check: the date is not tomorrow"],
}

CARD = {
    "location": "成都",
    "date": "2026-11-29",
    "temp_high": 18,
    "rain_probability": 0.7,
    "need_umbrella": True,
}
PROVENANCE = [
    {"path": "/location", "value": "成都", "source": "question"},
    {
        "path": "/temp_high",
        "value": 18,
        "source": "tool",
        "tool": "get_day_weather",
        "tool_call_id": "call_1",
        "step_seq": 2,
        "result_path": "/daily/0/temp_max",
        "match": "exact",
    },
    {
        "path": "/rain_probability",
        "value": 0.7,
        "source": "tool",
        "tool": "get_day_weather",
        "tool_call_id": "call_1",
        "step_seq": 2,
        "result_path": "/daily/0/rain",
        "match": "normalised",
    },
    {"path": "/need_umbrella", "value": True, "source": "model"},
]


def test_an_answer_without_tools_is_a_warning_on_the_run_page_not_a_success():
    service = FlowCall.open()
    run = recorded(service, **UNBACKED)
    assert service.store.get_run(run.id).outcome == ANSWERED_WITHOUT_TOOLS
    app = fresh_tab("pages/run.py", {"run": run.id})
    warning = next(shown(w.value) for w in app.warning if "Answered without tools" in w.value)
    assert "the date is not tomorrow" in warning  # the reasons, in the open
    assert not app.success  # not a green success
    assert "成都明天晴" in texts(app)  # the answer is still there to read


PARTLY = {
    "final_answer": {
        "location": "成都",
        "local_time": "2026-11-29 23:00:00",
        "message": "已为您借出《Kindred》。",
    },
    "outcome": PARTLY_DONE,
    "outcome_reasons": [
        "get_current_time fits the request, and no call of it was made",
        "the answer says '借出', and no tool call in this run did that",
    ],
    "provenance": [
        {"path": "/location", "value": "成都", "source": "question"},
        {
            "path": "/local_time",
            "value": "2026-11-29 23:00:00",
            "source": "wrong_source",
            "tool": "get_weather",
            "result_path": "/live/reporttime",
            "why": "local_time came from get_weather's reporttime; "
            "get_current_time gives it and gave no result in this run",
        },
        {
            "path": "/message",
            "value": "已为您借出《Kindred》。",
            "source": "model",
            "kind": "text",
            "parts": [],
            "claim": "借出",
        },
    ],
}


def test_a_partly_done_run_is_amber_with_its_stand_in_and_claim_flagged():
    """Issue 46: a part not done, a value from the wrong tool and an action no tool did are each
    said on the Run page; nothing of it is a green success."""
    service = FlowCall.open()
    run = recorded(service, **PARTLY)
    app = fresh_tab("pages/run.py", {"run": run.id})
    warning = next(shown(w.value) for w in app.warning if "Partly done" in w.value)
    assert "get_current_time fits the request" in warning and "'借出'" in warning
    assert not app.success
    assert any("1 stand-in from the wrong tool" in shown(c.value) for c in app.caption)
    flagged = [m for m in app.metric if "from the model" in str(m.proto.delta)] + [
        m for m in app.markdown if "from the model" in shown(m.value)
    ]
    assert flagged  # the stand-in and the claimed loan are marked on the card itself


def test_the_inspector_and_its_list_mark_an_answer_without_tools():
    service = FlowCall.open()
    run = recorded(service, **UNBACKED)
    app = fresh_tab("pages/runs.py", {"run": run.id})
    assert list(app.dataframe[0].value["status"]) == ["answered without tools"]
    assert "answered without tools" in widget(app.selectbox, "Run").format_func(run.id)
    assert any("answered without tools" in shown(m.value) for m in app.markdown)
    assert any("the date is not tomorrow" in shown(w.value) for w in app.warning)
    assert not app.success


def test_provenance_rows_and_summary():
    rows = provenance_rows(PROVENANCE)
    assert rows[0] == {"field": "/location", "value": "成都", "source": "question", "where": "the question"}
    assert rows[1]["where"] == "get_day_weather → /daily/0/temp_max" and rows[1]["value"] == "18"
    assert rows[2]["where"] == "get_day_weather → /daily/0/rain (normalised)"
    assert rows[3] == {
        "field": "/need_umbrella",
        "value": "true",
        "source": "model",
        "where": "no tool gave this",
    }
    assert (
        provenance_summary(PROVENANCE)
        == "3 of 4 values traced to tool results or the question; 1 from the model"
    )
    assert provenance_summary(PROVENANCE[1:3]) == "2 of 2 values traced to tool results or the question"
    assert provenance_summary([]) is None and provenance_summary(None) is None
    text = [
        {
            "path": "",
            "span": [3, 5],
            "value": "18",
            "source": "tool",
            "tool": "get_day_weather",
            "result_path": "/daily/0/temp_max",
        }
    ]
    assert provenance_rows(text)[0]["field"] == "text, characters 3–5"


@pytest.mark.parametrize("path", ["pages/run.py", "pages/runs.py"])
def test_the_answer_card_says_where_each_value_came_from(path):
    service = FlowCall.open()
    run = recorded(service, final_answer=CARD, provenance=PROVENANCE)
    app = fresh_tab(path, {"run": run.id})
    metrics = {m.label: m for m in app.metric}
    assert shown(metrics["temp high"].proto.help) == "from get_day_weather → /daily/0/temp_max"  # on hover
    assert shown(metrics["need umbrella"].proto.help) == "⚠ from the model — no tool gave this"
    assert "⚠ from the model" in metrics["need umbrella"].proto.delta  # marked on the card itself
    assert not metrics["temp high"].proto.delta
    assert any(
        shown(c.value) == "3 of 4 values traced to tool results or the question; 1 from the model"
        for c in app.caption
    )
    table = next(e for e in app.get("table"))
    assert "no tool gave this" in str(table.proto) and "daily" in str(table.proto)


# ------------------------------------------------------------------ issue 50: the Run page's rough edges


def test_a_flow_without_a_description_shows_its_version_alone():
    service = FlowCall.open()
    service.seed_examples()
    service.store.save_flow(Flow(name="bare", decision=DecisionConfig(provider="scripted", model="schema")))
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("bare").run()
    assert "version 1" in [shown(c.value) for c in app.caption]  # no dangling " ·"


def test_run_with_an_empty_question_says_what_to_do_and_records_nothing():
    service = FlowCall.open()
    service.seed_examples()
    service.store.save_flow(Flow(name="bare", decision=DecisionConfig(provider="scripted", model="schema")))
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("bare").run()
    assert widget(app.text_area, "Question").value == ""
    widget(app.button, "Run").click().run()
    assert not app.exception, app.exception
    assert any("Type a question first" in w.value for w in app.warning)
    assert service.store.list_runs(flow_name="bare") == []
