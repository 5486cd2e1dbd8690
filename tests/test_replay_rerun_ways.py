"""Replay and re-run, in every calling way × tool_choice × parallel setting, driven by a
scripted model that answers each request the way a model would (tests/calling/test_ways.py
drives each way the same way).

Properties:
- a replay reproduces the run's steps (models from the record, tools for real);
- a re-run from a tool step executes exactly the edited arguments (and, unedited, the run);
- a re-run from a model step decides that round again (and, the model being deterministic,
  reproduces the run from there).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import Message, ModelRequest, ModelTurn
from flowcall.core.spec import DecisionConfig, Flow, PolishConfig, RouterRule
from flowcall.core.steps import MemorySink, Run, Step, StepKind, is_reused
from flowcall.engine.loop import Engine
from flowcall.engine.replay import differences, replay_factory
from flowcall.engine.rerun import REUSED, checkpoint_before, cut_point
from flowcall.providers.base import Capabilities
from flowcall.providers.scripted import FULL, ScriptedProvider
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry


def get_weather(location: str) -> dict:
    """Weather for a city."""
    return {"location": location, "weather": "小雨"}


def get_time(zone: str = "UTC") -> str:
    """The current time in a time zone."""
    return f"10:00 {zone}"


REGISTRY = ToolRegistry([build_tool(get_weather, "w/v1/get_weather"), build_tool(get_time, "t/v1/get_time")])
QUESTION = "成都天气?"

GRAMMAR = Capabilities(json_schema_output=True, grammar=True)
SCORING = Capabilities(json_schema_output=True, grammar=True, scoring=True)
GATE = DecisionTuning(call_margin=0.5)
ONE_BY_ONE = GATE.model_copy(update={"more_calls_margin": -8.0})
VETO_CAPS = Capabilities(native_tools=True, tool_choice_modes=["auto", "none"], scoring=True)
VETO = DecisionTuning(call_margin=0.72, veto_margin=0.3, preferred_ways=["native", "prompt"])
NATIVE_AND_SCHEMA = Capabilities(native_tools=True, json_schema_output=True)


@dataclass(frozen=True)
class Variant:
    way: str
    caps: Capabilities
    tuning: DecisionTuning | None = None
    rules: bool = False
    refuse_native: bool = False  # the provider refuses tools on the wire: auto falls back


VARIANTS = {
    "native": Variant("native", FULL),
    "schema": Variant("schema", GRAMMAR),
    "schema-scored": Variant("schema", SCORING, GATE),
    "schema-call-by-call": Variant("schema", SCORING, ONE_BY_ONE),
    "prompt": Variant("prompt", Capabilities()),
    "router-rule": Variant("router", GRAMMAR, rules=True),
    "router-by-name": Variant("router", GRAMMAR),
    "router-call-by-call": Variant("router", SCORING, ONE_BY_ONE),
    "auto-veto": Variant("auto", VETO_CAPS, VETO),
    "auto-fallback": Variant("auto", NATIVE_AND_SCHEMA, refuse_native=True),
}
CHOICES = ["auto", "required", "none", "get_weather"]
CALLS = [
    ("get_weather", {"location": "成都"}),
    ("get_weather", {"location": "北京"}),
    ("get_time", {}),
    ("get_weather", {}),
]  # the last one misses its required argument


@dataclass
class Plan:
    """What the model wants: the calls of each round, then an answer."""

    rounds: list[list[tuple[str, dict]]]
    garble: bool = False  # its first written decision cannot be read (PARSE_FAILED)
    polish: bool = False
    max_rounds: int = 2


# ------------------------------------------------------------------ the scripted model


def _is_result(message: Message) -> bool:
    return message.role == "tool" or (
        message.role == "user" and (message.content or "").startswith("<tool_response")
    )


def _rounds_done(messages: list[Message]) -> int:
    """Rounds whose calls got results: an assistant turn followed by a tool result."""
    return sum(1 for m, n in zip(messages, messages[1:]) if m.role == "assistant" and _is_result(n))


def _retried(messages: list[Message]) -> bool:
    return any(m.is_note for m in messages)


def _calls_json(calls: list[tuple[str, dict]]) -> str:
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}, ensure_ascii=False)


def _tags(calls: list[tuple[str, dict]]) -> str:
    return "\n".join(
        f"<tool_call>{json.dumps({'name': n, 'arguments': a}, ensure_ascii=False)}</tool_call>"
        for n, a in calls
    )


def model(plan: Plan, variant: Variant):
    """A stateless scripted model: it reads what round it is in from the request, so the same
    model answers a run, its re-runs and nothing else needs to be kept in step."""

    def answer(request: ModelRequest) -> Any:
        first = plan.rounds[0] if plan.rounds else []
        if request.score_options == ["yes", "no"]:  # relevance of one tool
            tool = re.search(r"Function: (\w+)", request.messages[-1].content or "").group(1)
            fits = any(n == tool for n, _ in first)
            return ModelTurn(scores={"yes": -0.1 if fits else -3.0, "no": -3.0 if fits else -0.1})
        done = _rounds_done(request.messages)
        calls = plan.rounds[done] if done < len(plan.rounds) else []
        garble = plan.garble and not _retried(request.messages)
        written = (request.assistant_prefix or "").count('"name"')
        if request.score_options == [",", "]"]:  # another call?
            return ModelTurn(scores={",": -1.0 if written < len(calls) else -12.0, "]": -0.1})
        form = request.response_format.name if request.response_format else None
        if form == "route":
            return json.dumps({"tools": sorted({n for n, _ in first}) or ["none"]})
        if form == "call":
            if garble and written == 0:
                return request.assistant_prefix + "garbage"
            name, arguments = (calls or [("get_time", {})])[min(written, max(len(calls) - 1, 0))]
            return request.assistant_prefix + json.dumps(
                {"name": name, "arguments": arguments}, ensure_ascii=False
            )
        if form == "decision":
            if garble:
                return "not json at all"
            may_call = "tool_calls" in json.dumps(request.response_format.json_schema)
            return _calls_json(calls) if calls and may_call else '{"answer": "done"}'
        if request.tools:  # native
            if variant.refuse_native:
                raise ProviderError(
                    "tools are not supported by this model", code=ErrorCode.PROVIDER_ERROR, status=400
                )
            if garble:
                return ModelTurn(content="<tool_call>garbage</tool_call>")
            return list(calls) if calls and request.tool_choice != "none" else "done"
        system = request.messages[0].content or "" if request.messages else ""
        if "To call a tool" in system:  # the prompt way
            if garble:
                return "<tool_call>garbage</tool_call>"
            return _tags(calls) if calls else "done"
        return "done"

    return answer


def scripted(plan: Plan, variant: Variant, turns: int = 400) -> ScriptedProvider:
    return ScriptedProvider([model(plan, variant)] * turns, capabilities=variant.caps, tuning=variant.tuning)


def make_flow(variant: Variant, choice: str, parallel: bool, plan: Plan) -> Flow:
    rules = [RouterRule(pattern="天气|weather", tool="get_weather")] if variant.rules else []
    return Flow(
        name="ways",
        tools=["w/v1/get_weather", "t/v1/get_time"],
        tool_choice=choice,
        parallel_tool_calls=parallel,
        max_rounds=plan.max_rounds,
        retry_budget=3,
        router_rules=rules,
        decision=DecisionConfig(provider="scripted", calling_way=variant.way),
        polish=PolishConfig(provider="scripted") if plan.polish else None,
    )


def factory(plan: Plan, variant: Variant):
    decision, polish = scripted(plan, variant), ScriptedProvider(["polished answer"] * 20)
    return lambda cfg: polish if isinstance(cfg, PolishConfig) else decision


def record(variant: Variant, choice: str, parallel: bool, plan: Plan) -> tuple[Flow, Run]:
    flow = make_flow(variant, choice, parallel, plan)
    return flow, Engine(REGISTRY, factory(plan, variant), MemorySink()).run(flow, QUESTION)


# ------------------------------------------------------------------ comparing steps


def _note(step: Step) -> str | None:
    """The note without a re-run's reuse mark."""
    return re.sub(rf"( · )?{REUSED}\w+", "", step.note) or None if step.note else None


def shape(step: Step) -> tuple:
    """What must be the same in a reproduced step; not the model's name (a replay answers as
    itself), call ids (new per run) or times."""
    return (
        step.kind,
        step.round,
        step.name if step.kind == StepKind.TOOL_CALL else None,
        step.calling_way,
        _note(step),
        [(c["name"], c["arguments"]) for c in step.tool_calls or []],
        step.arguments,
        step.result,
        step.error_code,
        step.tokens_in,
        step.tokens_out,
    )


def shapes(run: Run) -> list[tuple]:
    return [shape(s) for s in run.steps]


def rerun(flow: Flow, run: Run, seq: int, plan: Plan, variant: Variant, arguments: dict | None = None) -> Run:
    state, reused = checkpoint_before(run, flow, seq, arguments)
    return Engine(REGISTRY, factory(plan, variant), MemorySink()).continue_from(
        flow, run.question, state.checkpoint(), reused
    )


def edit_for(step: Step) -> dict:
    return (
        {"location": f"edited-{step.seq}"} if step.name == "get_weather" else {"zone": f"edited-{step.seq}"}
    )


# ------------------------------------------------------------------ the properties


def check_everything(variant_name: str, choice: str, parallel: bool, plan: Plan) -> None:
    variant = VARIANTS[variant_name]
    flow, original = record(variant, choice, parallel, plan)
    assert original.steps, original.error

    replayed = Engine(REGISTRY, replay_factory(original), MemorySink()).run(flow, original.question)
    assert differences(original, replayed) == []
    assert shapes(replayed) == shapes(original)
    assert (replayed.status, replayed.final_answer) == (original.status, original.final_answer)

    # auto's fallback holds for the rest of a run, and a re-run is a new run that starts over
    stateful = any("after fallback" in (s.note or "") for s in original.steps)
    for step in original.steps:
        if step.kind == StepKind.TOOL_CALL:
            check_tool_rerun(flow, original, step, plan, variant, stateful)
        elif step.kind in (StepKind.MODEL_CALL, StepKind.POLISH) and step.seq == min(
            s.seq for s in original.steps if s.kind == step.kind and s.round == step.round
        ):
            check_model_rerun(flow, original, step, plan, variant, stateful)


def check_tool_rerun(
    flow: Flow, original: Run, step: Step, plan: Plan, variant: Variant, stateful: bool
) -> None:
    edited = edit_for(step)
    new = rerun(flow, original, step.seq, plan, variant, edited)
    live = new.steps[step.seq - 1]
    assert all(is_reused(s) for s in new.steps[: step.seq - 1]) and not is_reused(live)
    assert (live.kind, live.name, live.round, live.arguments) == (
        StepKind.TOOL_CALL,
        step.name,
        step.round,
        edited,
    )
    assert live.error_code is None and live.response["executed"] is True
    assert f"edited-{step.seq}" in json.dumps(live.result, ensure_ascii=False)
    assert shapes(new)[: step.seq - 1] == shapes(original)[: step.seq - 1]
    if not stateful:  # unedited, a re-run from the tool step is the run again
        assert shapes(rerun(flow, original, step.seq, plan, variant)) == shapes(original)


def check_model_rerun(
    flow: Flow, original: Run, step: Step, plan: Plan, variant: Variant, stateful: bool
) -> None:
    """From a decision (or the polish step), that round is decided (polished) again."""
    new = rerun(flow, original, step.seq, plan, variant)
    _, first = cut_point(original, step.seq)
    assert all(is_reused(s) for s in new.steps[: first - 1]) and not any(
        is_reused(s) for s in new.steps[first - 1 :]
    )
    live = new.steps[step.seq - 1]
    assert (live.kind, live.round) == (step.kind, step.round)
    if not stateful:
        assert shapes(new) == shapes(original)


calls_st = st.lists(st.sampled_from(CALLS), min_size=1, max_size=2)
plans = st.builds(
    Plan,
    rounds=st.lists(calls_st, max_size=3),
    garble=st.booleans(),
    polish=st.booleans(),
    max_rounds=st.integers(1, 3),
)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(sorted(VARIANTS)),
    choice=st.sampled_from(CHOICES),
    parallel=st.booleans(),
    plan=plans,
)
def test_replay_and_rerun_hold_in_every_way(variant, choice, parallel, plan):
    check_everything(variant, choice, parallel, plan)


TWO_ROUNDS = Plan(
    rounds=[
        [("get_weather", {"location": "成都"}), ("get_time", {})],
        [("get_weather", {"location": "北京"})],
    ],
    max_rounds=3,
)


@pytest.mark.parametrize("parallel", [True, False])
@pytest.mark.parametrize("choice", CHOICES)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_way_choice_and_parallel_setting(variant, choice, parallel):
    """Every combination at least once, whatever hypothesis draws."""
    check_everything(variant, choice, parallel, TWO_ROUNDS)
    check_everything(variant, choice, parallel, Plan(rounds=TWO_ROUNDS.rounds, garble=True, polish=True))


def test_the_replay_report_pairs_steps_as_compare_aligns_them():
    """One extra call in the replay is one difference, not a shift of every later pair."""

    def steps(run_id: str, calls: list[tuple[str, dict, Any]]) -> list[Step]:
        made = [Step(run_id=run_id, seq=1, kind=StepKind.MODEL_CALL, round=1, name="m")]
        made += [
            Step(run_id=run_id, seq=i + 2, kind=StepKind.TOOL_CALL, round=1, name=n, arguments=a, result=r)
            for i, (n, a, r) in enumerate(calls)
        ]
        return made + [Step(run_id=run_id, seq=len(calls) + 2, kind=StepKind.POLISH, name="m", result="ok")]

    weather, time = ("get_weather", {"location": "成都"}, {"weather": "小雨"}), ("get_time", {}, "10:00 UTC")
    original = Run(id="a", flow_name="f", question="q", trace_id="t", steps=steps("a", [weather, time]))
    extra = ("get_weather", {"location": "北京"}, {"weather": "晴"})
    replayed = Run(
        id="b", flow_name="f", question="q", trace_id="t", steps=steps("b", [weather, extra, time])
    )
    assert differences(original, replayed) == ["replay step 3 tool_call get_weather: not in the recorded run"]
    changed = replayed.model_copy(update={"steps": steps("b", [weather, ("get_time", {}, "11:00 UTC")])})
    assert differences(original, changed) == ["call 3 get_time: result or error differs (None -> None)"]


@pytest.mark.model
def test_on_the_model_calls_written_one_by_one_replay_and_rerun_with_the_edit(model_path):
    """The embedded model writes two calls one at a time (schema way): the replay reproduces the
    run without it, and a re-run from the second call runs exactly the edited arguments."""
    from flowcall.service.front import FlowCall

    service = FlowCall.open()
    flow = Flow(
        name="weather-schema",
        tools=["weather/v1/get_weather", "time/v1/get_current_time"],
        max_rounds=1,
        decision=DecisionConfig(calling_way="schema", max_tokens=200),
    )
    run = service.run(flow, "What's the weather in Beijing and Shanghai right now?")
    calls = [s for s in run.steps if s.kind == StepKind.TOOL_CALL]
    assert len(calls) >= 2 and any(s.note == "call 2" for s in run.steps), [s.note for s in run.steps]

    original, replayed = service.replay(run.id)
    assert differences(original, replayed) == [] and shapes(replayed) == shapes(original)

    new = service.rerun_from(run.id, calls[1].seq, arguments={"location": "Chengdu"})
    ran = [s for s in new.steps if s.kind == StepKind.TOOL_CALL]
    assert ran[0].arguments == calls[0].arguments and is_reused(ran[0])
    assert ran[1].arguments == {"location": "Chengdu"} and not is_reused(ran[1]) and ran[1].error_code is None
    assert "Chengdu" in json.dumps(ran[1].result, ensure_ascii=False)
