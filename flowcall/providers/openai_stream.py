"""A streamed Chat Completions call, for the OpenAI-compatible provider (openai_compat.py): the
content passed on piece by piece as the server sends it, the chunks put back together as the
completion the same request answers unstreamed (streamed.py), so the recorded step is the same.

The request itself fails as an unstreamed one does (the SDK raises before the first chunk, and
the provider maps the error and retries what is transient). A stream that breaks off after it
began is a transient ProviderError of its own: the call is made again, and the watcher is told
to drop the text it had (progress.restart, in the provider).
"""

from __future__ import annotations

from typing import Any, Callable

from flowcall.core.errors import ProviderError
from flowcall.providers.base import LazyModule, redact_text
from flowcall.providers.streamed import completion_from_chunks, finish_reason

openai = LazyModule("openai")  # imported at the first call (openai_compat.py)


def streamed_completion(
    create: Callable[..., Any],
    wire: dict[str, Any],
    show: Callable[[str], None],
    provider: str,
    base_url: str,
) -> tuple[dict[str, Any], str | None] | None:
    """The completion's data and request id, from a request with `stream` in `wire`. A server
    that rejects stream_options (HTTP 400 or 422) is asked again without it; if that works, it
    is taken out of `wire` (so the record says what was sent). None when the server answered with no
    chunk at all (it ignores `stream`): then the request is to be made unstreamed."""
    try:
        stream = create(**wire)
    except openai.APIStatusError as exc:
        if exc.status_code not in (400, 422) or "stream_options" not in wire:
            raise
        try:  # a server that knows no stream_options (it then may send no usage)
            stream = create(**{key: value for key, value in wire.items() if key != "stream_options"})
        except openai.APIStatusError:
            raise exc from None  # refused without it too: the error of the request as recorded
        del wire["stream_options"]
    chunks = read_stream(stream, show, provider, base_url)
    if not chunks:
        wire.pop("stream_options", None)
        return None
    data = completion_from_chunks(chunks)
    if finish_reason(data) is None:
        raise ProviderError(
            f"the stream from {provider} at {base_url} ended before the model finished (no finish "
            "reason came)",
            transient=True,
            request_id=data.get("id") if isinstance(data.get("id"), str) else None,
        )
    return data, stream.response.headers.get("x-request-id")


def read_stream(
    stream: Any, show: Callable[[str], None], provider: str, base_url: str
) -> list[dict[str, Any]]:
    """The chunks of a streamed chat completion as the server sent them, the first choice's
    content shown piece by piece (tool calls' arguments are not shown). A stream that breaks
    off, or carries an error, is a transient ProviderError saying how far it came."""
    chunks: list[dict[str, Any]] = []
    written = 0
    try:
        for chunk in stream:
            data = chunk.model_dump(mode="json", exclude_unset=True)
            chunks.append(data)
            for choice in data.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") if choice.get("index", 0) == 0 else None
                if isinstance(piece, str) and piece:
                    written += len(piece)
                    show(piece)
    except (openai.OpenAIError, ValueError) as exc:
        raise _broken_off(exc, provider, base_url, len(chunks), written) from exc
    finally:
        stream.close()
    return chunks


def _broken_off(exc: Exception, provider: str, base_url: str, chunks: int, written: int) -> ProviderError:
    """What a stream that stopped halfway says: an error the server sent in it (its message), a
    connection that broke off or timed out (these are worth trying again), or a chunk that is
    not JSON."""
    if type(exc) is openai.APIError:  # an error event in the stream: the server's own message
        why = f"it sent an error: {redact_text(exc.message)}"
    elif isinstance(exc, openai.APITimeoutError):
        why = "it stopped sending (timed out)"
    elif isinstance(exc, ValueError):
        why = f"it sent a chunk that is not JSON ({exc})"
    else:
        cause = exc.__cause__ or exc
        why = f"the connection broke off ({type(cause).__name__}: {redact_text(str(cause))})"
    return ProviderError(
        f"{provider} at {base_url} stopped in the middle of its answer, after {chunks} chunks "
        f"({written} characters of text): {why}",
        transient=not isinstance(exc, ValueError),  # a chunk that is no JSON comes again
    )
