"""The inspector's engine side: re-run from a step, step-aligned comparison, run export/import.

Scripted models drive the loop (the scripts are what a model would answer); the tools, the
database and the engine are the real ones.
"""

from __future__ import annotations

import json

import pytest

from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.errors import ConfigError
from flowcall.core.messages import ModelTurn
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.core.steps import RunStatus, StepKind, is_reused
from flowcall.engine.compare import align, summary
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall

WEATHER = "weather/v1/get_weather"


def weather_flow(**changes) -> Flow:
    flow = Flow(
        name="weather",
        tools=[WEATHER],
        decision=DecisionConfig(provider="scripted", system_prompt="Be brief."),
        polish=PolishConfig(provider="scripted"),
    )
    return flow.model_copy(update=changes)


def scripted(service: FlowCall, decision: list, polish: list) -> tuple[ScriptedProvider, ScriptedProvider]:
    deciding, polishing = ScriptedProvider(decision), ScriptedProvider(polish)
    service.provider_factory = lambda cfg: polishing if isinstance(cfg, PolishConfig) else deciding
    return deciding, polishing


@pytest.fixture
def service() -> FlowCall:
    return FlowCall.open()


@pytest.fixture
def two_city_run(service):
    scripted(
        service,
        [[("get_weather", {"location": "成都"}), ("get_weather", {"location": "北京"})], "done"],
        ["Chengdu and Beijing: see above."],
    )
    run = service.run(weather_flow(), "成都和北京天气?")
    assert run.status == RunStatus.SUCCEEDED
    assert [s.kind for s in run.steps] == ["model_call", "tool_call", "tool_call", "model_call", "polish"]
    return run


def test_rerun_from_a_tool_call_with_edited_arguments_reuses_what_came_before(service, two_city_run):
    deciding, polishing = scripted(service, ["answered"], ["Shanghai and Beijing."])
    second_call = two_city_run.steps[2]
    new = service.rerun_from(two_city_run.id, second_call.seq, arguments={"location": "上海"})

    assert new.id != two_city_run.id and new.status == RunStatus.SUCCEEDED
    reused, tools = new.steps[0], [s for s in new.steps if s.kind == StepKind.TOOL_CALL]
    assert reused.kind == StepKind.MODEL_CALL and f"reused from run {two_city_run.id[:8]}" in reused.note
    assert reused.tool_calls == two_city_run.steps[0].tool_calls  # the decision was not asked for again
    # the call before the chosen one kept its result; the chosen one ran again, edited, for real
    assert [t.arguments for t in tools] == [{"location": "成都"}, {"location": "上海"}]
    assert "reused" in tools[0].note and tools[0].result == two_city_run.steps[1].result
    assert tools[1].note is None and "上海" in json.dumps(tools[1].result, ensure_ascii=False)
    # the next decision saw the edited call and its result, not the original one
    seen = deciding.requests[0].messages
    assert [c.arguments for c in seen[-3].tool_calls] == [{"location": "成都"}, {"location": "上海"}]
    assert "上海" in seen[-1].content
    assert new.final_answer == "Shanghai and Beijing."
    assert service.store.get_run(new.id).steps[0].note == reused.note  # stored as recorded


def test_rerun_from_a_decision_with_an_edited_prompt_saves_a_new_flow_version(service, two_city_run):
    deciding, _ = scripted(service, [[("get_weather", {"location": "上海"})], "ok"], ["Shanghai."])
    new = service.rerun_from(two_city_run.id, 1, decision_prompt="Only ever look at Shanghai.")
    assert deciding.requests[0].messages[0].content == "Only ever look at Shanghai."
    assert [s.arguments for s in new.steps if s.kind == StepKind.TOOL_CALL] == [{"location": "上海"}]
    assert not any("reused" in (s.note or "") for s in new.steps)  # nothing before step 1
    assert new.flow_version_id != two_city_run.flow_version_id
    assert service.flow_of(new).decision.system_prompt == "Only ever look at Shanghai."


def test_rerun_from_the_polish_step_runs_only_the_polish_model(service, two_city_run):
    deciding, polishing = scripted(service, [], ["Short answer."])
    polish = next(s for s in two_city_run.steps if s.kind == StepKind.POLISH)
    new = service.rerun_from(two_city_run.id, polish.seq, polish_prompt="Answer in three words.")
    assert deciding.requests == []  # no decision asked again
    assert polishing.requests[0].messages[0].content.startswith("Answer in three words.")
    assert "成都" in polishing.requests[0].messages[1].content  # the reused tool results reach it
    assert [s.kind for s in new.steps] == ["model_call", "tool_call", "tool_call", "model_call", "polish"]
    assert new.final_answer == "Short answer."


def test_rerun_refuses_steps_it_cannot_start_from(service, two_city_run):
    with pytest.raises(ConfigError, match="no step 99"):
        service.rerun_from(two_city_run.id, 99)
    with pytest.raises(ConfigError, match="only a tool_call step takes edited arguments"):
        service.rerun_from(two_city_run.id, 1, arguments={"location": "x"})


def test_compare_aligns_steps_around_an_extra_call(service, two_city_run):
    scripted(service, [[("get_weather", {"location": "成都"})], "done"], ["Chengdu only."])
    other = service.run(weather_flow(), "成都天气?")
    pairs = align(two_city_run, other)
    kinds = [(p.left and p.left.kind, p.right and p.right.kind) for p in pairs]
    assert kinds == [
        ("model_call", "model_call"),
        ("tool_call", "tool_call"),
        ("tool_call", None),
        ("model_call", "model_call"),
        ("polish", "polish"),
    ]
    assert not any(d.startswith("argument") for d in pairs[1].differences)  # the same call on both sides
    assert any(d.startswith("tool calls:") for d in pairs[0].differences)
    assert pairs[2].differences == ["only in the left run"]
    assert any(d.startswith("result:") for d in pairs[4].differences)
    figures = summary(two_city_run, other)
    assert figures["tool calls"] == (2, 1) and figures["answer"] == (
        "Chengdu and Beijing: see above.",
        "Chengdu only.",
    )


def test_compare_of_a_run_with_itself_finds_no_difference(service, two_city_run):
    assert all(p.same for p in align(two_city_run, two_city_run))


def test_export_then_import_keeps_every_step_and_the_flow(service, two_city_run, tmp_path):
    exported = service.export_run(two_city_run.id)
    text = json.dumps(exported, ensure_ascii=False)
    other = FlowCall.open(f"sqlite:///{tmp_path / 'elsewhere.db'}")
    imported = other.import_run(text)
    assert imported.id == two_city_run.id  # a fresh database keeps the id
    assert [s.model_dump(exclude={"run_id"}) for s in imported.steps] == [
        s.model_dump(exclude={"run_id"}) for s in two_city_run.steps
    ]
    assert other.flow_of(imported) == service.flow_of(two_city_run)
    again = service.import_run(text)  # the same database: a copy with its own id, nothing overwritten
    assert again.id != two_city_run.id and len(again.steps) == len(two_city_run.steps)
    assert service.store.get_run(two_city_run.id).final_answer == two_city_run.final_answer


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{not json", "not valid JSON"),
        ('{"format": "flowcall.flow/v1", "name": "x"}', "not a FlowCall run export"),
        ('{"format": "flowcall.run/v1", "run": {"id": "x"}}', "invalid run at run."),
    ],
)
def test_import_of_a_bad_file_says_what_is_wrong_and_stores_nothing(service, text, problem):
    with pytest.raises(ConfigError, match=problem):
        service.import_run(text)
    assert service.store.list_runs() == []


def test_list_runs_filters_by_model_and_date(service, two_city_run):
    from datetime import timedelta

    assert [r.id for r in service.store.list_runs(model="scripted")] == [two_city_run.id]
    assert service.store.list_runs(model="gpt-4o") == []
    assert service.store.list_runs(since=two_city_run.started_at + timedelta(minutes=1)) == []
    assert len(service.store.list_runs(until=two_city_run.started_at + timedelta(minutes=1))) == 1
    assert service.store.run_models() == ["scripted/scripted"]


# ------------------------------------------------------------------ calls written one at a time

SCORING = Capabilities(json_schema_output=True, grammar=True, scoring=True)
ONE_BY_ONE = DecisionTuning(call_margin=0.5, more_calls_margin=-8.0)


def writes(location: str):
    """The schema way's model continuing the call list it is given with one call."""
    return lambda request: (
        request.assistant_prefix
        + json.dumps({"name": "get_weather", "arguments": {"location": location}}, ensure_ascii=False)
    )


def more(comma: float) -> ModelTurn:
    return ModelTurn(scores={",": comma, "]": -0.1})


@pytest.fixture
def one_by_one_run(service):
    """Two calls written one at a time; the round's last model step is the "another call?" score."""
    deciding = ScriptedProvider(
        [
            ModelTurn(scores={"yes": -0.1, "no": -3.0}),
            writes("成都"),
            more(-1.0),
            writes("北京"),
            more(-12.0),
            '{"answer": "done"}',
        ],
        capabilities=SCORING,
        tuning=ONE_BY_ONE,
    )
    polishing = ScriptedProvider(["Chengdu and Beijing."])
    service.provider_factory = lambda cfg: polishing if isinstance(cfg, PolishConfig) else deciding
    run = service.run(
        weather_flow(decision=DecisionConfig(provider="scripted", calling_way="schema")), "成都和北京天气?"
    )
    assert run.status == RunStatus.SUCCEEDED
    assert [s.note for s in run.steps if s.kind == StepKind.MODEL_CALL][:5] == [
        "checked whether get_weather fits: yes, margin 2.90, bar 0.50",
        "call 1",
        "another call after call 1?",
        "call 2",
        "another call after call 2?",
    ]
    return run


@pytest.mark.parametrize("which", [0, 1])
def test_rerun_from_a_call_written_one_at_a_time_runs_the_edited_arguments(service, one_by_one_run, which):
    deciding, _ = scripted(service, ['{"answer": "done"}'], ["edited."])
    tool_steps = [s for s in one_by_one_run.steps if s.kind == StepKind.TOOL_CALL]
    new = service.rerun_from(one_by_one_run.id, tool_steps[which].seq, arguments={"location": "上海"})
    assert new.status == RunStatus.SUCCEEDED, new.error
    ran = [s for s in new.steps if s.kind == StepKind.TOOL_CALL]
    expected = [{"location": "成都"}, {"location": "北京"}]
    expected[which] = {"location": "上海"}
    assert [s.arguments for s in ran] == expected
    live = ran[which]
    assert not is_reused(live) and live.response["executed"] and live.result["location"] == "上海"
    assert all(is_reused(s) for s in new.steps[: tool_steps[which].seq - 1])
    seen = deciding.requests[0].messages  # the next decision read the edited call and its result
    assert "上海" in json.dumps([m.model_dump() for m in seen], ensure_ascii=False)


# ------------------------------------------------------------------ tokens of a re-run


def test_a_rerun_counts_only_the_tokens_it_spent(service, two_city_run):
    """The reused steps show their recorded tokens (marked reused); the run's totals, in the
    Run and in the runs table, count only the steps that ran live."""
    from sqlalchemy import text

    scripted(service, ["answered"], ["Shanghai and Beijing."])
    new = service.rerun_from(two_city_run.id, two_city_run.steps[2].seq, arguments={"location": "上海"})
    reused = [s for s in new.steps if is_reused(s)]
    assert [s.tokens_in for s in reused] == [s.tokens_in for s in two_city_run.steps[:2]] and reused[
        0
    ].tokens_in > 0
    live = [s for s in new.steps if not is_reused(s)]
    spent = (sum(s.tokens_in for s in live), sum(s.tokens_out for s in live))
    assert spent[0] > 0 and (new.tokens_in, new.tokens_out) == spent
    stored = service.store.get_run(new.id)
    assert (stored.tokens_in, stored.tokens_out) == spent
    with service.store.engine.connect() as conn:
        row = conn.execute(
            text("SELECT tokens_in, tokens_out FROM runs WHERE id = :id"), {"id": new.id}
        ).one()
    assert tuple(row) == spent


# ------------------------------------------------------------------ the answer card


def test_the_answer_card_shows_a_percentage_only_for_a_share_of_one():
    from streamlit.testing.v1 import AppTest

    from flowcall.studio.shared import _card_value

    def card() -> None:
        from flowcall.studio.shared import answer_card

        answer_card({"city": "成都", "price": 0.5, "rain_probability": 0.7})

    app = AppTest.from_function(card).run()
    assert {m.label: m.value for m in app.metric} == {"price": "0.5", "rain probability": "70%"}
    assert _card_value(0.25, "confidence") == "25%" and _card_value(0.9, "distance_km") == "0.9"
    assert _card_value(1, "rain_probability") == "1" and _card_value(True, "ratio") == "yes"


def test_a_link_to_a_run_opens_it_also_when_newer_runs_push_it_off_the_list(service, two_city_run):
    from datetime import timedelta
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    for n in range(200):  # the Runs page lists the newest 200
        newer = two_city_run.started_at + timedelta(seconds=n + 1)
        service.store.import_run(two_city_run.model_copy(update={"started_at": newer}))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/runs.py")
    at.query_params["run"] = two_city_run.id
    at.run()
    assert not at.exception, at.exception
    assert [h.value for h in at.subheader][0] == f"Run {two_city_run.id[:8]}"
