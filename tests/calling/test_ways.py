"""schema, router and auto, driven through the engine by the scripted provider."""

from __future__ import annotations

import json

import jsonschema
import pytest

from flowcall.calling.doc_values import UNMADE_NOTE
from flowcall.calling.schema import decision_schema, read_decision
from flowcall.cli.main import describe_step
from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import ModelTurn
from flowcall.core.spec import DecisionConfig, Flow, RouterRule
from flowcall.core.steps import MemorySink, RunStatus, StepKind
from flowcall.engine.loop import Engine
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.base import ToolAnnotations
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry


def get_weather(location: str) -> dict:
    """Weather for a city."""
    return {"location": location, "weather": "小雨"}


def get_time() -> str:
    """The current time."""
    return "10:00"


LOOKUP = ToolAnnotations(read_only=True, destructive=False)  # both only read: no tool here changes anything
REGISTRY = ToolRegistry(
    [
        build_tool(get_weather, "w/v1/get_weather", annotations=LOOKUP),
        build_tool(get_time, "t/v1/get_time", annotations=LOOKUP),
    ]
)
TOOLS = [t.spec() for t in REGISTRY.all()]
GRAMMAR_CAPS = Capabilities(native_tools=False, json_schema_output=True, grammar=True)
SCORING_CAPS = Capabilities(json_schema_output=True, grammar=True, scoring=True)
GATE = DecisionTuning(call_margin=0.5)


def run(flow, script, caps, tuning=None):
    provider = ScriptedProvider(script, capabilities=caps, tuning=tuning)
    result = Engine(REGISTRY, lambda cfg: provider, MemorySink()).run(flow, "成都天气?")
    return result, provider


def flow(way, **kw):
    return Flow(
        name="w",
        tools=["w/v1/get_weather", "t/v1/get_time"],
        decision=DecisionConfig(provider="scripted", calling_way=way),
        **kw,
    )


def calls_json(*calls):
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}, ensure_ascii=False)


@pytest.mark.parametrize(
    "choice, parallel, accepts, rejects",
    [
        (
            "auto",
            True,
            [{"answer": "hi"}, {"tool_calls": [{"name": "get_time", "arguments": {}}]}],
            [{"tool_calls": []}],
        ),
        ("none", True, [{"answer": "hi"}], [{"tool_calls": [{"name": "get_time", "arguments": {}}]}]),
        (
            "required",
            False,
            [{"tool_calls": [{"name": "get_weather", "arguments": {"location": "x"}}]}],
            [
                {"answer": "hi"},
                {
                    "tool_calls": [
                        {"name": "get_time", "arguments": {}},
                        {"name": "get_time", "arguments": {}},
                    ]
                },
            ],
        ),
        (
            "get_time",
            True,
            [{"tool_calls": [{"name": "get_time", "arguments": {}}]}],
            [{"tool_calls": [{"name": "get_weather", "arguments": {"location": "x"}}]}],
        ),
        (
            "auto",
            True,
            [],
            [
                {"tool_calls": [{"name": "get_weather", "arguments": {}}]},  # missing required
                {"tool_calls": [{"name": "get_weather", "arguments": {"location": "x", "extra": 1}}]},
                {"tool_calls": [{"name": "nope", "arguments": {}}]},
            ],
        ),
    ],
)
def test_decision_schema_admits_only_valid_calls_or_an_answer(choice, parallel, accepts, rejects):
    schema = decision_schema(TOOLS, choice, parallel)
    validator = jsonschema.Draft202012Validator(schema)
    for doc in accepts:
        assert validator.is_valid(doc), doc
    for doc in rejects:
        assert not validator.is_valid(doc), doc


def test_read_decision():
    calls, answer, errors = read_decision(calls_json(("get_weather", {"location": "成都"})))
    assert [(c.name, c.arguments) for c in calls] == [("get_weather", {"location": "成都"})] and not errors
    assert read_decision('{"answer": "不用带伞"}')[1] == "不用带伞"
    assert read_decision("")[2] and read_decision('{"other": 1}')[2]


def test_schema_way_sends_a_grammar_and_reads_the_call():
    result, provider = run(
        flow("schema"),
        [calls_json(("get_weather", {"location": "成都"})), '{"answer": "小雨"}'],
        GRAMMAR_CAPS,
    )
    assert result.status == RunStatus.SUCCEEDED and result.final_answer == "小雨"
    sent = provider.requests[0]
    assert sent.tools == [] and sent.response_format.json_schema["anyOf"]
    assert "get_weather" in sent.messages[0].content
    assert result.steps[0].calling_way == "schema"
    assert [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL] == ["get_weather"]


def scores(yes, no):
    return ModelTurn(scores={"yes": yes, "no": no})


def test_schema_way_with_scoring_asks_each_tool_then_requires_the_fitting_one():
    script = [
        scores(-2.0, -0.1),
        scores(-0.1, -2.0),  # in flow order: get_weather does not fit (-1.9), get_time does (+1.9)
        calls_json(("get_time", {})),
        '{"answer": "10点"}',
    ]
    result, provider = run(flow("schema"), script, SCORING_CAPS, GATE)
    relevance = [s for s in result.steps if s.note and s.note.startswith("checked whether")]
    assert len(relevance) == 2
    fill = provider.requests[2]
    props = fill.response_format.json_schema["properties"]["tool_calls"]["items"]["properties"]
    assert props["name"] == {"const": "get_time"}  # only the fitting tool may be called
    assert result.final_answer == "10点"


ONE_BY_ONE = GATE.model_copy(update={"more_calls_margin": -8.0})


def writes(name, arguments):
    """A scripted model continuing the call list it is given with one call."""
    return lambda request: (
        request.assistant_prefix + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    )


def more(comma, bracket):
    return ModelTurn(scores={",": comma, "]": bracket})


def test_call_by_call_writes_calls_while_the_model_would_go_on():
    script = [
        scores(-0.1, -2.0),
        scores(-2.0, -0.1),  # get_weather fits
        writes("get_weather", {"location": "成都"}),
        more(-3.0, -0.1),  # -2.9 > -8: another call
        writes("get_weather", {"location": "重庆"}),
        more(-11.0, -0.01),  # -11 <= -8: the list ends
        '{"answer": "都下雨"}',
    ]
    result, provider = run(flow("schema"), script, SCORING_CAPS, ONE_BY_ONE)
    second = provider.requests[4]
    assert second.assistant_prefix.startswith(
        '{"tool_calls": [{"name": "get_weather"'
    ) and second.assistant_prefix.endswith(", ")
    # one call's schema; after the first call every listed tool may be called (a second need)
    assert [i["properties"]["name"]["const"] for i in second.response_format.json_schema["anyOf"]] == [
        "get_weather",
        "get_time",
    ]
    assert provider.requests[3].score_options == [",", "]"]
    notes = [s.note for s in result.steps if s.kind == StepKind.MODEL_CALL]
    assert notes[2:6] == ["call 1", "another call after call 1?", "call 2", "another call after call 2?"]
    executed = [s.arguments["location"] for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert sorted(executed) == ["成都", "重庆"] and result.final_answer == "都下雨"


def test_call_by_call_keeps_a_named_tool_choice():
    script = [writes("get_time", {}), more(-20.0, -0.01), '{"answer": "10点"}']
    result, provider = run(flow("schema", tool_choice="get_time"), script, SCORING_CAPS, ONE_BY_ONE)
    assert provider.requests[0].response_format.json_schema["properties"]["name"] == {"const": "get_time"}
    assert [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL] == ["get_time"]


def test_call_by_call_stops_at_a_repeated_call():
    script = [
        scores(-0.1, -2.0),
        scores(-2.0, -0.1),
        writes("get_weather", {"location": "成都"}),
        more(-1.0, -0.5),
        writes("get_weather", {"location": "成都"}),  # the same call again: the list is complete
        '{"answer": "小雨"}',
    ]
    result, _ = run(flow("schema"), script, SCORING_CAPS, ONE_BY_ONE)
    assert [s.arguments for s in result.steps if s.kind == StepKind.TOOL_CALL] == [{"location": "成都"}]


def test_without_parallel_calls_the_list_is_written_at_once_with_one_call():
    script = [
        scores(-0.1, -2.0),
        scores(-2.0, -0.1),
        calls_json(("get_weather", {"location": "成都"})),
        '{"answer": "小雨"}',
    ]
    result, provider = run(flow("schema", parallel_tool_calls=False), script, SCORING_CAPS, ONE_BY_ONE)
    assert not any(r.score_options == [",", "]"] for r in provider.requests)
    assert provider.requests[2].response_format.json_schema["properties"]["tool_calls"]["maxItems"] == 1
    assert result.final_answer == "小雨"


def test_schema_way_with_scoring_keeps_quiet_when_nothing_fits():
    script = [scores(-3.0, -0.05), scores(-3.0, -0.05), '{"answer": "我只能查天气和时间。"}']
    result, provider = run(flow("schema"), script, SCORING_CAPS, GATE)
    assert provider.requests[2].response_format.json_schema == decision_schema(TOOLS, "none", True)
    assert not [s for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert result.final_answer == "我只能查天气和时间。"


def test_router_rule_picks_the_tool_and_the_model_fills_it():
    f = flow("router", router_rules=[RouterRule(pattern="天气|weather", tool="get_weather")])
    result, provider = run(
        f, [calls_json(("get_weather", {"location": "成都"})), '{"answer": "小雨"}'], GRAMMAR_CAPS
    )
    assert "rule: get_weather" in result.steps[0].note
    assert provider.requests[0].response_format.json_schema["properties"]["tool_calls"]["items"][
        "properties"
    ]["name"] == {"const": "get_weather"}
    assert result.final_answer == "小雨"


def test_router_without_rules_lets_the_model_choose_by_name():
    result, provider = run(
        flow("router"),
        ['{"tools": ["get_time"]}', calls_json(("get_time", {})), '{"answer": "10点"}'],
        GRAMMAR_CAPS,
    )
    route = provider.requests[0].response_format.json_schema
    assert route["properties"]["tools"]["items"]["enum"] == ["get_weather", "get_time", "none"]
    assert result.steps[0].note == "route: choose among tool names"
    assert [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL] == ["get_time"]


def test_router_routes_to_none():
    result, _ = run(flow("router"), ['{"tools": ["none"]}', '{"answer": "hello"}'], GRAMMAR_CAPS)
    assert result.final_answer == "hello" and "no tool fits" in result.steps[-1].note


def test_auto_falls_back_when_a_way_is_refused_and_records_why():
    caps = Capabilities(native_tools=True, json_schema_output=True)
    refused = ProviderError(
        "tools are not supported by this model", code=ErrorCode.PROVIDER_ERROR, status=400
    )
    script = [refused, calls_json(("get_time", {})), '{"answer": "10点"}']
    result, provider = run(flow("auto"), script, caps)
    assert result.status == RunStatus.SUCCEEDED
    assert result.steps[0].calling_way == "native" and result.steps[0].error_code == "PROVIDER_ERROR"
    assert (
        result.steps[1].calling_way == "schema" and "after fallback: native refused" in result.steps[1].note
    )
    assert "after fallback" in result.steps[-1].note  # the fallback holds for the rest of the run


def test_auto_falls_back_on_unreadable_reply():
    caps = Capabilities(native_tools=True, json_schema_output=True)
    script = [
        ModelTurn(content="<tool_call>garbage</tool_call>"),
        calls_json(("get_time", {})),
        '{"answer": "10点"}',
    ]
    result, _ = run(flow("auto"), script, caps)
    assert [s.calling_way for s in result.steps if s.kind == StepKind.MODEL_CALL] == [
        "native",
        "schema",
        "schema",
    ]
    assert result.final_answer == "10点"


def test_auto_uses_the_preferred_order_of_the_capability_profile():
    caps = Capabilities(native_tools=True, json_schema_output=True)
    tuning = DecisionTuning(preferred_ways=["schema", "native", "prompt"])
    result, _ = run(flow("auto"), [calls_json(("get_time", {})), '{"answer": "ok"}'], caps, tuning)
    assert result.steps[0].calling_way == "schema"


def test_every_auto_step_says_which_way_leads_and_why():
    caps = Capabilities(native_tools=True, json_schema_output=True)
    tuning = DecisionTuning(
        preferred_ways=["schema", "native", "prompt"],
        ways_reason="it was right most often on held-out requests",
    )
    result, _ = run(flow("auto"), [calls_json(("get_time", {})), '{"answer": "ok"}'], caps, tuning)
    decisions = [s for s in result.steps if s.kind == StepKind.MODEL_CALL and s.calling_way == "schema"]
    assert decisions and all(
        "auto: schema first, it was right most often on held-out requests" in s.note for s in decisions
    )


def test_auto_without_a_measured_order_says_what_it_went_by():
    result, _ = run(flow("auto"), [[("get_time", {})], "ok"], Capabilities(native_tools=True))
    assert "auto: native first, the model's API takes tool definitions (not probed" in result.steps[0].note


@pytest.mark.parametrize("way", ["native", "schema", "prompt", "router"])
def test_parallel_off_is_honoured_by_every_way(way):
    two = calls_json(("get_weather", {"location": "成都"}), ("get_weather", {"location": "北京"}))
    native_two = [("get_weather", {"location": "成都"}), ("get_weather", {"location": "北京"})]
    first = native_two if way == "native" else two
    script = (['{"tools": ["get_weather"]}'] if way == "router" else []) + [
        first,
        '{"answer": "ok"}' if way != "native" else "ok",
    ]
    if way == "prompt":
        script = [
            '<tool_call>{"name": "get_weather", "arguments": {"location": "成都"}}</tool_call>\n'
            '<tool_call>{"name": "get_weather", "arguments": {"location": "北京"}}</tool_call>',
            "ok",
        ]
    result, _ = run(
        flow(way, parallel_tool_calls=False),
        script,
        GRAMMAR_CAPS if way != "native" else Capabilities(native_tools=True),
    )
    assert len([s for s in result.steps if s.kind == StepKind.TOOL_CALL]) == 1


@pytest.mark.parametrize("choice", ["none", "get_time"])
@pytest.mark.parametrize("way", ["native", "schema", "prompt", "router"])
def test_tool_choice_none_and_named_are_honoured_by_every_way(way, choice):
    """The model calls get_weather regardless; neither choice may let it run."""
    wrong = {
        "native": [("get_weather", {"location": "成都"})],
        "prompt": '<tool_call>{"name": "get_weather", "arguments": {"location": "成都"}}</tool_call>',
    }.get(way, calls_json(("get_weather", {"location": "成都"})))
    answer = '{"answer": "ok"}' if way in ("schema", "router") else "ok"
    caps = Capabilities(native_tools=True) if way == "native" else GRAMMAR_CAPS
    result, _ = run(flow(way, tool_choice=choice), [wrong, answer, answer], caps)
    assert result.status == RunStatus.SUCCEEDED, result.error
    assert not [s for s in result.steps if s.kind == StepKind.TOOL_CALL and s.name == "get_weather"]


def get_forecast(city: str, days: int = 3, unit: str = "celsius") -> dict:
    """Forecast for a city."""
    return {"city": city, "days": days, "unit": unit}


def test_schema_way_drops_invented_optional_arguments_and_the_step_says_so():
    registry = ToolRegistry([build_tool(get_forecast, "w/v1/get_forecast")])
    tuning = DecisionTuning(ground_optional_arguments=True)
    provider = ScriptedProvider(
        [calls_json(("get_forecast", {"city": "成都", "days": 5, "unit": "fahrenheit"})), '{"answer": "晴"}'],
        capabilities=GRAMMAR_CAPS,
        tuning=tuning,
    )
    f = Flow(
        name="f",
        tools=["w/v1/get_forecast"],
        max_rounds=1,
        decision=DecisionConfig(provider="scripted", calling_way="schema"),
    )
    result = Engine(registry, lambda cfg: provider, MemorySink()).run(f, "成都未来5天天气?")
    step = next(s for s in result.steps if s.kind == StepKind.TOOL_CALL)
    assert step.arguments == {"city": "成都", "days": 5}  # 5 is in the question; fahrenheit is not
    assert step.response["dropped_ungrounded"] == {"unit": "fahrenheit"}
    assert step.result == {"city": "成都", "days": 5, "unit": "celsius"}  # the tool's default applied
    assert 'dropped, not in the conversation: {"unit": "fahrenheit"}' in describe_step(
        step
    )  # runs show says so


VETO_CAPS = Capabilities(native_tools=True, tool_choice_modes=["auto", "none"], scoring=True)
VETO = DecisionTuning(call_margin=0.72, veto_margin=0.3, preferred_ways=["native", "prompt"])


def test_auto_veto_keeps_quiet_when_no_tool_fits_at_all():
    script = [
        scores(-1.0, -0.5),
        scores(-0.9, -0.8),  # margins -0.5 and -0.1: both under the veto
        "我没有工具可以回答这个问题。",
    ]
    result, provider = run(flow("auto"), script, VETO_CAPS, VETO)
    assert result.final_answer == "我没有工具可以回答这个问题。"
    assert provider.requests[2].tool_choice == "none"  # the native way was asked for an answer, not a call
    # ...told that no tool ran, so it claims no look-up or booking that never happened
    assert UNMADE_NOTE in provider.requests[2].messages[0].content
    assert [s.calling_way for s in result.steps] == ["auto", "auto", "native"]
    assert not any(s.kind == StepKind.TOOL_CALL for s in result.steps)


def test_auto_veto_lets_the_first_way_decide_when_a_tool_might_fit():
    script = [
        scores(-0.6, -1.0),
        scores(-2.0, -0.1),  # get_weather 0.4: above the veto, though under call_margin
        [("get_weather", {"location": "成都"})],
        "小雨",
    ]
    result, provider = run(flow("auto"), script, VETO_CAPS, VETO)
    assert provider.requests[2].tool_choice == "auto" and len(provider.requests[2].tools) == 2
    assert [s.name for s in result.steps if s.kind == StepKind.TOOL_CALL] == ["get_weather"]
    assert len(provider.requests) == 4  # no scoring in the second round: tool results are there


def test_auto_leading_with_the_schema_way_asks_its_gate_once_not_the_veto_too():
    caps = VETO_CAPS.model_copy(update={"json_schema_output": True, "grammar": True})
    tuning = VETO.model_copy(update={"preferred_ways": ["schema", "native", "prompt"]})
    script = [
        scores(-0.6, -1.0),
        scores(-2.0, -0.1),  # the schema way's own gate: get_weather 0.4, under its bar
        '{"answer": "我不知道"}',
    ]
    result, provider = run(flow("auto"), script, caps, tuning)
    assert sum(bool(r.score_options) for r in provider.requests) == 2  # one reading per tool, not two
    assert result.final_answer == "我不知道" and result.status == RunStatus.SUCCEEDED


def test_auto_veto_is_not_asked_for_a_required_or_named_choice():
    script = [[("get_time", {})], "10点"]
    result, provider = run(flow("auto", tool_choice="get_time"), script, VETO_CAPS, VETO)
    assert not any(r.score_options for r in provider.requests)
    assert result.final_answer == "10点"


def test_a_run_with_relevance_scores_replays_from_its_decisions_only():
    from flowcall.engine.replay import differences, replay_factory

    script = [scores(-0.6, -1.0), scores(-2.0, -0.1), [("get_weather", {"location": "成都"})], "小雨"]
    original, _ = run(flow("auto"), script, VETO_CAPS, VETO)
    replayed = Engine(REGISTRY, replay_factory(original), MemorySink()).run(flow("auto"), original.question)
    assert differences(original, replayed) == [] and replayed.final_answer == "小雨"


@pytest.mark.parametrize(
    "way, caps, tuning, script",
    [
        (
            "schema",
            GRAMMAR_CAPS,
            None,
            [calls_json(("get_weather", {"location": "成都"})), '{"answer": "小雨"}'],
        ),
        (
            "schema",
            SCORING_CAPS,
            ONE_BY_ONE,
            [
                scores(-0.1, -2.0),
                scores(-2.0, -0.1),
                writes("get_weather", {"location": "成都"}),
                more(-3.0, -0.1),
                writes("get_weather", {"location": "重庆"}),
                more(-11.0, -0.01),
                '{"answer": "都下雨"}',
            ],
        ),
        (
            "router",
            GRAMMAR_CAPS,
            None,
            ['{"tools": ["get_time"]}', calls_json(("get_time", {})), '{"answer": "10点"}'],
        ),
        (
            "prompt",
            GRAMMAR_CAPS,
            None,
            ['<tool_call>{"name": "get_time", "arguments": {}}</tool_call>', "10点"],
        ),
    ],
)
def test_a_run_replays_identically_in_the_ways_that_read_calls_from_text(way, caps, tuning, script):
    """The schema and router ways record a call turn's content as None once read: the replay
    must not read it again (it used to, and failed with PARSE_FAILED)."""
    from flowcall.engine.replay import differences, replay_factory

    original, _ = run(flow(way), script, caps, tuning)
    replayed = Engine(REGISTRY, replay_factory(original), MemorySink()).run(flow(way), original.question)
    assert differences(original, replayed) == [] and replayed.final_answer == original.final_answer
    assert [(s.kind, s.note, s.arguments, s.error_code) for s in replayed.steps] == [
        (s.kind, s.note, s.arguments, s.error_code) for s in original.steps
    ]


def _system(request):
    from flowcall.calling.schema import SchemaWay

    return SchemaWay().prepare(request, GRAMMAR_CAPS).messages[0].content


def _decision(choice):
    from flowcall.core.messages import Message, ModelRequest

    return ModelRequest(
        messages=[Message(role="user", content="weather in Paris?")], tools=TOOLS, tool_choice=choice
    )


def test_a_grammar_held_call_is_asked_for_without_the_json_spelled_out():
    """Where the grammar allows only calls, the prompt lists the tools and what goes in the
    arguments; the JSON shape and the answer branch are the grammar's job (issue 12, point 5)."""
    required = _system(_decision("required"))
    assert "get_weather" in required and "get_time" in required and "Take argument values" in required
    assert '"answer"' not in required and "tool_calls" not in required
    named = _system(_decision("get_weather"))
    assert "get_weather" in named and "get_time" not in named  # only the named tool can be called
    auto = _system(_decision("auto"))
    assert '"answer"' in auto and "tool_calls" in auto  # the model chooses: both replies explained


def test_without_a_grammar_the_reply_is_spelled_out():
    from flowcall.calling.schema import SchemaWay

    text = (
        SchemaWay().prepare(_decision("required"), Capabilities(json_schema_output=True)).messages[0].content
    )
    assert "tool_calls" in text and "get_time" in text


def test_with_tool_choice_none_the_tools_are_not_listed():
    text = _system(_decision("none"))
    assert "get_weather" not in text and '"answer"' in text
