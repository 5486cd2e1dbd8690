"""DashScope's native protocol through its SDK (`dashscope.Generation.call`).

Unlike the OpenAI SDK, DashScope does not raise on HTTP errors: it returns a response with
`status_code != 200` and `code`/`message`, so the error mapping reads those fields. Network
failures do raise (the SDK uses `requests`). The conversions are pure functions so they can be
tested against recorded payloads; `call` is injectable so tests need no network.

While someone watches the run, the call is streamed (`stream=True, incremental_output=True`):
its text is shown as it comes, and the chunks are put together as the response the same call
answers unstreamed (streamed.py), so the step recorded is the same.

Its base URL is DASHSCOPE_HTTP_BASE_URL (the native API, e.g. https://dashscope-intl.aliyuncs.com/api/v1
for the international region), the SDK's own variable: `build` reads it when the provider is built
and passes it on. DASHSCOPE_BASE_URL is the OpenAI-compatible mode's (.../compatible-mode/v1,
openai_compat.dashscope_compatible_provider); set alone, it is refused here rather than ignored, so
a person who meant another region is told instead of being sent to the default one.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Literal

from flowcall.core import progress
from flowcall.core.errors import ErrorCode, ProviderError
from flowcall.core.messages import ModelRequest, ModelTurn, Usage
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
from flowcall.providers.openai_compat import (
    default_timeout_s,
    message_to_wire,
    parse_tool_call,
    tool_choice_to_wire,
)
from flowcall.providers.retry import with_retries
from flowcall.providers.streamed import Shown, dashscope_from_chunks, finish_reason

# imported at the first call, not when the providers are listed (the SDK takes half a second)
dashscope = LazyModule("dashscope")
sdk_errors = LazyModule("dashscope.common.error")
requests = LazyModule("requests")

StructuredMode = Literal["json_schema", "json_object"]

CAPABILITIES = Capabilities(
    native_tools=True,
    tool_choice_modes=["auto", "none", "named"],  # DashScope documents no "required"
    parallel_tool_calls=True,
    json_schema_output=True,  # json_schema mode: only some qwen-plus/max models; else use json_object
)


# ---------------------------------------------------------------- neutral -> wire


def build_request(
    request: ModelRequest, model: str, structured: StructuredMode = "json_schema"
) -> dict[str, Any]:
    """The keyword arguments for `dashscope.Generation.call` (secrets are added at call time).

    In json_object mode DashScope only guarantees JSON, not the schema, and demands the word
    "JSON" in the prompt, so the schema is appended as a system message."""
    messages = [message_to_wire(m, tool_name=True) for m in request.messages]
    wire: dict[str, Any] = {"model": model, "messages": messages, "result_format": "message"}
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
    fmt = request.response_format
    if fmt is not None and structured == "json_schema":
        wire["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": fmt.name, "schema": fmt.json_schema, "strict": fmt.strict},
        }
    elif fmt is not None:
        wire["response_format"] = {"type": "json_object"}
        schema = json.dumps(fmt.json_schema, ensure_ascii=False)
        note = f"Answer with one JSON object valid against this JSON Schema: {schema}"
        messages.append({"role": "system", "content": note})
    wire["temperature"] = request.temperature
    if request.seed is not None:
        wire["seed"] = request.seed
    if request.max_tokens is not None:
        wire["max_tokens"] = request.max_tokens
    return wire


# ---------------------------------------------------------------- wire -> neutral


def response_to_dict(response: Any) -> dict[str, Any]:
    """A GenerationResponse (a dict subclass) as plain JSON data, without the HTTP headers."""
    data = {k: v for k, v in dict(response).items() if k != "headers"}
    return json.loads(json.dumps(data, ensure_ascii=False, default=str))


def parse_response(data: dict[str, Any]) -> ModelTurn:
    """A successful DashScope response (result_format="message") as a ModelTurn."""
    output = data.get("output") or {}
    choices = output.get("choices") or []
    choice = choices[0] if choices else {}
    message = choice.get("message") or {}
    content = message.get("content") if choices else output.get("text")
    if isinstance(content, list):  # multimodal-style content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    tool_calls = [parse_tool_call(tc, i) for i, tc in enumerate(message.get("tool_calls") or [])]
    usage = data.get("usage") or {}
    return ModelTurn(
        content=None if tool_calls and not content else content,  # DashScope sends "" beside calls
        tool_calls=tool_calls,
        finish_reason=choice.get("finish_reason") or output.get("finish_reason"),
        usage=Usage(
            input_tokens=usage.get("input_tokens") or 0, output_tokens=usage.get("output_tokens") or 0
        ),
        wire_response=data,
        request_id=data.get("request_id") or None,
    )


def error_from_response(data: dict[str, Any], *, model: str) -> ProviderError:
    """Map a non-200 DashScope response: 429 or Throttling* is a transient RATE_LIMITED,
    5xx a transient PROVIDER_ERROR, anything else a PROVIDER_ERROR naming code and message."""
    status = int(data.get("status_code") or 0)
    code = str(data.get("code") or "")
    text = str(data.get("message") or "").rstrip(". ")
    request_id = data.get("request_id") or None
    if status == 429 or code.startswith("Throttling"):
        return ProviderError(
            f"DashScope rate limit for model '{model}' ({code}): {text}",
            code=ErrorCode.RATE_LIMITED,
            transient=True,
            status=status,
            request_id=request_id,
        )
    if status >= 500:
        return ProviderError(
            f"DashScope server error (HTTP {status}, {code}): {text}",
            transient=True,
            status=status,
            request_id=request_id,
        )
    if status in (401, 403) or code == "InvalidApiKey":
        hint = "Check DASHSCOPE_API_KEY and that it belongs to this region's endpoint."
    else:
        hint = f"Check the model name '{model}' and the request parameters."
    return ProviderError(
        f"DashScope rejected the request (HTTP {status}, {code}): {text}. {hint}",
        status=status,
        request_id=request_id,
    )


# ---------------------------------------------------------------- the provider


class DashScopeProvider:
    """Qwen (and other Model Studio models) through the native DashScope SDK."""

    name = "dashscope"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        base_url: str | None = None,
        structured: StructuredMode = "json_schema",
        call: Callable[..., Any] | None = None,
    ):
        key = api_key or os.environ.get(INFO.api_key_variable or "")
        if not key:
            raise NotConfigured(
                "DASHSCOPE_API_KEY is not set. Export it (export DASHSCOPE_API_KEY=sk-...) to use Qwen on "
                "DashScope, or pick another provider (the embedded local model needs no key)."
            )
        self.model = model
        self.capabilities = CAPABILITIES.model_copy(deep=True)
        self.structured = structured
        self.timeout_s = timeout_s
        self.base_url = base_url
        self._api_key = key
        self._call = call or dashscope.Generation.call

    def complete(self, request: ModelRequest) -> ModelTurn:
        """One call; streamed while someone watches the run (its text is passed on as it comes),
        and recorded the same either way, but for `stream` and `incremental_output`."""
        wire = build_request(request, self.model, self.structured)
        if progress.watched():
            wire.update(stream=True, incremental_output=True)
        extra: dict[str, Any] = {"api_key": self._api_key, "request_timeout": self.timeout_s}
        if self.base_url:
            extra["base_address"] = self.base_url
        # recorded and shown without user:password (the base URL may hold them)
        recorded = {**redact(wire), "base_url": redact_url(self.base_url or dashscope.base_http_api_url)}
        retries: list[dict[str, Any]] = []
        latency_ms, shown = 0.0, Shown()

        def attempt() -> dict[str, Any]:
            nonlocal latency_ms
            shown.again()
            started = time.perf_counter()
            try:
                return self._request({**wire, **extra}, shown.show, recorded["base_url"])
            finally:
                latency_ms = (time.perf_counter() - started) * 1000

        try:
            data = with_retries(attempt, retries)
        except ProviderError as exc:
            exc.details.update(wire_request=recorded, retries=retries)  # so the failed step keeps them
            raise
        turn = parse_response(data)
        turn.wire_request = recorded
        turn.latency_ms = round(latency_ms, 1)
        turn.retries = retries
        return turn

    def _request(
        self, arguments: dict[str, Any], show: Callable[[str], None], base_url: str
    ) -> dict[str, Any]:
        """One request: the response's data (put together from its chunks when streamed), or a
        ProviderError: the SDK's network errors are transient, a non-200 answer is mapped."""
        try:
            if arguments.get("stream"):
                data = self._streamed(arguments, show, base_url)
            else:
                data = response_to_dict(self._call(**arguments))
        except (requests.exceptions.RequestException, sdk_errors.TimeoutException) as exc:
            raise ProviderError(
                f"could not reach DashScope at {base_url} ({redact_text(str(exc))})", transient=True
            ) from exc
        except sdk_errors.DashScopeException as exc:
            message = f"the DashScope SDK refused the call: {type(exc).__name__}: {redact_text(str(exc))}"
            raise ProviderError(message) from exc
        if data.get("status_code") != 200:
            raise error_from_response(data, model=self.model)
        return data

    def _streamed(
        self, arguments: dict[str, Any], show: Callable[[str], None], base_url: str
    ) -> dict[str, Any]:
        """A streamed request (the SDK sends the request when its generator is first read): each
        piece of text shown as it comes, the chunks put together as the unstreamed response
        (streamed.py). A first answer that is an error is returned as it is, to be mapped as an
        unstreamed one; an error or a broken connection after the first chunk is a ProviderError
        saying how far the stream came (transient when trying again may help)."""
        chunks: list[dict[str, Any]] = []
        written = 0
        try:
            for response in self._call(**arguments):
                data = response_to_dict(response)
                if data.get("status_code") != 200:
                    if not chunks:
                        return data
                    raise _stopped(error_from_response(data, model=self.model), len(chunks), written)
                chunks.append(data)
                piece = chunk_text(data)
                written += len(piece)
                show(piece)
        except (requests.exceptions.RequestException, sdk_errors.TimeoutException) as exc:
            if not chunks:
                raise
            broken = ProviderError(f"the connection broke off ({redact_text(str(exc))})", transient=True)
            raise _stopped(broken, len(chunks), written) from exc
        if not chunks:
            raise ProviderError(
                f"DashScope at {base_url} answered a streamed request with no chunk", transient=True
            )
        data = dashscope_from_chunks(chunks)
        if finish_reason(data) is None:
            raise _stopped(ProviderError("no finish reason came", transient=True), len(chunks), written)
        return data


def chunk_text(data: dict[str, Any]) -> str:
    """The text one incremental chunk adds (result_format="message")."""
    choices = (data.get("output") or {}).get("choices") or [{}]
    content = (choices[0].get("message") or {}).get("content")
    return content if isinstance(content, str) else ""


def _stopped(error: ProviderError, chunks: int, written: int) -> ProviderError:
    """`error`, said of a stream that stopped after `chunks` chunks."""
    return ProviderError(
        f"DashScope stopped in the middle of its answer, after {chunks} chunks ({written} characters "
        f"of text): {error.message}",
        code=error.code,
        transient=error.transient,
        status=error.status,
        request_id=error.request_id,
    )


# ---------------------------------------------------------------- what FlowCall knows of it

COMPATIBLE_MODE_VARIABLE = "DASHSCOPE_BASE_URL"  # the OpenAI-compatible mode's, not this provider's


def build(config: ModelConfig) -> DashScopeProvider:
    """The provider for a flow's model: its base URL from DASHSCOPE_HTTP_BASE_URL, else the SDK's
    default endpoint (Beijing)."""
    base_url = INFO.configured_base_url()
    if base_url is None and os.environ.get(COMPATIBLE_MODE_VARIABLE, "").strip():
        raise NotConfigured(
            f"{COMPATIBLE_MODE_VARIABLE} is set, but provider dashscope reads {INFO.base_url_variable}, "
            f"the native API's base URL, ending in /api/v1 ({COMPATIBLE_MODE_VARIABLE} is for DashScope's "
            "OpenAI-compatible mode, .../compatible-mode/v1). Export the region you mean, e.g. "
            f"export {INFO.base_url_variable}=https://dashscope-intl.aliyuncs.com/api/v1, or unset "
            f"{COMPATIBLE_MODE_VARIABLE} to use the default endpoint."
        )
    return DashScopeProvider(config.model, base_url=base_url, timeout_s=default_timeout_s())


INFO = ProviderInfo(
    name="dashscope",
    label="DashScope (Qwen)",
    hosted=True,
    factory=build,
    description="Qwen and other Model Studio models through DashScope's native API",
    api_key_variable="DASHSCOPE_API_KEY",
    base_url_variable="DASHSCOPE_HTTP_BASE_URL",  # the SDK's own name for it; unset: the default region
    other_variables=("FLOWCALL_PROVIDER_TIMEOUT_S",),
    suggested_models=("qwen-plus", "qwen-max", "qwen-turbo"),
)
INFOS = (INFO,)
