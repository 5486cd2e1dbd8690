"""flowcall.testing: the scripted provider's assert_complete, the schema-driven model (valid
arguments, determinism, a resumed run ends as an uninterrupted one), `provider: "scripted"` in
flows and on the CLI; flowcall.rendering; NotFoundError and ErrorCode.INTERNAL."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from flowcall.core import config
from flowcall.core.errors import ConfigError, ErrorCode, NotFoundError
from flowcall.core.messages import Message, ModelRequest, ResponseFormat, ToolSpec
from flowcall.core.spec import DecisionConfig, Flow, ModelConfig, load_flow, parse_flow
from flowcall.core.steps import Run, RunStatus, Step, StepKind
from flowcall.engine.approval import approve_all
from flowcall.providers import provider_for
from flowcall.rendering import answer_text, describe_step, run_line, run_totals, short, step_ref
from flowcall.testing import FULL, SchemaDrivenProvider, ScriptedProvider, example_for
from flowcall.tools.base import ToolAnnotations
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.sources import trust_items

ROOT = Path(__file__).resolve().parents[1]
CHECK_FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def valid(value, schema) -> None:
    jsonschema.validate(value, schema, format_checker=CHECK_FORMATS)


# ------------------------------------------------------------------ ScriptedProvider.assert_complete


def test_assert_complete_names_the_unused_turns():
    provider = ScriptedProvider(["one", "two", [("f", {})]])
    provider.complete(ModelRequest(messages=[Message(role="user", content="hi")]))
    with pytest.raises(AssertionError, match="2 unused turns after 1 request"):
        provider.assert_complete()
    provider.complete(ModelRequest(messages=[Message(role="user", content="hi")]))
    with pytest.raises(AssertionError, match="1 unused turn after 2 requests"):
        provider.assert_complete()
    provider.complete(ModelRequest(messages=[Message(role="user", content="hi")]))
    provider.assert_complete()  # all used: silent


def test_assert_complete_catches_a_run_that_ended_before_its_script():
    from flowcall.core.steps import MemorySink
    from flowcall.engine.loop import Engine

    registry = ToolRegistry([build_tool(echo, "t/v1/echo")])
    provider = ScriptedProvider([[("echo", {"text": "a"})], "done", "never asked"])
    flow = Flow(name="t", tools=["echo"], max_rounds=3, decision=DecisionConfig(provider="scripted"))
    run = Engine(registry, lambda cfg: provider, MemorySink()).run(flow, "go")
    assert run.status == RunStatus.SUCCEEDED
    with pytest.raises(AssertionError, match="1 unused turn"):
        provider.assert_complete()


def echo(text: str) -> str:
    """Echo the text."""
    return f"echo {text}"


# ------------------------------------------------------------------ example_for: valid against the schema


class Address(BaseModel):
    street: str
    postcode: str = Field(min_length=5, max_length=5)


class Item(BaseModel):
    sku: str
    quantity: int = Field(ge=1, le=5)
    colour: Literal["red", "green"]


class Order(BaseModel):
    items: list[Item] = Field(min_length=2)
    priority: Literal[1, 2, 3]
    when: dt.date
    ship_to: Address
    note: str | None = None  # anyOf [string, null]
    discount: float = Field(gt=0, lt=1)


SCHEMAS = {
    "weather tool": {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "extensions": {"type": "string", "enum": ["base", "all"], "default": "base"},
        },
        "required": ["location"],
    },
    "nested objects, arrays, enums, bounded integers": {
        "type": "object",
        "properties": {
            "trip": {
                "type": "object",
                "properties": {
                    "legs": {
                        "type": "array",
                        "minItems": 2,
                        "maxItems": 4,
                        "uniqueItems": True,
                        "items": {
                            "type": "object",
                            "properties": {
                                "mode": {"enum": ["metro", "walk", "bus"]},
                                "minutes": {"type": "integer", "minimum": 3, "maximum": 90},
                                "tags": {"type": "array", "items": {"type": "string"}},
                            },
                            "required": ["mode", "minutes", "tags"],
                            "additionalProperties": False,
                        },
                    },
                    "budget": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
                },
                "required": ["legs", "budget"],
            },
            "optional": {"type": "string"},
        },
        "required": ["trip"],
    },
    "integer bounds": {
        "type": "object",
        "properties": {
            "above": {"type": "integer", "exclusiveMinimum": 3, "maximum": 10, "multipleOf": 4},
            "negative": {"type": "integer", "maximum": -5},
            "either": {"type": ["null", "integer"], "minimum": 2},
        },
        "required": ["above", "negative", "either"],
    },
    "string formats and lengths": {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
            "id": {"type": "string", "format": "uuid"},
            "long": {"type": "string", "minLength": 12},
            "tiny": {"type": "string", "maxLength": 3},
        },
        "required": ["day", "at", "mail", "id", "long", "tiny"],
    },
    "combinators": {
        "type": "object",
        "properties": {
            "one": {"oneOf": [{"type": "null"}, {"type": "boolean"}]},
            "all": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                    {"properties": {"b": {"const": "B"}}, "required": ["b"]},
                ]
            },
            "tuple": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            },
        },
        "required": ["one", "all", "tuple"],
    },
    "pydantic model ($defs and $ref)": Order.model_json_schema(),
    "commute card (flows/commute_weather.json)": load_flow(
        ROOT / "flows" / "commute_weather.json"
    ).polish.output_schema,
}


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_example_for_is_valid_against_the_schema(name):
    schema = SCHEMAS[name]
    value = example_for(schema)
    valid(value, schema)
    assert example_for(schema) == value  # deterministic


def test_example_for_picks_default_enum_minimum_and_required_only():
    assert example_for(SCHEMAS["weather tool"]) == {"location": "example"}  # optional ones are left out
    assert example_for({"enum": ["b", "a"]}) == "b" and example_for({"type": "integer", "default": 7}) == 7
    assert (
        example_for({"type": "integer", "minimum": 4}) == 4
        and example_for({"type": "string", "format": "date"}) == "2026-01-01"
    )
    order = Order.model_validate(example_for(Order.model_json_schema()))
    assert len(order.items) == 2 and order.items[0] != order.items[1] and 0 < order.discount < 1


def test_draft_4_exclusive_flags():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 7, "exclusiveMinimum": True},
            "x": {"type": "number", "maximum": 0, "exclusiveMaximum": True},
        },
        "required": ["n", "x"],
    }
    value = example_for(schema)
    jsonschema.Draft4Validator(schema).validate(value)
    assert value == {"n": 8, "x": -1}


def test_every_plugin_tool_gets_valid_arguments():
    tools = ToolRegistry.from_plugin_dirs(config.plugin_dirs()).all()
    assert len(tools) >= 5
    for tool in tools:
        arguments = example_for(tool.parameters)
        assert isinstance(arguments, dict)
        valid(arguments, tool.parameters)


# schemas that can be satisfied, from the keywords example_for covers
def _leaf() -> st.SearchStrategy[dict]:
    def integer(bounds):
        low, span, low_open, high_open = bounds
        schema: dict = {"type": "integer"}
        if low is not None:
            schema["exclusiveMinimum" if low_open else "minimum"] = low
        if span is not None:
            high = (low if low is not None else 0) + span + 2  # room for one integer when both are open
            schema["exclusiveMaximum" if high_open else "maximum"] = high
        return schema

    def number(bounds):
        low, span, low_open, high_open = bounds
        schema: dict = {"type": "number"}
        if low is not None:
            schema["exclusiveMinimum" if low_open else "minimum"] = low
        if span is not None:
            schema["exclusiveMaximum" if high_open else "maximum"] = (
                (low if low is not None else 0) + span + 0.5
            )
        return schema

    bound = st.tuples(
        st.none() | st.integers(-50, 50), st.none() | st.integers(0, 20), st.booleans(), st.booleans()
    )
    lengths = st.tuples(st.integers(0, 12), st.integers(0, 12)).map(sorted)
    return st.one_of(
        bound.map(integer),
        bound.map(number),
        st.builds(lambda ln: {"type": "string", "minLength": ln[0], "maxLength": ln[1]}, lengths),
        st.sampled_from(
            [{"type": "string", "format": f} for f in ("date", "date-time", "email", "uuid", "ipv4")]
        ),
        st.lists(st.integers() | st.text(max_size=5), min_size=1, max_size=4, unique=True).map(
            lambda e: {"enum": e}
        ),
        st.just({"type": "boolean"}),
        st.just({"type": "null"}),
    )


def _nested(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    array = st.builds(
        lambda items, ln: {"type": "array", "items": items, "minItems": ln[0], "maxItems": ln[1]},
        children,
        st.tuples(st.integers(0, 3), st.integers(0, 3)).map(sorted),
    )

    def obj(props: dict, picks: list[bool]) -> dict:
        required = [name for name, pick in zip(props, picks) if pick]
        return {"type": "object", "properties": props, "required": required}

    names = st.text("abcdefgh", min_size=1, max_size=4)
    objects = st.builds(
        obj, st.dictionaries(names, children, max_size=4), st.lists(st.booleans(), min_size=4, max_size=4)
    )
    nullable = children.map(lambda c: {"anyOf": [{"type": "null"}, c]})
    return array | objects | nullable


@settings(max_examples=300, deadline=None)
@given(st.recursive(_leaf(), _nested, max_leaves=12))
def test_example_for_is_valid_for_generated_schemas(schema):
    valid(example_for(schema), schema)


# ------------------------------------------------------------------ the schema-driven model

WEATHER = ToolSpec(name="get_weather", parameters=SCHEMAS["weather tool"])
TIME = ToolSpec(
    name="get_time",
    parameters={"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]},
)


def ask(messages: list[Message], **kw) -> ModelRequest:
    return ModelRequest(messages=messages, **{"tools": [WEATHER, TIME], **kw})


def results_of(turn, content: str = "ok") -> list[Message]:
    """The assistant turn and a tool result for each of its calls, as the engine appends them."""
    return [
        Message(role="assistant", tool_calls=turn.tool_calls),
        *(
            Message(role="tool", tool_call_id=c.id, name=c.name, content=f"{c.name} {content}")
            for c in turn.tool_calls
        ),
    ]


def test_calls_each_tool_once_one_per_turn_then_answers_with_the_results():
    model = SchemaDrivenProvider()
    messages = [Message(role="user", content="weather and time?")]
    first = model.complete(ask(messages, parallel_tool_calls=False))
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("get_weather", {"location": "example"})]
    valid(first.tool_calls[0].arguments, WEATHER.parameters)
    messages += results_of(first)
    second = model.complete(ask(messages, parallel_tool_calls=False))
    assert [(c.name, c.arguments) for c in second.tool_calls] == [("get_time", {"zone": "UTC"})]
    messages += results_of(second)
    last = model.complete(ask(messages, parallel_tool_calls=False))
    assert not last.tool_calls
    assert last.content == "Results: get_weather -> get_weather ok; get_time -> get_time ok"
    assert model.capabilities == FULL and model.name == "scripted" and model.model == "schema"


def test_parallel_choice_and_structured_output():
    model = SchemaDrivenProvider()
    question = [Message(role="user", content="q")]
    assert [c.name for c in model.complete(ask(question)).tool_calls] == [
        "get_weather",
        "get_time",
    ]  # at once
    assert [c.name for c in model.complete(ask(question, tool_choice="get_time")).tool_calls] == ["get_time"]
    assert model.complete(ask(question, tool_choice="none")).content == "No tool results. Last message: q"
    assert not model.complete(ModelRequest(messages=question)).tool_calls
    card = SCHEMAS["commute card (flows/commute_weather.json)"]
    turn = model.complete(ModelRequest(messages=question, response_format=ResponseFormat(json_schema=card)))
    valid(json.loads(turn.content), card)
    assert turn.wire_request and turn.usage.input_tokens == 0  # "q" is under 4 characters


def test_a_pure_function_of_the_request():
    request = ask([Message(role="user", content="q")])
    one, other = SchemaDrivenProvider(), SchemaDrivenProvider()
    other.complete(ask([Message(role="user", content="something else first")]))  # its history does not matter
    assert one.complete(request).model_dump() == other.complete(request).model_dump()  # call ids too


def _conversation(models: list[SchemaDrivenProvider], switch_at: int) -> tuple[str, list[str]]:
    """Drive a conversation (tools answering deterministically) with models[0] for the first
    `switch_at` requests and models[1] after: as a run killed there and resumed elsewhere."""
    messages, ids = [Message(role="user", content="weather and time?")], []
    for n in range(10):
        turn = models[0 if n < switch_at else 1].complete(ask(messages, parallel_tool_calls=False))
        if not turn.tool_calls:
            return turn.content, ids
        ids += [c.id for c in turn.tool_calls]
        messages += results_of(turn, content=json.dumps(turn.tool_calls[0].arguments))
    raise AssertionError("the model never answered")


@pytest.mark.parametrize("switch_at", [0, 1, 2, 3])
def test_a_resumed_conversation_ends_as_an_uninterrupted_one(switch_at):
    uninterrupted = _conversation([SchemaDrivenProvider()] * 2, switch_at=99)
    assert _conversation([SchemaDrivenProvider(), SchemaDrivenProvider()], switch_at) == uninterrupted


DELETED: list[str] = []


def read_report(name: str) -> str:
    """Read a report."""
    return f"report {name}: 3 pages"


def delete_report(name: str) -> str:
    """Delete a report."""
    DELETED.append(name)
    return f"deleted {name}"


def test_a_paused_and_resumed_run_answers_as_an_uninterrupted_one(tmp_path):
    """Through the service: paused for approval, then resumed by new objects with a new model
    instance, the run ends with the answer of a run approved at once."""
    from flowcall.service.front import FlowCall

    DELETED.clear()
    registry = ToolRegistry(
        [
            build_tool(read_report, "r/v1/read_report", annotations=ToolAnnotations(read_only=True)),
            build_tool(delete_report, "r/v1/delete_report", annotations=ToolAnnotations(destructive=True)),
        ]
    )
    flow = Flow(
        name="reports",
        tools=["read_report", "delete_report"],
        parallel_tool_calls=False,
        max_rounds=3,
        decision=DecisionConfig(provider="scripted", model="schema"),
    )

    def service(url: str) -> FlowCall:
        app = FlowCall(store=FlowCall.open(url).store, provider_factory=provider_for)  # a new model each time
        app.registry = registry
        return app

    straight = service(f"sqlite:///{tmp_path / 'a.db'}").run(flow, "tidy the reports", approver=approve_all)
    assert straight.status == RunStatus.SUCCEEDED and DELETED == ["example"]
    url = f"sqlite:///{tmp_path / 'b.db'}"
    paused = service(url).run(flow, "tidy the reports")
    assert paused.status == RunStatus.WAITING_APPROVAL and DELETED == ["example"]
    resumed = service(url).resume(paused.id, approver=approve_all)
    assert resumed.status == RunStatus.SUCCEEDED and DELETED == ["example", "example"]
    assert resumed.final_answer == straight.final_answer
    assert (
        straight.final_answer
        == "Results: read_report -> report example: 3 pages; delete_report -> deleted example"
    )


# ------------------------------------------------------------------ provider "scripted" in flows


def test_provider_for_builds_the_schema_model_and_names_it_otherwise():
    assert isinstance(provider_for(ModelConfig(provider="scripted", model="schema")), SchemaDrivenProvider)
    with pytest.raises(ConfigError, match="its one model is 'schema'"):
        provider_for(ModelConfig(provider="scripted", model="gpt-4o"))


def test_a_flow_with_the_scripted_model_needs_no_grant():
    flow = parse_flow(
        {
            "name": "s",
            "tools": ["time/v1/get_current_time"],
            "decision": {"provider": "scripted", "model": "schema"},
            "polish": {"provider": "scripted", "model": "schema"},
        }
    )
    assert trust_items(flow) == []


def test_cli_runs_a_flow_file_on_the_scripted_model(tmp_path):
    """No model file needed: the decision model calls the clock plugin's tool (every argument of
    it is optional, so the schema-driven model sends {}) and answers with its result."""
    flow = tmp_path / "clock.json"
    flow.write_text(
        json.dumps(
            {
                "name": "scripted-clock",
                "tools": ["time/v1/get_current_time"],
                "max_rounds": 2,
                "decision": {"provider": "scripted", "model": "schema"},
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "run", str(flow), "What time is it?", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    calls = [s for s in run["steps"] if s["kind"] == "tool_call"]
    assert [(s["name"], s["arguments"], s["error_code"]) for s in calls] == [("get_current_time", {}, None)]
    assert run["status"] == "succeeded" and run["final_answer"].startswith("Results: get_current_time -> ")
    assert calls[0]["result"]["datetime"] in run["final_answer"] and "Asia/Shanghai" in run["final_answer"]
    plain = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "run", str(flow), "What time is it?"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert plain.returncode == 0 and "get_current_time" in plain.stderr and "Results:" in plain.stdout


# ------------------------------------------------------------------ typed errors


def test_internal_is_an_error_code_and_not_found_is_a_config_error():
    assert ErrorCode("INTERNAL") is ErrorCode.INTERNAL and str(ErrorCode.INTERNAL) == "INTERNAL"
    assert issubclass(NotFoundError, ConfigError)


def test_the_cli_reports_not_found_in_one_line_with_exit_2(monkeypatch, capsys):
    from flowcall.cli import main as cli

    class Service:  # the CLI reads runs through the service (records.py)
        def get_run(self, run_id):
            raise NotFoundError(f"no run '{run_id}'; `flowcall runs list` shows the runs there are")

    monkeypatch.setattr(cli, "_service", lambda ctx: Service())
    monkeypatch.setattr(sys, "argv", ["flowcall", "runs", "show", "nope"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err == "error: no run 'nope'; `flowcall runs list` shows the runs there are\n"


# ------------------------------------------------------------------ rendering


def step(**kw) -> Step:
    return Step(run_id="r", **{"seq": 1, "kind": StepKind.TOOL_CALL, **kw})


def test_describe_step_lines():
    tool = step(name="get_weather", arguments={"location": "成都"}, result={"weather": "阴"}, latency_ms=1234)
    assert (
        describe_step(tool)
        == '[1] tool_call    1.23s  get_weather({"location": "成都"}) -> {"weather": "阴"}'
    )
    model = step(
        seq=2,
        kind=StepKind.MODEL_CALL,
        name="scripted/schema",
        calling_way="native",
        tokens_in=10,
        tokens_out=2,
        tool_calls=[{"name": "get_weather", "arguments": {"location": "成都"}}],
    )
    assert describe_step(model) == (
        '[2] model_call   0.00s  scripted/schema [native] 10→2 tok: get_weather({"location": "成都"})'
    )
    failed = step(
        seq=3,
        kind=StepKind.ERROR,
        name=None,
        note="x " * 80,
        error_code="MAX_ROUNDS",
        error_message="too many",
    )
    line = describe_step(failed)
    assert line.endswith("…)  !! MAX_ROUNDS: too many") and len(line) < 160
    from flowcall.cli import main as cli

    assert cli.describe_step is describe_step  # still importable from the CLI


def test_short_answer_and_run_lines():
    assert short("a\n  b") == "a b" and short("x" * 10, 5) == "xxxx…" and short({"k": 1}) == '{"k": 1}'
    assert answer_text("hi") == "hi" and answer_text({"a": 1}) == '{\n  "a": 1\n}'
    run = Run(
        id="abc",
        flow_name="f",
        question="q?",
        trace_id="t",
        status=RunStatus.SUCCEEDED,
        started_at=dt.datetime(2026, 1, 2, 3, 4, 5),
        steps=[step(tokens_in=3, tokens_out=1), step(seq=2, kind=StepKind.POLISH, name="p", tokens_in=2)],
    )
    assert step_ref(run.steps[1]) == "2 polish p"
    assert run_totals(run) == "run abc · 2 steps · 5→1 tokens"
    assert run_line(run) == f"abc  2026-01-02 03:04:05  succeeded  {'f':<20}  q?"
