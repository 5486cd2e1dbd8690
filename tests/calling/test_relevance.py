"""The relevance question the schema and router ways ask per tool before calling."""

from __future__ import annotations

from flowcall.calling.relevance import (
    PURPOSE_MAX,
    has_tool_results,
    last_user_text,
    margin,
    relevance_request,
)
from flowcall.core.messages import Message, ToolSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)


def test_the_question_names_the_function_its_parameters_and_the_request():
    sent = relevance_request(WEATHER, "Will it rain in Paris?")
    assert sent.score_options == ["yes", "no"] and sent.max_tokens == 1
    assert sent.messages[1].content == (
        "Function: get_weather\nDescription: Weather for a city.\nParameters: location\n\n"
        "User request: Will it rain in Paris?\n\n"
        "Can this function handle the request? Answer yes or no."
    )


def test_the_question_shows_the_leading_sentences_that_fit_not_the_long_tail():
    """Real tool docs follow their purpose with notes, caveats and examples; the gate shows
    whole sentences from the start up to PURPOSE_MAX characters (relevance.py says why)."""
    from flowcall.calling.relevance import purpose

    tail = " ".join(
        f"Note {i}: the API silently drops labels without push access, e.g. octocat." for i in range(8)
    )
    issue = ToolSpec(
        name="create_issue",
        description=(
            "Create a new issue in a GitHub repository. Use this when the user wants to report a bug. " + tail
        ),
        parameters={
            "type": "object",
            "properties": {"owner": {"type": "string"}, "title": {"type": "string"}},
        },
    )
    asked = relevance_request(issue, "open an issue on vercel/next.js").messages[1].content
    shown = asked.split("Description: ")[1].split("\n")[0]
    assert shown.startswith(
        "Create a new issue in a GitHub repository. Use this when the user wants to report a bug."
    )
    assert len(shown) <= PURPOSE_MAX and shown.endswith("octocat.")  # whole sentences only
    assert "Parameters: owner, title\n" in asked
    # a short bilingual plugin doc is shown whole: its "use it when" hint is part of the purpose
    weather = ToolSpec(
        name="get_weather",
        description="获取城市天气:实况或未来3天预报。用户问天气、下雨时使用。\n\nGet a city's weather.",
        parameters={},
    )
    assert (
        purpose(weather) == weather.description
    )  # as written, line breaks too: the product's margins were set on it
    endless = ToolSpec(name="t", description="word " * 400, parameters={})
    assert len(purpose(endless)) == PURPOSE_MAX and purpose(endless).endswith("…")
    assert purpose(ToolSpec(name="t", description="", parameters={})) == ""


def test_last_user_text_tool_results_and_margin():
    messages = [
        Message(role="system", content="Be brief."),
        Message(role="user", content="hi"),
        Message(role="user", content="weather in Rome?"),
    ]
    assert last_user_text(messages) == "weather in Rome?" and not has_tool_results(messages)
    assert margin({"yes": -0.2, "no": -1.7}) == 1.5 and margin(None) == float("-inf")


def _scripted_run(way: str, first_reply: str, rules: list | None = None):
    """A scoring provider whose first decision cannot be read (PARSE_FAILED), then is."""
    from flowcall.core.messages import ModelTurn
    from flowcall.core.spec import DecisionConfig, Flow
    from flowcall.core.steps import MemorySink
    from flowcall.engine.loop import Engine
    from flowcall.providers.base import Capabilities
    from flowcall.providers.scripted import ScriptedProvider
    from flowcall.tools.python_plugins import build_tool
    from flowcall.tools.registry import ToolRegistry

    def get_weather(location: str) -> dict:
        """Weather for a city."""
        return {"location": location, "weather": "小雨"}

    def scores(request):  # yes for the weather tool, asked about the weather question only
        fits = (
            "Function: get_weather" in request.messages[-1].content
            and "成都天气" in request.messages[-1].content
        )
        return ModelTurn(scores={"yes": -0.1, "no": -3.0} if fits else {"yes": -3.0, "no": -0.1})

    call = '{"tool_calls": [{"name": "get_weather", "arguments": {"location": "成都"}}]}'
    provider = ScriptedProvider(
        [scores, first_reply, scores, call, '{"answer": "小雨"}'],
        capabilities=Capabilities(json_schema_output=True, grammar=True, scoring=True),
    )
    flow = Flow(
        name="r",
        tools=["w/v1/get_weather"],
        router_rules=rules or [],
        decision=DecisionConfig(provider="scripted", calling_way=way),
    )
    registry = ToolRegistry([build_tool(get_weather, "w/v1/get_weather")])
    return Engine(registry, lambda cfg: provider, MemorySink()).run(flow, "成都天气?"), provider


def test_after_a_parse_failed_retry_relevance_is_scored_against_the_question():
    for way in ("schema", "router"):
        run, provider = _scripted_run(way, "not json at all")
        asked = [r.messages[-1].content for r in provider.requests if r.score_options == ["yes", "no"]]
        assert len(asked) == 2 and all("User request: 成都天气?" in q for q in asked), asked
        assert [s.error_code for s in run.steps if s.kind == "model_call"][1] == "PARSE_FAILED"
        assert [s.arguments for s in run.steps if s.kind == "tool_call"] == [{"location": "成都"}], way
        assert run.final_answer == "小雨"


def test_the_retry_note_is_not_the_users_request():
    from flowcall.engine.loop_state import LoopState

    state = LoopState(messages=[Message(role="user", content="成都天气?")], budget=1)
    state.note_unreadable("{bad", "not JSON")
    assert last_user_text(state.messages) == "成都天气?"


def test_with_examples_the_margin_is_the_mean_of_the_plain_and_the_worked_example_readings():
    """A provider with relevance_with_examples asks each tool's question twice: as it is, and
    after the worked examples (relevance.EXAMPLES) as earlier turns; the gate reads the mean."""
    from flowcall.calling.relevance import EXAMPLES, score_tools
    from flowcall.core.messages import ModelRequest, ModelTurn

    asked: list[tuple[ModelRequest, str]] = []

    def call(way, request, _schema, label):
        asked.append((request, label))
        after = len(request.messages) > 2
        return ModelTurn(scores={"yes": -0.1, "no": -3.1 if after else -1.1})  # 3.0 after examples, 1.0 plain

    request = ModelRequest(messages=[Message(role="user", content="Will it rain in Paris?")], tools=[WEATHER])
    assert score_tools(request, call, "schema") == [(1.0, WEATHER)] and len(asked) == 1
    asked.clear()
    [(value, tool)] = score_tools(request, call, "schema", with_examples=True)
    assert tool == WEATHER and abs(value - 2.0) < 1e-9
    (plain, plain_label), (again, again_label) = asked
    assert (
        plain_label == "checked whether get_weather fits"
        and again_label == "checked whether get_weather fits, after worked examples"
    )
    assert again.messages[0] == plain.messages[0] and again.messages[-1] == plain.messages[-1]
    turns = again.messages[1:-1]
    assert len(turns) == 2 * len(EXAMPLES) and [m.role for m in turns[:2]] == ["user", "assistant"]
    assert [m.content for m in turns[1::2]] == [answer for *_, answer in EXAMPLES]
    assert {answer for *_, answer in EXAMPLES} == {"yes", "no"}  # near misses as well as fits
    assert again.score_options == ["yes", "no"] and again.max_tokens == 1


def test_the_gate_calls_on_the_mean_reading_where_the_plain_one_alone_keeps_quiet():
    """End to end through the engine: plain margin 1.0 is under the bar 1.5, the mean (2.0) is
    over it, so the schema way calls; both scoring calls are recorded steps."""
    from flowcall.core.embedded_models import DecisionTuning
    from flowcall.core.messages import ModelTurn
    from flowcall.core.spec import DecisionConfig, Flow
    from flowcall.core.steps import MemorySink
    from flowcall.engine.loop import Engine
    from flowcall.providers.base import Capabilities
    from flowcall.providers.scripted import ScriptedProvider
    from flowcall.tools.base import ToolAnnotations
    from flowcall.tools.python_plugins import build_tool
    from flowcall.tools.registry import ToolRegistry

    def get_weather(location: str) -> dict:
        """Weather for a city."""
        return {"location": location, "weather": "小雨"}

    def scores(request):
        return ModelTurn(scores={"yes": -0.1, "no": -3.1 if len(request.messages) > 2 else -1.1})

    call = '{"tool_calls": [{"name": "get_weather", "arguments": {"location": "成都"}}]}'
    for with_examples, expect_call in ((False, False), (True, True)):
        script = (
            [scores, scores, call, '{"answer": "小雨"}']
            if with_examples
            else [scores, '{"answer": "不知道"}']
        )
        provider = ScriptedProvider(
            script,
            capabilities=Capabilities(json_schema_output=True, grammar=True, scoring=True),
            tuning=DecisionTuning(call_margin=1.5, relevance_with_examples=with_examples),
        )
        flow = Flow(
            name="r",
            tools=["w/v1/get_weather"],
            decision=DecisionConfig(provider="scripted", calling_way="schema"),
        )
        registry = ToolRegistry(
            [build_tool(get_weather, "w/v1/get_weather", annotations=ToolAnnotations(read_only=True))]
        )
        run = Engine(registry, lambda cfg: provider, MemorySink()).run(flow, "成都天气?")
        called = [s.arguments for s in run.steps if s.kind == "tool_call"]
        assert bool(called) is expect_call, (with_examples, run.steps)
        scored = [r for r in provider.requests if r.score_options == ["yes", "no"]]
        assert len(scored) == (2 if with_examples else 1)


def test_a_tool_that_changes_something_needs_both_readings_to_say_yes():
    """A tool that may change something is called only when the plain reading and the one after
    the worked examples both pass the bar (their lower one), not their mean: a wrong yes there
    does what nobody asked for. A tool nothing is known of (a dataset's definition) keeps the mean."""
    from flowcall.calling.relevance import reading_from_notes, tool_margin
    from flowcall.core.messages import ModelTurn, ToolSpec

    readings = iter([0.5, 3.5] * 3)  # plain under the bar 1.5, after examples over it: mean 2.0
    notes = []

    def ask(_request, label, interpret):
        turn = interpret(ModelTurn(scores={"yes": next(readings), "no": 0.0}))
        notes.append(turn.verdict)
        return turn

    add = {"name": "add_task", "parameters": {"type": "object", "properties": {"title": {"type": "string"}}}}
    assert tool_margin(ask, ToolSpec(**add, read_only=False), "周末去哪里玩", True, 1.5) == 0.5
    assert (
        notes[-1] == "checked whether add_task fits, after worked examples: no, lower margin 0.50, bar 1.50"
    )
    assert reading_from_notes(notes).fits == []
    assert tool_margin(ask, ToolSpec(**add, read_only=True), "周末去哪里玩", True, 1.5) == 2.0
    assert tool_margin(ask, ToolSpec(**add), "周末去哪里玩", True, 1.5) == 2.0
    assert "read_only" not in ToolSpec(**add, read_only=False).model_dump()  # never sent to a model
