"""The loop, driven by the scripted provider: every branch of decide -> check -> run -> polish."""

from __future__ import annotations

import json
import threading
import time
from typing import Literal

import pytest

from flowcall.calling.doc_values import UNMADE_NOTE
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import Message, ModelTurn
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, MemorySink, RunStatus, StepKind
from flowcall.engine.loop import Engine
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.base import RunContext
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

CALLS: list[tuple[str, dict]] = []
BARRIER = threading.Barrier(2, timeout=10)


def get_weather(location: str, extensions: Literal["base", "all"] = "base") -> dict:
    """Weather for a city.

    Args:
        location: city name, e.g. 成都
        extensions: base = now, all = forecast
    """
    CALLS.append(("get_weather", {"location": location, "extensions": extensions}))
    return {"location": location, "weather": "小雨" if extensions == "all" else "阴"}


def meet(name: str) -> str:
    """Waits until a second call runs at the same time: proves calls are concurrent."""
    BARRIER.wait()
    return f"met {name}"


def explode() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


def slow() -> str:
    """Takes too long."""
    time.sleep(3)
    return "late"


def remember(ctx: RunContext, note: str) -> str:
    """Keeps a note in the hidden context."""
    ctx.artifacts["note"] = note
    return f"kept note for run {ctx.run_id[:8]}"


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    BARRIER.reset()


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(
        [
            build_tool(get_weather, "weather/v1/get_weather"),
            build_tool(meet, "test/v1/meet"),
            build_tool(explode, "test/v1/explode"),
            build_tool(slow, "test/v1/slow", timeout_s=0.2),
            build_tool(remember, "test/v1/remember"),
        ]
    )


def run(registry, flow, decision_script, polish_script=(), question="成都明天会下雨吗?", caps=None):
    decision = (
        ScriptedProvider(list(decision_script), capabilities=caps)
        if caps
        else ScriptedProvider(list(decision_script))
    )
    polish = ScriptedProvider(list(polish_script))
    engine = Engine(
        registry, lambda cfg: decision if isinstance(cfg, DecisionConfig) else polish, MemorySink()
    )
    return engine.run(flow, question), decision, polish


def make_flow(**kw) -> Flow:
    kw.setdefault("tools", ["weather/v1/get_weather"])
    kw.setdefault("decision", DecisionConfig(provider="scripted"))
    return Flow(name="t", **kw)


def kinds(result):
    return [s.kind for s in result.steps]


def test_auto_calls_tool_then_answers(registry):
    result, decision, _ = run(
        registry, make_flow(), [[("get_weather", {"location": "成都", "extensions": "all"})], "会下小雨。"]
    )
    assert result.status == RunStatus.SUCCEEDED
    assert result.final_answer == "会下小雨。"
    assert kinds(result) == [StepKind.MODEL_CALL, StepKind.TOOL_CALL, StepKind.MODEL_CALL]
    tool_step = result.steps[1]
    assert tool_step.arguments == {"location": "成都", "extensions": "all"}
    assert tool_step.result == {"location": "成都", "weather": "小雨"}
    # the second request carries the tool result keyed by the call id
    second = decision.requests[1].messages
    assert second[-1].role == "tool" and second[-1].tool_call_id == tool_step.tool_call_id
    assert json.loads(second[-1].content)["weather"] == "小雨"
    assert [s.seq for s in result.steps] == [1, 2, 3]
    assert all(s.trace_id == result.trace_id for s in result.steps)


@pytest.mark.parametrize("choice", ["required", "get_weather"])
def test_forcing_choices_apply_to_first_round_only(registry, choice):
    result, decision, _ = run(
        registry, make_flow(tool_choice=choice), [[("get_weather", {"location": "成都"})], "阴天。"]
    )
    assert result.status == RunStatus.SUCCEEDED
    assert decision.requests[0].tool_choice == choice
    assert decision.requests[1].tool_choice == "auto"  # else the model could never stop calling


def test_choice_none_sends_no_call_and_drops_any(registry):
    result, decision, _ = run(
        registry, make_flow(tool_choice="none"), [[("get_weather", {"location": "成都"})]]
    )
    assert decision.requests[0].tool_choice == "none"
    assert CALLS == []  # a call made against tool_choice=none is not run
    assert StepKind.TOOL_CALL not in kinds(result)


def test_choice_emulated_when_provider_lacks_it(registry):
    caps = Capabilities(native_tools=True, tool_choice_modes=["auto"])
    result, decision, _ = run(
        registry,
        make_flow(tool_choice="required"),
        [[("get_weather", {"location": "成都"})], "ok"],
        caps=caps,
    )
    first = decision.requests[0]
    assert first.tool_choice == "auto"
    assert "must call" in first.messages[0].content
    assert result.status == RunStatus.SUCCEEDED


def test_parallel_calls_run_concurrently(registry):
    flow = make_flow(tools=["test/v1/meet"])
    result, _, _ = run(registry, flow, [[("meet", {"name": "a"}), ("meet", {"name": "b"})], "done"])
    results = [s.result for s in result.steps if s.kind == StepKind.TOOL_CALL]
    # a barrier of two only opens if both calls are running at once
    assert results == ["met a", "met b"]


def test_parallel_off_runs_only_first_call(registry):
    flow = make_flow(parallel_tool_calls=False)
    result, decision, _ = run(
        registry, flow, [[("get_weather", {"location": "成都"}), ("get_weather", {"location": "北京"})], "ok"]
    )
    assert decision.requests[0].parallel_tool_calls is False
    assert [c[1]["location"] for c in CALLS] == ["成都"]


def test_invalid_arguments_are_not_run_and_get_corrected(registry):
    script = [
        [("get_weather", {"extensions": "all"})],  # location missing
        [("get_weather", {"location": "成都", "extensions": "tomorrow"})],  # not in the enum
        [("get_weather", {"location": "成都", "extensions": "all"})],
        "明天有小雨。",
    ]
    result, decision, _ = run(registry, make_flow(retry_budget=2), script)
    assert result.status == RunStatus.SUCCEEDED
    tool_steps = [s for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert [s.error_code for s in tool_steps] == ["MISSING_REQUIRED_FIELD", "INVALID_ARGUMENT", None]
    assert CALLS == [("get_weather", {"location": "成都", "extensions": "all"})]  # only the valid call ran
    fed_back = json.loads(decision.requests[1].messages[-1].content)
    assert (
        fed_back["error"]["code"] == "MISSING_REQUIRED_FIELD" and "location" in fed_back["error"]["message"]
    )


def test_unknown_tool_and_unparsable_arguments(registry):
    script = [[("get_wether", {"location": "成都"})], [("get_weather", '{"location": "成都"')], "ok"]
    result, decision, _ = run(registry, make_flow(retry_budget=3), script)
    codes = [s.error_code for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert codes == ["UNKNOWN_TOOL", "PARSE_FAILED"]
    assert "get_weather" in json.loads(decision.requests[1].messages[-1].content)["error"]["message"]
    assert CALLS == []


def test_retry_budget_exhausted_fails_the_run(registry):
    script = [[("nope", {})], [("nope", {})], [("nope", {})]]
    result, _, _ = run(registry, make_flow(retry_budget=1), script)
    assert result.status == RunStatus.FAILED
    assert result.error.startswith("UNKNOWN_TOOL")
    assert result.steps[-1].kind == StepKind.ERROR


def test_tool_exception_and_timeout_become_results(registry):
    flow = make_flow(tools=["test/v1/explode", "test/v1/slow"])
    result, decision, _ = run(registry, flow, [[("explode", {}), ("slow", {})], "both failed"])
    assert result.status == RunStatus.SUCCEEDED
    by_name = {s.name: s for s in result.steps if s.kind == StepKind.TOOL_CALL}
    assert (
        by_name["explode"].error_code == "TOOL_ERROR" and "disk on fire" in by_name["explode"].error_message
    )
    assert by_name["slow"].error_code == "TOOL_TIMEOUT"
    assert "TOOL_TIMEOUT" in decision.requests[1].messages[-1].content


def test_max_rounds_stops_the_loop_and_still_answers(registry):
    script = [[("get_weather", {"location": c})] for c in ("成都", "北京")] + ["两个城市都查了。"]
    result, decision, _ = run(registry, make_flow(max_rounds=2), script)
    assert len(CALLS) == 2
    error = next(s for s in result.steps if s.kind == StepKind.ERROR)
    assert error.error_code == "MAX_ROUNDS"
    # with no polish model, one last decision call without tools gives the answer
    assert decision.requests[-1].tool_choice == "none" and decision.requests[-1].tools == []
    assert result.status == RunStatus.SUCCEEDED and result.final_answer == "两个城市都查了。"


@pytest.mark.parametrize(
    "last_word, wrote",
    [
        (
            [("get_weather", {"location": "上海"})],
            "nothing",
        ),  # a call where no tool is offered: dropped, no text
        ("", "nothing"),
        (
            '{"name": "get_weather", "arguments": {"location": "上海"}}',
            "a tool call",
        ),  # a call written as text
        ('<tool_call>{"name": "get_weather", "arguments": {"location": "上海"}}</tool_call>', "a tool call"),
    ],
)
def test_max_rounds_without_a_text_answer_fails_with_max_rounds(registry, last_word, wrote):
    """No polish model and the last, tool-less decision is no answer: the run fails with
    MAX_ROUNDS (and says what the tools found) instead of succeeding with "" or a call's JSON."""
    script = [
        [("get_weather", {"location": "成都", "extensions": "all"})],
        last_word,
        last_word,
    ]  # asked twice
    result, _, _ = run(registry, make_flow(max_rounds=1), script)
    assert result.status == RunStatus.FAILED and result.final_answer is None
    assert result.error.startswith("MAX_ROUNDS") and f"wrote {wrote} instead of an answer" in result.error
    assert '"weather": "小雨"' in result.error  # the last tool result, for the person
    assert [s.error_code for s in result.steps if s.kind == StepKind.ERROR] == ["MAX_ROUNDS"]


def test_after_max_rounds_a_call_instead_of_an_answer_is_asked_for_an_answer_once(registry):
    """A small model asked without tools often writes a call anyway; told plainly once, it answers."""
    call_text = '{"name": "get_weather", "arguments": {"location": "成都"}}'
    script = [[("get_weather", {"location": "成都"})], call_text, "明天成都小雨,记得带伞。"]
    result, _, _ = run(registry, make_flow(max_rounds=1), script)
    assert result.status == RunStatus.SUCCEEDED and result.final_answer == "明天成都小雨,记得带伞。"
    last = [s for s in result.steps if s.kind == StepKind.MODEL_CALL][-1]
    assert "Do not call a tool now" in json.dumps(last.request, ensure_ascii=False)


def test_a_text_answer_that_mentions_json_is_still_an_answer(registry):
    answer = '明天成都小雨: {"name": "成都", "rain": true}'  # JSON, but no call (no tool name, no arguments)
    result, _, _ = run(registry, make_flow(max_rounds=1), [[("get_weather", {"location": "成都"})], answer])
    assert result.status == RunStatus.SUCCEEDED and result.final_answer == answer


def test_repeated_call_ends_the_loop(registry):
    call = [("get_weather", {"location": "成都", "extensions": "all"})]
    flow = make_flow(polish=PolishConfig(provider="scripted"))
    result, _, polish = run(registry, flow, [call, call], ["明天小雨"])
    assert len(CALLS) == 1
    assert result.final_answer == "明天小雨"
    assert "小雨" in polish.requests[0].messages[-1].content  # the polish model saw the tool result


SCHEMA = {
    "type": "object",
    "properties": {"rain": {"type": "boolean"}, "city": {"type": "string"}},
    "required": ["rain", "city"],
}


def test_polish_structured_output_is_validated_and_corrected(registry):
    flow = make_flow(polish=PolishConfig(provider="scripted", output_schema=SCHEMA))
    decision_script = [[("get_weather", {"location": "成都", "extensions": "all"})], "会下雨"]
    result, _, polish = run(
        registry, flow, decision_script, ['{"rain": "yes"}', '```json\n{"rain": true, "city": "成都"}\n```']
    )
    assert result.status == RunStatus.SUCCEEDED
    assert result.final_answer == {"rain": True, "city": "成都"}
    assert polish.requests[0].response_format.json_schema == SCHEMA
    errors = [s for s in result.steps if s.kind == StepKind.ERROR]
    assert len(errors) == 1 and "city" in errors[0].error_message


def test_provider_error_fails_run_with_code(registry):
    err = ProviderError("slow down", code=ErrorCode.RATE_LIMITED, transient=True, status=429)
    result, _, _ = run(registry, make_flow(), [err])
    assert result.status == RunStatus.FAILED and result.error.startswith("RATE_LIMITED")
    assert result.steps[-1].error_code == "RATE_LIMITED"


def test_native_way_reads_calls_written_in_a_code_block(registry):
    text = '```json\n{"name": "get_weather", "arguments": {"location": "成都", "extensions": "all"}}\n```'
    result, _, _ = run(registry, make_flow(), [ModelTurn(content=text), "ok"])
    assert CALLS == [("get_weather", {"location": "成都", "extensions": "all"})]
    assert result.steps[0].calling_way == "native"


def test_prompt_way_renders_tools_into_text(registry):
    flow = make_flow(
        decision=DecisionConfig(provider="scripted", calling_way="prompt", system_prompt="Be brief.")
    )
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "成都"}}\n</tool_call>'
    result, decision, _ = run(registry, flow, [ModelTurn(content=text), "ok"])
    first, second = decision.requests
    assert (
        first.tools == []
        and "get_weather" in first.messages[0].content
        and first.messages[0].content.startswith("Be brief.")
    )
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "user"]
    assert "<tool_response" in second.messages[-1].content and "<tool_call>" in second.messages[2].content
    assert result.final_answer == "ok"


def test_unreadable_tool_call_text_is_parse_failed(registry):
    bad = ModelTurn(content="<tool_call>\nnot json at all\n</tool_call>")
    flow = make_flow(decision=DecisionConfig(provider="scripted", calling_way="native"))
    result, decision, _ = run(registry, flow, [bad, [("get_weather", {"location": "成都"})], "ok"])
    assert result.steps[0].error_code == "PARSE_FAILED"
    assert "PARSE_FAILED" in decision.requests[1].messages[-1].content
    assert result.status == RunStatus.SUCCEEDED


def test_hidden_context_is_injected_and_not_in_schema(registry):
    tool = registry.get("remember")
    assert "ctx" not in tool.parameters["properties"] and tool.parameters["required"] == ["note"]
    flow = make_flow(tools=["test/v1/remember"])
    result, _, _ = run(registry, flow, [[("remember", {"note": "x"})], "ok"])
    step = next(s for s in result.steps if s.kind == StepKind.TOOL_CALL)
    assert step.result == f"kept note for run {result.id[:8]}"


def test_schema_keywords_copied_into_arguments_are_dropped_and_recorded(registry):
    script = [
        [("get_weather", {"location": "成都", "required": ["location"], "additionalProperties": False})],
        "ok",
    ]
    result, _, _ = run(registry, make_flow(), script)
    step = next(s for s in result.steps if s.kind == StepKind.TOOL_CALL)
    assert step.error_code is None and step.arguments == {"location": "成都"}
    assert step.response["dropped_schema_keys"] == ["required", "additionalProperties"]


def test_keys_the_tool_does_not_take_are_dropped_and_recorded(registry):
    """A small model adds keys of its own (`description`, `expires_in`); the tool takes no
    others, so the call runs without them rather than being refused until the budget is spent."""
    script = [[("get_weather", {"location": "成都", "description": "commute", "expires_in": 3})], "ok"]
    result, decision, _ = run(registry, make_flow(), script)
    step = next(s for s in result.steps if s.kind == StepKind.TOOL_CALL)
    assert step.error_code is None and step.arguments == {"location": "成都"}
    assert step.response["dropped_unknown_keys"] == ["description", "expires_in"]
    assert result.status == RunStatus.SUCCEEDED and len(decision.requests) == 2  # no retry spent
    assert CALLS == [("get_weather", {"location": "成都", "extensions": "base"})]


def test_a_value_copied_from_the_tools_docs_is_asked_for_once_more(registry):
    """Issue 14, point 3: the doc's example city for a question about another city is pointed
    out, the model decides once more (one retry from the budget) and that decision runs."""
    script = [[("get_weather", {"location": "成都"})], [("get_weather", {"location": "北京"})], "北京阴。"]
    result, decision, _ = run(registry, make_flow(retry_budget=1), script, question="北京现在天气怎么样?")
    assert result.status == RunStatus.SUCCEEDED
    assert kinds(result) == [
        StepKind.MODEL_CALL,
        StepKind.WARNING,
        StepKind.MODEL_CALL,
        StepKind.TOOL_CALL,
        StepKind.MODEL_CALL,
    ]
    warning = result.steps[1]
    assert (
        warning.error_code == "INVALID_ARGUMENT" and "get_weather.location = '成都'" in warning.error_message
    )
    assert warning.result == [
        {
            "tool": "get_weather",
            "argument": "location",
            "value": "成都",
            "why": "it is the tool's own example, and nothing in the conversation says it",
        }
    ]
    again = decision.requests[1]
    assert again.messages[-1].role == "user" and "'成都'" in again.messages[-1].content
    assert again.tool_choice == "required" and [t.name for t in again.tools] == ["get_weather"]
    assert CALLS == [("get_weather", {"location": "北京", "extensions": "base"})]
    # the note is not kept in the conversation of later rounds
    assert not any("成都" in (m.content or "") for m in decision.requests[2].messages)


def test_a_required_value_still_from_the_docs_is_not_called_and_the_model_answers(registry):
    """Asked once, the model writes the docs' example city again for a question about another
    city: the conversation never gave the location, so no call is made (it would answer for a
    place nobody named) and the model answers with no tools (tool_choice none). Asked not at
    all (no budget left), the same."""
    twice = [
        [("get_weather", {"location": "成都"})],
        [("get_weather", {"location": "成都"})],
        "请告诉我是哪个城市?",
    ]
    result, decision, _ = run(registry, make_flow(retry_budget=2), twice, question="北京现在天气怎么样?")
    assert kinds(result) == [
        StepKind.MODEL_CALL,
        StepKind.WARNING,
        StepKind.MODEL_CALL,
        StepKind.WARNING,
        StepKind.MODEL_CALL,
    ]
    # the answer has no tool result behind it, and the run says so
    assert result.outcome == ANSWERED_WITHOUT_TOOLS
    assert any("get_weather was not run: its location '成都'" in r for r in result.outcome_reasons)
    assert (
        "not made" in result.steps[3].note
        and "get_weather.location = '成都'" in result.steps[3].error_message
    )
    answer = decision.requests[2]
    # told, in the system prompt, that nothing ran, so it claims no look-up (or booking) that never happened
    assert answer.tool_choice == "none" and answer.messages[1:] == decision.requests[0].messages
    assert (answer.messages[0].role, answer.messages[0].content) == ("system", UNMADE_NOTE)
    assert (
        CALLS == [] and result.final_answer == "请告诉我是哪个城市?" and result.status == RunStatus.SUCCEEDED
    )
    result, decision, _ = run(
        registry,
        make_flow(retry_budget=0),
        [[("get_weather", {"location": "成都"})], "哪个城市?"],
        question="北京现在天气怎么样?",
    )
    assert kinds(result) == [StepKind.MODEL_CALL, StepKind.WARNING, StepKind.MODEL_CALL]
    assert CALLS == [] and result.final_answer == "哪个城市?" and result.outcome == ANSWERED_WITHOUT_TOOLS


def test_a_flow_that_demands_a_call_keeps_the_second_decision(registry):
    twice = [[("get_weather", {"location": "成都"})], [("get_weather", {"location": "成都"})], "成都阴。"]
    result, _, _ = run(
        registry, make_flow(retry_budget=2, tool_choice="required"), twice, question="北京现在天气怎么样?"
    )
    assert [s.kind for s in result.steps].count(StepKind.WARNING) == 1  # asked once, not twice
    assert CALLS == [("get_weather", {"location": "成都", "extensions": "base"})]


def test_only_the_call_with_an_unsaid_required_value_is_dropped(registry):
    both = [
        [("get_weather", {"location": "北京"}), ("get_weather", {"location": "成都"})],
        [("get_weather", {"location": "北京"}), ("get_weather", {"location": "成都"})],
        "北京晴。",
    ]
    result, _, _ = run(registry, make_flow(retry_budget=2), both, question="北京现在天气怎么样?")
    assert "get_weather.location = '成都'" in result.steps[3].error_message
    assert CALLS == [("get_weather", {"location": "北京", "extensions": "base"})]


def test_a_retry_that_loses_the_sound_call_keeps_the_first_decisions(registry):
    """Seen on the 0.5B in the router way: asked about 成都, it wrote 成都 then 北京; pointed at
    北京, it wrote only 北京 again. The sound call of the first decision is not lost to that."""
    script = [
        [("get_weather", {"location": "北京"}), ("get_weather", {"location": "成都"})],
        [("get_weather", {"location": "成都"})],
        "北京晴。",
    ]
    result, decision, _ = run(registry, make_flow(retry_budget=2), script, question="北京现在天气怎么样?")
    dropped = result.steps[3]
    assert dropped.kind == StepKind.WARNING and "first decision's other calls stand" in dropped.note
    assert "get_weather.location = '成都'" in dropped.error_message
    assert CALLS == [("get_weather", {"location": "北京", "extensions": "base"})]
    assert len(decision.requests) == 3  # no further decision: the first one's call ran


def test_a_value_the_user_said_is_not_questioned(registry):
    result, decision, _ = run(registry, make_flow(), [[("get_weather", {"location": "成都"})], "阴。"])
    assert StepKind.WARNING not in kinds(result) and len(decision.requests) == 2


class _CtrlC:
    """A provider whose call is interrupted by a person (Ctrl-C while the model writes)."""

    name, model = "scripted", "ctrl-c"
    capabilities = ScriptedProvider([]).capabilities

    def complete(self, request):
        raise KeyboardInterrupt


def test_a_single_decision_stopped_by_a_person_ends_cancelled_not_running(registry):
    """decide_only ends through the same mapping as a run (Engine._settle): before, Ctrl-C
    during an evaluation's decision left its run 'running' for ever."""
    sink = MemorySink()
    ended = []
    sink.run_cancelled = lambda run, reason: ended.append((run.status, reason))
    engine = Engine(registry, lambda cfg: _CtrlC(), sink)
    with pytest.raises(KeyboardInterrupt):
        engine.decide_only(make_flow(), [Message(role="user", content="成都天气?")], [])
    assert ended == [(RunStatus.CANCELLED, "stopped with Ctrl-C")]


def test_a_single_decision_that_fails_says_why_in_a_step(registry):
    engine = Engine(registry, lambda cfg: ScriptedProvider([]), MemorySink())
    result, turn = engine.decide_only(make_flow(), [Message(role="user", content="成都天气?")], [])
    assert turn is None and result.status == RunStatus.FAILED and "ran out of turns" in result.error
    assert result.steps[-1].kind == StepKind.ERROR and "ran out of turns" in result.steps[-1].error_message
