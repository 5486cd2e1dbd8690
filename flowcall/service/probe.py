"""The capability probe: ask a real model three small questions and record what it can do.

A provider's declared Capabilities say what its wire format supports; whether the model
behind it actually answers with tool calls, schema-valid JSON or several calls at once is
only known by trying. `auto` then picks its calling way from what was measured
(providers/profiled.py).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import jsonschema

from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ResponseFormat, ToolSpec
from flowcall.core.model_profile import Check, CheckName, ModelProfile
from flowcall.core.spec import ModelConfig
from flowcall.core.steps import utcnow
from flowcall.providers import Provider, provider_for
from flowcall.providers.base import ProviderFactory, redact_url

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}},
        "required": ["city"],
        "additionalProperties": False,
    },
)
CITY_TEMPERATURE = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temperature_c": {"type": "number"}},
    "required": ["city", "temperature_c"],
    "additionalProperties": False,
}
SYSTEM = Message(
    role="system", content="You are a helpful assistant. Use the tools you are given when they help."
)


# ---------------------------------------------------------------- the three questions


def _valid_calls(turn: ModelTurn) -> tuple[int, str]:
    """(how many structured get_weather calls with valid arguments, what came back instead)."""
    valid, problems = 0, []
    for call in turn.tool_calls:
        if call.name != WEATHER.name:
            problems.append(f"called an unknown tool {call.name!r}")
        elif call.arguments is None:
            problems.append(f"unparsable arguments {call.raw_arguments[:80]!r}")
        else:
            errors = [
                e.message
                for e in jsonschema.Draft202012Validator(WEATHER.parameters).iter_errors(call.arguments)
            ]
            if errors:
                problems.append(
                    f"invalid arguments {json.dumps(call.arguments, ensure_ascii=False)}: {errors[0]}"
                )
            else:
                valid += 1
    if not turn.tool_calls:
        problems.append(f"answered with text instead of a tool call: {(turn.content or '')[:120]!r}")
    return valid, "; ".join(problems)


def _described(turn: ModelTurn) -> str:
    return ", ".join(f"{c.name}({c.arguments_json()})" for c in turn.tool_calls)


def _weather_request(question: str, parallel: bool) -> ModelRequest:
    # tool_choice "auto", as flows send it: the question needs the tool, and the model must say
    # so with a structured call (a call written into the text does not count)
    return ModelRequest(
        messages=[SYSTEM, Message(role="user", content=question)],
        tools=[WEATHER],
        tool_choice="auto",
        parallel_tool_calls=parallel,
        max_tokens=256 if parallel else 128,
    )


def _judge_native(turn: ModelTurn) -> tuple[bool, str]:
    valid, problems = _valid_calls(turn)
    return (True, _described(turn)) if valid and not problems else (False, problems)


def _judge_json(turn: ModelTurn) -> tuple[bool, str]:
    text = turn.content or ""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return False, f"not JSON: {text[:120]!r}"
    errors = [e.message for e in jsonschema.Draft202012Validator(CITY_TEMPERATURE).iter_errors(value)]
    return (False, f"JSON not valid against the schema: {errors[0]}") if errors else (True, text.strip())


def _judge_parallel(turn: ModelTurn) -> tuple[bool, str]:
    valid, problems = _valid_calls(turn)
    if valid >= 2:
        return True, _described(turn)
    return False, problems or f"only one call in the turn: {_described(turn)}"


CHECKS: dict[CheckName, tuple[ModelRequest, Callable[[ModelTurn], tuple[bool, str]]]] = {
    "native_tools": (
        _weather_request("What is the weather in Paris right now?", parallel=False),
        _judge_native,
    ),
    "json_schema_output": (
        ModelRequest(
            messages=[
                Message(
                    role="user",
                    content="It is 21 degrees Celsius in Paris. Give the city and the temperature.",
                )
            ],
            response_format=ResponseFormat(name="city_temperature", json_schema=CITY_TEMPERATURE),
            max_tokens=128,
        ),
        _judge_json,
    ),
    "parallel_tool_calls": (
        _weather_request("What is the weather in Paris and in Tokyo right now?", parallel=True),
        _judge_parallel,
    ),
}


# ---------------------------------------------------------------- running them


def _complete_within(provider: Provider, request: ModelRequest, timeout_s: float) -> ModelTurn:
    """provider.complete, or TimeoutError. A provider call cannot be cancelled, so a late one
    finishes in its daemon thread and its answer is dropped."""
    outcome: dict[str, ModelTurn | BaseException] = {}

    def target() -> None:
        try:
            outcome["turn"] = provider.complete(request)
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="flowcall-probe", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["turn"]  # type: ignore[return-value]


def _about_the_model(exc: ProviderError) -> bool:
    """A refused request (say, tools or response_format unsupported) is a result; trouble with
    the account, the network or the server says nothing about the model."""
    return not exc.transient and exc.code != ErrorCode.RATE_LIMITED and exc.status not in (401, 403)


def run_check(provider: Provider, name: CheckName, timeout_s: float) -> Check:
    request, judge = CHECKS[name]
    request = request.model_copy(deep=True)  # a provider may keep or change what it was sent
    started = time.perf_counter()

    def elapsed_ms() -> float:
        return round((time.perf_counter() - started) * 1000, 1)

    try:
        turn = _complete_within(provider, request, timeout_s)
    except ProviderError as exc:
        return Check(
            name=name,
            passed=False,
            detail=f"{exc.code}: {exc.message}",
            conclusive=_about_the_model(exc),
            latency_ms=elapsed_ms(),
        )
    except TimeoutError as exc:
        return Check(name=name, passed=False, detail=str(exc), conclusive=False, latency_ms=elapsed_ms())
    passed, detail = judge(turn)
    return Check(name=name, passed=passed, detail=detail, latency_ms=elapsed_ms())


def probe(
    config: ModelConfig,
    provider_factory: ProviderFactory = provider_for,
    timeout_s: float = 120.0,
    on_check: Callable[[Check], None] | None = None,
) -> ModelProfile:
    """Run every check against the model `config` names; `on_check` hears each as it ends.

    Building the provider can fail (no API key, no model file): that ConfigError is raised,
    since there is nothing to measure. Every failure after that is a check's result."""
    provider = provider_factory(config)
    # a base URL's credentials are never stored (the Models page shows profiles)
    profile = ModelProfile(
        provider=config.provider,
        model=provider.model,
        base_url=redact_url(config.base_url) if config.base_url else None,
    )
    for name in CHECKS:
        check = run_check(provider, name, timeout_s)
        profile.checks.append(check)
        if on_check:
            on_check(check)
    profile.probed_at = utcnow()
    return profile
