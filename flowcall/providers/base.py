"""The neutral provider interface: one job, turn a ModelRequest into a ModelTurn; and the factory
that builds a provider from a flow's model config."""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Iterable, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, Field

from flowcall.core.errors import ConfigError
from flowcall.core.messages import ModelRequest, ModelTurn
from flowcall.core.spec import _KEY_FORMATS, ModelConfig


class NotConfigured(ConfigError):
    """A provider needs a setting the environment lacks (an API key, a base URL); the message
    names the variable to set. The engine raises it before a run records anything (CLI exit 2).
    Here, beside Provider, so a provider module need not import the package that imports it."""


class Capabilities(BaseModel):
    """What the endpoint can do on the wire; `auto` chooses a calling way from this. How a
    model's decisions are tuned is apart: embedded_models.DecisionTuning."""

    native_tools: bool = False
    tool_choice_modes: list[str] = Field(default_factory=lambda: ["auto"])  # of auto, required, none, named
    parallel_tool_calls: bool = False
    json_schema_output: bool = False
    grammar: bool = False  # can constrain decoding with a grammar (local models)
    scoring: bool = False  # answers score_options requests (next-token log-probabilities)


class Provider(Protocol):
    """A provider may also carry its model's `tuning` (embedded_models.DecisionTuning): the
    embedded models do, and a probed remote model's says why `auto` starts where it does
    (providers/profiled.py). Without one the calling ways use no tuning."""

    name: str
    model: str
    capabilities: Capabilities

    def complete(self, request: ModelRequest) -> ModelTurn:
        """One model call. Raises ProviderError (with `transient` set) on failure."""
        ...


# builds the provider a flow's model config names: providers.provider_for, or a stand-in (tests, replay)
ProviderFactory = Callable[[ModelConfig], Provider]


SECRET_FIELDS = ("api_key", "authorization", "Authorization", "x-api-key")


def redact(payload: dict[str, Any]) -> dict[str, Any]:
    """A copy of a wire payload with anything key-like blanked out, safe to store."""
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if key in SECRET_FIELDS:
            out[key] = "***"
        elif isinstance(value, dict):
            out[key] = redact(value)
        else:
            out[key] = value
    return out


# query parameters that carry a credential (…?key=…, ?access_token=…, ?sig=…)
_SECRET_PARAM = re.compile(
    r"(key|token|secret|passw|pwd|auth|sig|signature|credential|session)", re.IGNORECASE
)
_USERINFO = re.compile(r"(?<=://)[^/?#\s@]*@")


def redact_url(url: str | None) -> str | None:
    """A URL safe to record or show: user:password@ dropped, credential-like query values
    replaced by ***. A base URL from the environment may carry either."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:  # unparsable: at least drop anything before an @
        return _USERINFO.sub("", url)
    netloc = parts.netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, "***" if _SECRET_PARAM.search(k) and v else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_text(text: str) -> str:
    """Drop user:password@ from every URL in a message (an exception's text may quote one)."""
    return _USERINFO.sub("", text)


def redact_secrets(text: str, variables: Iterable[str] = ()) -> str:
    """`text` (a tool's error) safe to store and show: redact_text, then each named environment
    variable's value replaced by "[redacted $NAME]" (as it is, trimmed, as Python quotes it in
    an error, and each long piece of it), and anything in the format of a key by "[redacted key]"."""
    text = redact_text(text)
    for name in variables:
        for form in _forms(os.environ.get(name, "")):
            text = text.replace(form, f"[redacted ${name}]")
    return _KEY_FORMATS.sub("[redacted key]", text)


def _forms(value: str) -> list[str]:
    """The ways a value shows up in an exception's text, longest first; none too short to mean it."""
    forms = {value, value.strip(), repr(value)[1:-1], repr(value.encode("utf-8", "replace"))[2:-1]}
    forms |= {piece for piece in re.split(r"[\s\x00-\x1f\x7f]+", value) if len(piece) >= 8}
    return sorted((f for f in forms if len(f) >= 4), key=len, reverse=True)
