"""The capability probe: the real embedded model, scripted failures, stored profiles, and
`auto` choosing its way from them."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from flowcall.cli.main import cli
from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.errors import ConfigError, ErrorCode, ProviderError
from flowcall.core.messages import ModelTurn
from flowcall.core.model_profile import Check, ModelProfile
from flowcall.core.spec import DecisionConfig, Flow, ModelConfig
from flowcall.core.steps import MemorySink, RunStatus
from flowcall.engine.loop import Engine
from flowcall.providers.base import Capabilities
from flowcall.providers.profiled import measured, measured_tuning, with_profiles
from flowcall.providers.scripted import FULL, ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.service.probe import probe
from flowcall.store import open_store
from flowcall.store.profiles import get_profile, list_profiles, save_profile
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry

SCRIPTED = ModelConfig(provider="scripted", model="scripted")
GOOD_JSON = '{"city": "Paris", "temperature_c": 21}'
TWO_CALLS = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})]


def probe_script(*script, timeout_s: float = 10.0) -> ModelProfile:
    provider = ScriptedProvider(list(script))
    return probe(SCRIPTED, lambda config: provider, timeout_s=timeout_s)


def by_name(profile: ModelProfile) -> dict[str, Check]:
    return {check.name: check for check in profile.checks}


# --- the embedded model ----------------------------------------------------------------------


@pytest.mark.model
def test_probe_of_the_embedded_model(model_path):
    heard: list[str] = []
    profile = probe(ModelConfig(provider="local"), on_check=lambda check: heard.append(check.name))
    checks = by_name(profile)
    assert heard == ["native_tools", "json_schema_output", "parallel_tool_calls"]
    assert profile.provider == "local" and profile.model == Path(model_path).stem and profile.base_url is None
    # the grammar holds the output to the schema, whatever the model would have written
    assert checks["json_schema_output"].passed
    assert json.loads(checks["json_schema_output"].detail)["city"] == "Paris"
    # Measured here: Qwen2.5-Coder-0.5B answers the tool request with the call written as JSON
    # text (sometimes in a code block), not in <tool_call> tags, so the local provider returns no
    # structured call. Whatever it does, each check is a conclusive, timed result.
    for check in profile.checks:
        assert check.conclusive and check.latency_ms > 0 and check.detail
    assert profile.capabilities_update() == {name: check.passed for name, check in checks.items()}


# --- failures are results, not crashes -------------------------------------------------------


def test_all_checks_pass_on_a_model_that_does_everything():
    profile = probe_script([("get_weather", {"city": "Paris"})], GOOD_JSON, TWO_CALLS)
    assert [c.outcome for c in profile.checks] == ["pass", "pass", "pass"]
    assert profile.capabilities_update() == {
        "native_tools": True,
        "json_schema_output": True,
        "parallel_tool_calls": True,
    }
    assert 'get_weather({"city": "Tokyo"})' in by_name(profile)["parallel_tool_calls"].detail


@pytest.mark.parametrize(
    "error",
    [
        ProviderError(
            "openai rate limit hit for model 'm'", code=ErrorCode.RATE_LIMITED, transient=True, status=429
        ),
        ProviderError("openai says the account is out of quota", code=ErrorCode.RATE_LIMITED, status=429),
        ProviderError("openai rejected the request (HTTP 401): Check the API key", status=401),
    ],
)
def test_trouble_outside_the_model_is_inconclusive_and_the_others_still_run(error):
    profile = probe_script(error, GOOD_JSON, TWO_CALLS)
    native = by_name(profile)["native_tools"]
    assert not native.passed and native.outcome == "inconclusive"
    assert native.detail == f"{error.code}: {error.message}"
    # says nothing about the model: the declared value stays
    assert profile.capabilities_update() == {"json_schema_output": True, "parallel_tool_calls": True}


def test_a_refusal_is_a_conclusive_failure():
    refused = ProviderError("server rejected the request (HTTP 400): tools are not supported", status=400)
    profile = probe_script(refused, GOOD_JSON, refused)
    assert by_name(profile)["native_tools"].outcome == "fail"
    assert profile.capabilities_update() == {
        "native_tools": False,
        "json_schema_output": True,
        "parallel_tool_calls": False,
    }


def test_a_call_written_as_text_does_not_count():
    in_text = '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'
    profile = probe_script(in_text, "Paris: 21 degrees", [("get_weather", {"city": "Paris"})])
    checks = by_name(profile)
    assert (
        checks["native_tools"].outcome == "fail" and "instead of a tool call" in checks["native_tools"].detail
    )
    assert checks["json_schema_output"].outcome == "fail" and checks["json_schema_output"].detail.startswith(
        "not JSON"
    )
    assert (
        checks["parallel_tool_calls"].outcome == "fail"
        and "only one call" in checks["parallel_tool_calls"].detail
    )
    assert profile.capabilities_update() == dict.fromkeys(
        ("native_tools", "json_schema_output", "parallel_tool_calls"), False
    )


def test_invalid_arguments_and_schema_violations_fail():
    profile = probe_script(
        [("get_weather", {"town": "Paris"})], '{"city": "Paris"}', [("get_weather", "{broken")] * 2
    )
    checks = by_name(profile)
    assert "invalid arguments" in checks["native_tools"].detail
    assert "temperature_c" in checks["json_schema_output"].detail
    assert "unparsable arguments" in checks["parallel_tool_calls"].detail


def test_a_slow_model_times_out_per_check():
    def slow(_request):
        time.sleep(1.0)
        return GOOD_JSON

    started = time.perf_counter()
    profile = probe_script(slow, GOOD_JSON, TWO_CALLS, timeout_s=0.2)
    native = by_name(profile)["native_tools"]
    assert native.outcome == "inconclusive" and native.detail == "no answer within 0.2 s"
    assert time.perf_counter() - started < 1.0  # the late answer is not waited for


def test_a_provider_that_cannot_be_built_is_an_error_not_a_profile():
    def no_key(_config):
        raise ConfigError("OPENAI_API_KEY is not set")

    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        probe(ModelConfig(provider="openai", model="m"), no_key)


# --- storage ---------------------------------------------------------------------------------


def test_profiles_round_trip_and_replace_by_key():
    store = open_store()
    first = probe_script([("get_weather", {"city": "Paris"})], GOOD_JSON, TWO_CALLS)
    save_profile(store, first)
    assert get_profile(store, "scripted", "scripted") == first
    assert get_profile(store, "scripted", "scripted", "http://elsewhere/v1") is None

    elsewhere = first.model_copy(
        update={"base_url": "http://elsewhere/v1", "probed_at": first.probed_at + timedelta(seconds=1)}
    )
    save_profile(store, elsewhere)
    again = probe_script("text", GOOD_JSON, "text")
    again.probed_at = first.probed_at + timedelta(seconds=2)
    save_profile(store, again)  # the same key: replaces the first probe

    assert get_profile(store, "scripted", "scripted").capabilities_update()["native_tools"] is False
    assert [p.base_url for p in list_profiles(store)] == [None, "http://elsewhere/v1"]  # newest first


# --- auto uses the stored profile ------------------------------------------------------------


def get_weather(location: str) -> dict:
    """Weather for a city."""
    return {"location": location, "weather": "小雨"}


def run_auto(factory):
    registry = ToolRegistry([build_tool(get_weather, "w/v1/get_weather")])
    flow = Flow(
        name="w", tools=["w/v1/get_weather"], decision=DecisionConfig(provider="scripted", calling_way="auto")
    )
    return Engine(registry, factory, MemorySink()).run(flow, "成都天气?")


def test_auto_starts_on_a_measured_way():
    store = open_store()
    profile_of = partial(get_profile, store)
    native_script = [[("get_weather", {"location": "成都"})], "小雨。"]
    assert (
        run_auto(with_profiles(lambda c: ScriptedProvider(list(native_script)), profile_of))
        .steps[0]
        .calling_way
        == "native"
    )

    save_profile(
        store, probe_script("I would call get_weather", GOOD_JSON, "no")
    )  # native_tools measured False
    schema_script = [
        '{"tool_calls": [{"name": "get_weather", "arguments": {"location": "成都"}}]}',
        '{"answer": "小雨。"}',
    ]
    provider = ScriptedProvider(list(schema_script))
    result = run_auto(with_profiles(lambda c: provider, profile_of))
    assert result.status == RunStatus.SUCCEEDED and result.final_answer == "小雨。"
    assert [s.calling_way for s in result.steps if s.calling_way] == ["schema", "schema"]
    assert provider.capabilities.native_tools and FULL.native_tools  # the provider's own are untouched


def test_a_probed_model_says_why_auto_starts_where_it_does():
    text_only = ModelProfile(
        provider="p",
        model="m",
        checks=[
            Check(name="native_tools", passed=False, detail="answered with text instead of a tool call"),
            Check(name="json_schema_output", passed=True, detail="{}"),
        ],
    )
    tuning = measured_tuning(DecisionTuning(), text_only)
    assert (
        tuning.ways_reason.startswith("the probe of ")
        and "no valid native tool call (answered with text" in tuning.ways_reason
    )
    assert tuning.ways_reason.endswith("and JSON-schema output works")
    good = ModelProfile(
        provider="p", model="m", checks=[Check(name="native_tools", passed=True, detail="ok")]
    )
    assert "writes valid native tool calls" in measured_tuning(DecisionTuning(), good).ways_reason
    unreached = ModelProfile(
        provider="p",
        model="m",
        checks=[Check(name="native_tools", passed=False, detail="429", conclusive=False)],
    )
    assert (
        measured_tuning(DecisionTuning(), unreached).ways_reason is None
    )  # nothing measured, nothing claimed


def test_measured_capabilities_keep_a_calibrated_order_of_ways():
    declared = Capabilities(native_tools=True, json_schema_output=True)
    own = DecisionTuning(preferred_ways=["native", "schema", "prompt"])
    profile = ModelProfile(
        provider="p",
        model="m",
        checks=[
            Check(name="native_tools", passed=False, detail="text"),
            Check(name="json_schema_output", passed=False, detail="not JSON"),
            Check(name="parallel_tool_calls", passed=False, detail="429", conclusive=False),
        ],
    )
    caps, tuning = measured(declared, profile), measured_tuning(own, profile)
    assert (caps.native_tools, caps.json_schema_output, caps.parallel_tool_calls) == (False, False, False)
    assert (
        tuning.preferred_ways == ["native", "schema", "prompt"] and tuning.ways_reason is None
    )  # its own reason stands
    assert declared.native_tools and own.preferred_ways == ["native", "schema", "prompt"]


# --- the CLI ---------------------------------------------------------------------------------


def invoke(args: list[str], script: list) -> tuple[object, FlowCall]:
    service = FlowCall(
        store=open_store(), provider_factory=lambda config: ScriptedProvider(script, model=config.model)
    )
    return CliRunner().invoke(cli, args, obj={"service": service}), service


def test_cli_models_probe_then_list():
    done, service = invoke(
        ["profiles", "probe", "--provider", "openai", "--model", "gpt-x"], ["text", GOOD_JSON, "text"]
    )
    assert done.exit_code == 0, done.output
    assert "openai/gpt-x" in done.output and "pass         json_schema_output" in done.output
    assert '"native_tools": false' in done.output
    assert get_profile(service.store, "openai", "gpt-x").capabilities_update()["json_schema_output"] is True

    listed = CliRunner().invoke(cli, ["profiles", "list", "--json"], obj={"service": service})
    assert [p["provider"] for p in json.loads(listed.output)] == ["openai"]


def test_the_old_group_name_still_works_and_says_the_new_one():
    done, service = invoke(
        ["models", "probe", "--provider", "openai", "--model", "gpt-x"], ["text", GOOD_JSON, "text"]
    )
    assert done.exit_code == 0, done.output
    assert "`flowcall models` is now `flowcall profiles`" in done.output  # the note, on stderr
    assert get_profile(service.store, "openai", "gpt-x") is not None
    assert "models" not in CliRunner().invoke(cli, ["--help"]).output.split("Commands:")[1].split()


def test_cli_stores_nothing_when_no_check_reached_the_model():
    down = ProviderError("could not reach openai-compatible at http://127.0.0.1:9/v1", transient=True)
    done, service = invoke(
        [
            "profiles",
            "probe",
            "--provider",
            "openai-compatible",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        [down, down, down],
    )
    assert isinstance(done.exception, ConfigError) and "Nothing was stored" in str(done.exception)
    assert list_profiles(service.store) == []
    assert (
        "no stored profiles" in CliRunner().invoke(cli, ["profiles", "list"], obj={"service": service}).output
    )


def test_turn_latency_is_measured_around_the_call():
    def answer(_request):
        time.sleep(0.05)
        return ModelTurn(tool_calls=[], content="no")

    profile = probe_script(answer, GOOD_JSON, TWO_CALLS)
    assert by_name(profile)["native_tools"].latency_ms >= 50
