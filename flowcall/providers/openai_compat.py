"""OpenAI Chat Completions wire format: OpenAI, DashScope compatible mode, Ollama, LM Studio,
vLLM and llama.cpp servers all speak it, so one module serves them all.

The conversions are pure functions (neutral request -> wire dict, wire dict -> ModelTurn) so
they can be tested against recorded payloads; the provider class only adds the network call.
The SDK's own retries are switched off: ours go through `with_retries`, so each is recorded.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any, Callable

from flowcall.core import config, progress
from flowcall.core.errors import ConfigError, ErrorCode, ProviderError
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ToolCall, Usage
from flowcall.core.spec import ModelConfig
from flowcall.providers.base import (
    Capabilities,
    LazyModule,
    NotConfigured,
    ProviderInfo,
    redact,
    redact_text,
    redact_url,
)
from flowcall.providers.openai_stream import streamed_completion
from flowcall.providers.retry import with_retries
from flowcall.providers.streamed import Shown

openai = LazyModule("openai")  # imported at the first call, not when the providers are listed
DASHSCOPE_COMPATIBLE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
DEFAULT_TIMEOUT_S = 60.0


def default_timeout_s() -> float:
    """How long one request may take: FLOWCALL_PROVIDER_TIMEOUT_S, else 60 s. A slow local
    server (llama.cpp on a CPU) may need more; a caller that would rather fail fast, less."""
    value = os.environ.get("FLOWCALL_PROVIDER_TIMEOUT_S", "").strip()
    if not value:
        return DEFAULT_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        raise ConfigError(
            f"FLOWCALL_PROVIDER_TIMEOUT_S must be a number of seconds between 0 and 3600, not {value!r}"
        )
    return seconds


NO_KEY = "not-needed"  # local servers ignore the key, but the SDK insists on one

FULL_CAPABILITIES = Capabilities(
    native_tools=True,
    tool_choice_modes=["auto", "required", "none", "named"],
    parallel_tool_calls=True,
    json_schema_output=True,
)


# ---------------------------------------------------------------- neutral -> wire


def message_to_wire(message: Message, tool_name: bool = False) -> dict[str, Any]:
    """One neutral message as a Chat Completions message; with `tool_name`, a tool result also
    carries the tool's name (DashScope's older Qwen models read it)."""
    if message.role == "tool":
        wire = {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content or ""}
        return {**wire, "name": message.name} if tool_name and message.name else wire
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            # "" not null: OpenAI takes either, llama.cpp's server rejects null with a 500
            "content": message.content or "",
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content or ""}


def tool_choice_to_wire(choice: str) -> str | dict[str, Any]:
    """ "auto"/"required"/"none" pass through; anything else names the one tool to call."""
    if choice in ("auto", "required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def build_request(request: ModelRequest, model: str) -> dict[str, Any]:
    """The keyword arguments for `chat.completions.create`, which are also the JSON body."""
    wire: dict[str, Any] = {"model": model, "messages": [message_to_wire(m) for m in request.messages]}
    if request.tools:
        wire["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
        wire["tool_choice"] = tool_choice_to_wire(request.tool_choice)
        wire["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None:
        fmt = request.response_format
        wire["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": fmt.name, "schema": fmt.json_schema, "strict": fmt.strict},
        }
    wire["temperature"] = request.temperature
    if request.seed is not None:
        wire["seed"] = request.seed
    if request.max_tokens is not None:
        wire["max_tokens"] = request.max_tokens
    return wire


# ---------------------------------------------------------------- wire -> neutral


def parse_tool_call(raw: dict[str, Any], index: int) -> ToolCall:
    """Arguments that are not a JSON object stay unparsed (arguments=None) with the raw text
    kept, so the engine can report PARSE_FAILED to the model instead of guessing."""
    function = raw.get("function") or {}
    text = function.get("arguments")
    if isinstance(text, dict):  # a few servers send an object instead of a JSON string
        return ToolCall(
            id=raw.get("id") or f"call_{index}",
            name=function.get("name") or "",
            arguments=text,
            raw_arguments=json.dumps(text, ensure_ascii=False),
        )
    text = text or ""
    arguments: dict[str, Any] | None
    if not text.strip():
        arguments = {}  # a call without arguments is sent as "" by some servers
    else:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        arguments = parsed if isinstance(parsed, dict) else None
    return ToolCall(
        id=raw.get("id") or f"call_{index}",
        name=function.get("name") or "",
        arguments=arguments,
        raw_arguments=text,
    )


def parse_response(data: dict[str, Any]) -> ModelTurn:
    """A Chat Completions response body as a ModelTurn (the first choice; we never ask for n>1)."""
    choices = data.get("choices") or []
    choice = choices[0] if choices else {}
    message = choice.get("message") or {}
    tool_calls = [parse_tool_call(tc, i) for i, tc in enumerate(message.get("tool_calls") or [])]
    content = message.get("content")
    usage = data.get("usage") or {}
    return ModelTurn(
        content=None if tool_calls and not content else content,  # some servers send "" beside calls
        tool_calls=tool_calls,
        finish_reason=choice.get("finish_reason"),
        usage=Usage(
            input_tokens=usage.get("prompt_tokens") or 0,
            output_tokens=usage.get("completion_tokens") or 0,
        ),
        wire_response=data,
        request_id=data.get("id"),
    )


def error_from_exception(
    exc: Exception, *, provider: str, model: str, base_url: str, no_key_reason: str | None = None
) -> ProviderError:
    """Map an SDK exception to a ProviderError: 429, 5xx and network trouble are transient.
    `base_url` must already be redacted (redact_url): the message is stored and shown."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        server_message = _server_message(exc).rstrip(". ")
        if status == 429 and exc.code == "insufficient_quota":  # out of credit: waiting won't help
            return ProviderError(
                f"{provider} says the account is out of quota: {server_message}. Check billing for this key.",
                code=ErrorCode.RATE_LIMITED,
                status=status,
                request_id=exc.request_id,
            )
        if status == 429:
            return ProviderError(
                f"{provider} rate limit hit for model '{model}': {server_message}",
                code=ErrorCode.RATE_LIMITED,
                transient=True,
                status=status,
                request_id=exc.request_id,
            )
        if status >= 500:
            return ProviderError(
                f"{provider} server error (HTTP {status}) at {base_url}: {server_message}",
                transient=True,
                status=status,
                request_id=exc.request_id,
            )
        return ProviderError(
            f"{provider} rejected the request (HTTP {status}): {server_message}. "
            + _hint(status, model, base_url, no_key_reason),
            status=status,
            request_id=exc.request_id,
        )
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(
            f"{provider} did not answer in time at {base_url}; a slow server needs a longer "
            f"FLOWCALL_PROVIDER_TIMEOUT_S (now {default_timeout_s():g} s)",
            transient=True,
        )
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError(
            f"could not reach {provider} at {base_url} ({redact_text(str(exc.__cause__ or exc))}); "
            "is the server running and the base URL right?",
            transient=True,
        )
    return ProviderError(f"{provider} call failed: {type(exc).__name__}: {redact_text(str(exc))}")


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return exc.message


def _hint(status: int, model: str, base_url: str, no_key_reason: str | None = None) -> str:
    if status in (401, 403) and no_key_reason:
        return f"No API key was sent: {no_key_reason}."
    if status in (401, 403):
        return f"Check the API key for {base_url} (is the right variable exported?)."
    if status == 404:
        return f"Check the model name '{model}' and the base URL {base_url} (it usually ends in /v1)."
    return f"Check the model name '{model}', the API key and the base URL {base_url}."


def _completion_data(response: Any, provider: str, base_url: str) -> tuple[dict[str, Any], str | None]:
    """The fields a chat completion's server sent, and its request id; a ProviderError naming
    what came instead when it is not a chat completion (an HTML page, JSON without choices):
    otherwise that would read as an empty answer, and the run would "succeed" with nothing."""
    if not hasattr(response, "model_dump"):  # the SDK hands over the text of a non-JSON answer
        text = " ".join(str(response).split())[:200]
        raise ProviderError(
            f"{provider} at {base_url} did not answer with a chat completion but with: {text!r}; "
            "is it an OpenAI-compatible server, and does the base URL end in /v1?"
        )
    data = response.model_dump(mode="json", exclude_unset=True)  # the fields the server sent
    if not data.get("choices"):
        text = json.dumps(data, ensure_ascii=False)[:200]
        raise ProviderError(
            f"{provider} at {base_url} answered with no choices, not a chat completion: {text}",
            request_id=data.get("id") if isinstance(data.get("id"), str) else None,
        )
    return data, getattr(response, "_request_id", None)


# ---------------------------------------------------------------- the provider


@functools.lru_cache(maxsize=16)
def _shared_client(base_url: str | None, api_key: str | None, timeout_s: float) -> openai.OpenAI:
    """One client per server, key and timeout in a process: making one loads the TLS trust store
    (~80 ms), which a worker would otherwise pay before every run; and a kept client keeps its
    connections alive. The client is safe to share between threads."""
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)


class OpenAICompatibleProvider:
    """Any server that speaks OpenAI Chat Completions."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        name: str = "openai-compatible",
        capabilities: Capabilities | None = None,
        timeout_s: float | None = None,
        client: Any = None,
        no_key_reason: str | None = None,
    ):
        self.model = model
        self.name = name
        self.no_key_reason = no_key_reason  # why a key that is set was not sent: told on a 401
        self.stream_options = True  # ask for the usage at a stream's end, until the server refuses
        self.capabilities = capabilities or FULL_CAPABILITIES.model_copy(deep=True)
        if client is None:
            try:
                client = _shared_client(base_url, api_key, timeout_s or default_timeout_s())
            except openai.OpenAIError as exc:
                raise ConfigError(
                    f"{name}: cannot create the OpenAI client ({exc}). Pass an API key, e.g. "
                    "export OPENAI_API_KEY=..."
                ) from exc
        self.client = client
        # what is recorded and shown: a base URL from the environment may hold user:password
        self.base_url = redact_url(str(getattr(client, "base_url", base_url) or "").rstrip("/")) or ""

    def complete(self, request: ModelRequest) -> ModelTurn:
        """One call; streamed while someone watches the run (its text is passed on as it comes),
        and recorded the same either way, but for `stream` in the request."""
        wire = build_request(request, self.model)
        if progress.watched():
            wire["stream"] = True
            if self.stream_options:
                wire["stream_options"] = {"include_usage": True}
        retries: list[dict[str, Any]] = []
        latency_ms, shown = 0.0, Shown()

        def attempt() -> tuple[dict[str, Any], str | None]:
            nonlocal latency_ms
            shown.again()
            started = time.perf_counter()
            try:
                return self._call(wire, shown.show)
            finally:
                latency_ms = (time.perf_counter() - started) * 1000

        try:
            data, request_id = with_retries(attempt, retries)
        except ProviderError as exc:  # so the failed step keeps what was sent and tried
            exc.details.update(wire_request={**redact(wire), "base_url": self.base_url}, retries=retries)
            raise
        turn = parse_response(data)
        turn.wire_request = {**redact(wire), "base_url": self.base_url}
        turn.request_id = request_id or turn.request_id
        turn.latency_ms = round(latency_ms, 1)
        turn.retries = retries
        return turn

    def _call(self, wire: dict[str, Any], show: Callable[[str], None]) -> tuple[dict[str, Any], str | None]:
        """One request: the completion's data and its request id, or a ProviderError. A
        streamed request that the server answers unstreamed is made again unstreamed."""
        create = self.client.chat.completions.create
        try:
            if wire.get("stream"):
                streamed = streamed_completion(create, wire, show, self.name, self.base_url)
                self.stream_options = self.stream_options and "stream_options" in wire
                if streamed is not None:
                    return streamed
                wire.pop("stream", None)
            response = create(**wire)
        except openai.OpenAIError as exc:
            raise error_from_exception(
                exc,
                provider=self.name,
                model=self.model,
                base_url=self.base_url,
                no_key_reason=self.no_key_reason,
            ) from exc
        except ValueError as exc:  # json.JSONDecodeError: a 200 whose JSON body is broken
            raise ProviderError(
                f"{self.name} at {self.base_url} answered with a body that is not valid JSON ({exc}); "
                "is it an OpenAI-compatible server, and does the base URL end in /v1?"
            ) from exc
        return _completion_data(response, self.name, self.base_url)


# ---------------------------------------------------------------- factories


def openai_provider(model: str, *, timeout_s: float | None = None) -> OpenAICompatibleProvider:
    """OpenAI itself: OPENAI_API_KEY, and OPENAI_BASE_URL if set (e.g. a proxy)."""
    key = os.environ.get(OPENAI.api_key_variable or "")
    if not key:
        raise NotConfigured(
            "OPENAI_API_KEY is not set. Export it (export OPENAI_API_KEY=sk-...) to use OpenAI models, "
            "or pick another provider (the embedded local model needs no key)."
        )
    return OpenAICompatibleProvider(
        model,
        base_url=OPENAI.configured_base_url(),
        api_key=key,
        name="openai",
        timeout_s=timeout_s,
    )


def dashscope_compatible_provider(model: str, *, timeout_s: float | None = None) -> OpenAICompatibleProvider:
    """Qwen on DashScope through its OpenAI-compatible endpoint (DASHSCOPE_API_KEY).
    Set DASHSCOPE_BASE_URL for another region, e.g. https://dashscope-intl.aliyuncs.com/compatible-mode/v1."""
    key = os.environ.get("DASHSCOPE_API_KEY")
    if not key:
        raise NotConfigured(
            "DASHSCOPE_API_KEY is not set. Export it (export DASHSCOPE_API_KEY=sk-...) to use Qwen on "
            "DashScope, or pick another provider (the embedded local model needs no key)."
        )
    capabilities = FULL_CAPABILITIES.model_copy(update={"tool_choice_modes": ["auto", "none", "named"]})
    return OpenAICompatibleProvider(
        model,
        base_url=os.environ.get("DASHSCOPE_BASE_URL") or DASHSCOPE_COMPATIBLE_BASE_URL,
        api_key=key,
        name="dashscope-compatible",
        capabilities=capabilities,
        timeout_s=timeout_s,
    )


def compatible_provider(
    model: str,
    base_url: str | None = None,
    *,
    capabilities: Capabilities | None = None,
    timeout_s: float | None = None,
) -> OpenAICompatibleProvider:
    """A local or self-hosted server (Ollama, LM Studio, vLLM, llama.cpp) at `base_url` (a
    flow's), else at OPENAI_COMPATIBLE_BASE_URL. OPENAI_COMPATIBLE_API_KEY is sent only to
    OPENAI_COMPATIBLE_BASE_URL: a flow file is shared, and a base_url in it must not be able to
    collect the key. Any other URL gets the placeholder (most local servers need no key)."""
    configured = config.compatible_base_url()
    base_url = base_url or configured
    if not base_url:
        raise NotConfigured(
            "an openai-compatible model needs a base URL: set base_url in the flow or export "
            "OPENAI_COMPATIBLE_BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama)"
        )
    key = os.environ.get("OPENAI_COMPATIBLE_API_KEY") or None
    no_key_reason = None
    if config.same_base_url(base_url, configured):
        # connect to the configured URL itself, so the key goes where the person put it, whatever
        # another URL parser would make of the flow's spelling
        base_url, api_key = configured, key or NO_KEY
    else:
        api_key = NO_KEY
        if key:
            no_key_reason = (
                "OPENAI_COMPATIBLE_API_KEY is sent only to OPENAI_COMPATIBLE_BASE_URL "
                f"({redact_url(configured) or 'not set'}), and this flow's base_url "
                f"{redact_url(base_url)} is another server; export OPENAI_COMPATIBLE_BASE_URL="
                "<this server's URL> if the key is meant for it"
            )
    return OpenAICompatibleProvider(
        model,
        base_url=base_url,
        api_key=api_key,
        capabilities=capabilities,
        timeout_s=timeout_s,
        no_key_reason=no_key_reason,
    )


# ---------------------------------------------------------------- what FlowCall knows of them

OPENAI = ProviderInfo(
    name="openai",
    label="OpenAI",
    hosted=True,
    factory=lambda config: openai_provider(config.model),
    description="OpenAI's models through its API",
    api_key_variable="OPENAI_API_KEY",
    base_url_variable="OPENAI_BASE_URL",  # e.g. a proxy; unset: OpenAI's own endpoint
    other_variables=("FLOWCALL_PROVIDER_TIMEOUT_S",),
    suggested_models=("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini"),
)


def _compatible(config: ModelConfig) -> OpenAICompatibleProvider:
    # no base_url in the flow: OPENAI_COMPATIBLE_BASE_URL (compatible_provider says if neither is set)
    return compatible_provider(config.model, config.base_url)


COMPATIBLE = ProviderInfo(
    name="openai-compatible",
    label="OpenAI-compatible server",
    hosted=True,
    factory=_compatible,
    description="any server that speaks OpenAI's chat completions: Ollama, LM Studio, vLLM, llama.cpp",
    api_key_variable="OPENAI_COMPATIBLE_API_KEY",
    base_url_variable=config.COMPATIBLE_BASE_URL_VARIABLE,  # consent (below) reads it too
    other_variables=("FLOWCALL_PROVIDER_TIMEOUT_S",),
    key_optional=True,
    flow_base_url=True,
)

INFOS = (OPENAI, COMPATIBLE)
