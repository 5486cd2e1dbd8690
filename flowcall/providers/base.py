"""The neutral provider interface: one job, turn a ModelRequest into a ModelTurn; the factory
that builds a provider from a flow's model config; and ProviderInfo, what each provider module
declares of itself (the tables of the studio, the CLI and the configuration are read from it)."""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterable, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, Field

from flowcall.core.errors import ConfigError
from flowcall.core.messages import ModelRequest, ModelTurn
from flowcall.core.spec import _KEY_FORMATS, PROVIDER_NAME, ModelConfig
from flowcall.trust.packages import PackageOrigin


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


@dataclass(frozen=True)
class ProviderInfo:
    """What FlowCall knows of a provider, declared once, in the provider's own module (its
    `INFOS`), or by an installed package (entry point group `flowcall.providers`, naming one).
    `provider_for`, the studio's pickers, the Models page and the configuration read it."""

    name: str  # as a flow names it (ModelConfig.provider): lower case, digits, '-', '_'
    label: str  # as a person reads it ("OpenAI", "Embedded model")
    hosted: bool  # the model runs elsewhere: building it needs a setting (a key, a base URL)
    factory: Callable[[ModelConfig], Provider]  # builds it for a flow's model config
    description: str = ""  # one line for the Models page
    api_key_variable: str | None = None  # its key, read from the environment only
    base_url_variable: str | None = None  # where its key may be sent (the only place)
    other_variables: tuple[str, ...] = ()  # other settings it reads
    suggested_models: tuple[str, ...] = ()  # offered in the studio's model picker, the first by default
    key_optional: bool = False  # most servers of its kind need no key
    flow_base_url: bool = False  # a flow may name its own server (its key is never sent there)
    listed: bool = True  # offered in the studio and the Models page (not a stand-in for tests)
    package: PackageOrigin | None = None  # set for an installed package's provider: it needs a grant

    def __post_init__(self) -> None:
        if not re.fullmatch(PROVIDER_NAME, self.name):
            raise ValueError(
                f"a provider's name is lower-case letters, digits, '-' and '_' (at most 40, starting "
                f"with a letter), not {self.name!r}"
            )

    def configured_base_url(self) -> str | None:
        """The base URL the person set for this provider in the environment, or None."""
        value = os.environ.get(self.base_url_variable, "").strip() if self.base_url_variable else ""
        return value or None

    def variables(self) -> tuple[str, ...]:
        """Every environment variable it reads: key, base URL, the others."""
        named = (self.api_key_variable, self.base_url_variable, *self.other_variables)
        return tuple(v for v in named if v)


class LazyModule(ModuleType):
    """A module imported when one of its names is first used. A provider module reads as if it
    imported its SDK (`openai = LazyModule("openai")`, then `openai.OpenAI(...)`), yet reading
    its INFOS loads no SDK: openai and dashscope take half a second each to import, and a flow
    on the embedded model needs neither."""

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attribute)


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
