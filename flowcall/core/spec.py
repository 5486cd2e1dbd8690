"""The flow: pydantic models that are also the JSON export format.

A flow file never holds an API key: providers read keys from the environment, and a
flow that carries one is refused on load.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlsplit

import jsonschema
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from flowcall.core import nesting
from flowcall.core.errors import ConfigError
from flowcall.core.plain_errors import plain_errors, shown_value
from flowcall.core.schemas import check_refs

FORMAT_VERSION = "flowcall.flow/v1"
SOURCE_NAME = r"^[a-z0-9][a-z0-9_-]{0,39}$"  # a source's name: its tools' namespace
SOURCE_KIND = r"^[a-z][a-z0-9_-]{0,19}$"
CallingWayName = Literal["auto", "native", "prompt", "schema", "router"]
# a provider's name: built in (flowcall/providers) or installed by a package, so any such name is
# valid here; building the model says when no provider of that name is installed (provider_for)
PROVIDER_NAME = r"^[a-z][a-z0-9_-]{0,39}$"
ProviderName = Annotated[str, Field(pattern=PROVIDER_NAME)]

# --- the secret check (parse_flow): a flow file is shared, so it must never hold a credential.
# An MCP server's env value "$NAME" is a reference, read from the environment when it starts.
_ENV_REFERENCE = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")  # used with fullmatch
# an HTTP source's header value: a reference, possibly after an auth scheme ("Bearer $API_TOKEN")
_HEADER_REFERENCE = re.compile(r"(?:(?:Bearer|Basic|Token|Bot) )?\$([A-Za-z_][A-Za-z0-9_]*)")  # fullmatch
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}")  # an HTTP token (RFC 9110)
# headers that say how the message is framed or where it goes: not the flow's to set
_FRAMING_HEADERS = {
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
}
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")  # GITHUB_TOKEN, apiKey, X-Api-Key
# a whole word of a name that says its value is a credential
_SECRET_WORDS = frozenset(
    {
        "key",
        "keys",
        "token",
        "pass",
        "pwd",
        "pat",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "authorization",
        "cookie",
        "cookies",
        "bearer",
        "apikey",
        "privatekey",
    }
)
# ... or part of a word (glued names: DBPASSWORD, accesstoken, OPENAIAPIKEY)
_SECRET_PARTS = (
    "password",
    "passwd",
    "secret",
    "apikey",
    "accesskey",
    "privatekey",
    "authorization",
    "cookie",
    "credential",
)
# a last word that makes the name about the secret, not the secret: DB_PASSWORD_FILE is a path
# (the Docker convention), TOKEN_URL an endpoint, TOKEN_TTL a duration, max_tokens a count
_ABOUT_WORDS = frozenset(
    {
        "file",
        "path",
        "dir",
        "url",
        "uri",
        "endpoint",
        "name",
        "type",
        "mode",
        "ttl",
        "timeout",
        "expiry",
        "expires",
        "limit",
        "count",
        "size",
        "length",
        "tokens",
    }
)
_HARMLESS_VALUES = frozenset({"", "true", "false", "yes", "no", "on", "off", "none", "null", "0", "1"})

# values that are credentials whatever their name: well-known key formats ...
_KEY_FORMATS = re.compile(
    # OpenAI & co
    r"(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-|ant-)?(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}"
    r"|(?<![A-Za-z0-9])[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"  # AWS access key id
    r"|(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}"  # Google
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # a JWT
    r"|-----BEGIN[A-Z ]*PRIVATE KEY( BLOCK)?-----"  # PEM
)
# ... a long random run (no '/' or '.': paths, model names and tool refs split there) ...
_LONG_RUN = re.compile(r"[A-Za-z0-9+=_-]{32,}")
_HEX = re.compile(r"[0-9a-fA-F]+")
_DIGEST_LENGTHS = (40, 64, 128)  # SHA-1 (git commits), SHA-256, SHA-512: pins, not keys
# ... and URLs with a password or a key in them
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")


class ModelConfig(BaseModel):
    """Which model, where, and how it is prompted."""

    model_config = ConfigDict(extra="forbid")

    provider: ProviderName = "local"
    # for provider local, "embedded": whichever embedded model this machine runs (FLOWCALL_MODEL)
    model: str = "embedded"
    base_url: str | None = Field(
        default=None, description="Only for openai-compatible servers (Ollama, vLLM, ...)."
    )
    system_prompt: str = ""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1024, ge=1, le=32768)


class DecisionConfig(ModelConfig):
    calling_way: CallingWayName = "auto"


class RouterRule(BaseModel):
    """For the router way: a message matching `pattern` (a regex) goes to `tool`."""

    model_config = ConfigDict(extra="forbid")

    pattern: str
    tool: str

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"pattern {pattern!r} is not a valid regular expression: {exc}") from exc
        return pattern


class PolishConfig(ModelConfig):
    output_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema: the final answer must be JSON valid against it."
    )

    @field_validator("output_schema")
    @classmethod
    def _schema_is_valid(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"output_schema is not a valid JSON Schema: {exc.message}") from exc
            check_refs(schema)  # the answers are checked against it: nothing may be fetched for that
        return schema


class MCPServerConfig(BaseModel):
    """An MCP server whose tools a flow attaches as `<name>/mcp/<tool>`: a stdio command or a
    streamable HTTP URL. `env` values that start with `$` are read from the environment when
    the server starts, so a flow file never holds a key."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SOURCE_NAME, description="Lowercase; the tools' namespace.")
    command: list[str] | None = Field(default=None, min_length=1, description="argv of a stdio server.")
    url: str | None = Field(default=None, pattern=r"^https?://", description="A streamable HTTP endpoint.")
    env: dict[str, str] = Field(default_factory=dict)
    trusted: bool = Field(default=False, description="Run its tools without asking a person.")
    startup_timeout_s: float = Field(default=30.0, gt=0, le=300)
    call_timeout_s: float = Field(default=30.0, gt=0, le=600)

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                f"MCP server '{self.name}' needs exactly one of command (stdio) or url (streamable HTTP)"
            )
        return self

    def describe(self) -> str:
        return " ".join(self.command) if self.command else str(self.url)

    def target(self) -> Any:
        """What the SDK's Client connects to."""
        if self.url:
            return self.url
        from mcp import StdioServerParameters

        # merged by the SDK over a small safe environment: the parent's keys are not handed on
        env = {k: os.environ.get(v[1:], "") if v.startswith("$") else v for k, v in self.env.items()}
        return StdioServerParameters(command=self.command[0], args=self.command[1:], env=env or None)


class HTTPToolSource(BaseModel):
    """The operations of an OpenAPI 3 document as tools, attached as `<name>/http/<operationId>`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SOURCE_NAME, description="Lowercase; the tools' namespace.")
    openapi: str = Field(min_length=1, description="A file path or an http(s) URL of the document.")
    base_url: str | None = Field(
        default=None, pattern=r"^https?://", description="Overrides the document's servers."
    )
    operations: list[str] | None = Field(default=None, description="Only these operationIds (default: all).")
    allow_hosts: list[str] = Field(
        default_factory=list, description="Hosts allowed although they are internal (loopback, private...)."
    )
    timeout_s: float = Field(default=15.0, gt=0, le=300)
    max_response_bytes: int = Field(default=1_000_000, gt=0, le=50_000_000)
    headers: dict[str, str] = Field(
        default_factory=dict,
        max_length=20,
        description=(
            "Sent with every request. A secret is written as a reference, $NAME or 'Bearer $NAME', read "
            "from the environment when the request is made."
        ),
    )

    @field_validator("headers")
    @classmethod
    def _headers_are_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        for name, value in headers.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(
                    f"header {name!r} is not a header name: use letters, digits and - (e.g. X-Api-Key)"
                )
            if name.lower() in _FRAMING_HEADERS:
                raise ValueError(
                    f"header {name!r} says how a request is framed or routed, which is not the flow's "
                    "to set: remove it"
                )
            if any(c in value for c in "\r\n\0") or len(value) > 4096:
                raise ValueError(f"header {name!r}: a value is one line of at most 4096 characters")
        return headers

    @model_serializer(mode="wrap")
    def _no_empty_headers(self, handler: Any) -> dict[str, Any]:
        # a source without headers dumps as before they existed: saved flows keep their hash
        data = handler(self)
        if not self.headers:
            data.pop("headers", None)
        return data

    def resolved_headers(self) -> dict[str, str]:
        """The headers as sent: each reference read from the environment now. A variable that is
        not set, or whose value is not one clean line, is an error that names it, never quotes it
        (the HTTP library's own error would: it is stored in the step and shown to the model)."""
        resolved = {}
        for name, value in self.headers.items():
            match = _HEADER_REFERENCE.fullmatch(value)
            if match:
                variable = match.group(1)
                if variable not in os.environ:
                    raise ConfigError(
                        f"HTTP tools '{self.name}': header {name} reads ${variable}, which is not set "
                        f"in the environment; set {variable} where FlowCall runs"
                    )
                secret = os.environ[variable]
                if problem := _header_value_problem(secret):
                    raise ConfigError(
                        f"HTTP tools '{self.name}': header {name} reads ${variable}, whose value {problem}, "
                        f"so it is not sent; set {variable} again without it (a key pasted with its "
                        "line end is the usual cause)"
                    )
                value = value[: match.start(1) - 1] + secret
            resolved[name] = value
        return resolved

    def secret_variables(self) -> list[str]:
        """The environment variables the headers read: their values never go into an error."""
        return [m.group(1) for v in self.headers.values() if (m := _HEADER_REFERENCE.fullmatch(v))]


def _header_value_problem(value: str) -> str | None:
    """Why a value read from the environment cannot be a header value, in words that do not quote it."""
    if not value:
        return "is empty"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "holds a line break or another control character"
    if value != value.strip(" "):
        return "starts or ends with a space"
    if not value.isascii():
        return "holds a character that is not plain ASCII"
    return None


Coordinate = Annotated[float, Field(ge=-1e6, le=1e6, allow_inf_nan=False)]


class FlowLayout(BaseModel):
    """Where the studio's canvas draws each node, and the tools left on it unconnected. The
    engine never reads it, and a change to it alone makes no new version of the flow."""

    model_config = ConfigDict(extra="forbid")

    positions: dict[Annotated[str, Field(max_length=300)], tuple[Coordinate, Coordinate]] = Field(
        default_factory=dict, max_length=1000
    )
    parked: list[Annotated[str, Field(max_length=300)]] = Field(default_factory=list, max_length=200)


class Flow(BaseModel):
    """question -> decision model -> tools (looped) -> polish model -> answer."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["flowcall.flow/v1"] = FORMAT_VERSION
    # no space or dot at either end: "weather " or "weather." would read as the saved "weather"
    name: str = Field(min_length=1, max_length=120, pattern=r"^[\w\-. ]+$")
    description: str = ""
    decision: DecisionConfig = Field(default_factory=DecisionConfig)
    tools: list[str] = Field(
        default_factory=list, description="Tool references: a namespaced version or a name."
    )
    tool_choice: str = Field(default="auto", description="auto, required, none, or a tool name.")
    parallel_tool_calls: bool = True
    max_rounds: int = Field(default=4, ge=1, le=50)
    retry_budget: int = Field(
        default=2, ge=0, le=10, description="How many wrong calls the model may correct."
    )
    tool_timeout_s: float = Field(default=30.0, gt=0, le=600)
    router_rules: list[RouterRule] = Field(
        default_factory=list, description="Intent rules for the router way."
    )
    mcp_servers: list[MCPServerConfig] = Field(
        default_factory=list, description="MCP servers whose tools it attaches."
    )
    http_tools: list[HTTPToolSource] = Field(
        default_factory=list, description="OpenAPI documents whose operations it attaches."
    )
    sources: dict[Annotated[str, Field(pattern=SOURCE_KIND)], list[dict[str, Any]]] = Field(
        default_factory=dict,
        max_length=20,
        description="Tool sources of other kinds, by kind (flow: another flow as a tool; an "
        "installed package's kind): each is an object with at least a name, its tools' namespace.",
    )
    needs_approval: list[str] = Field(
        default_factory=list,
        description="Tools whose calls wait for a person, "
        "besides destructive ones and those of untrusted MCP servers.",
    )
    polish: PolishConfig | None = None
    conversation: bool = Field(
        default=False,
        description="A chat client (the HTTP API's chat completions) "
        "may send the earlier messages of its conversation; the decision model reads them "
        "before the question. Off: only the last user message is read.",
    )
    answers_without_tools: bool = Field(
        default=False,
        description="An answer that no tool result backs is a plain success (small talk, a flow "
        "whose tools are optional). Off: such a run ends as answered_without_tools, shown amber.",
    )
    # kept with the flow (its file and its row) but out of its spec and hash: see FlowLayout
    layout: FlowLayout | None = Field(default=None, exclude=True)

    # The engine, the calling ways and the model all know a tool by its bare name (read_csv), so a
    # rule or a tool_choice that names an attached tool by its version (data/v1/read_csv) is
    # stored as that name: every consumer sees one form, and dumping a loaded flow is stable.
    # needs_approval keeps what was written: approval and the studio match a name or a version.
    def _attached_name(self, ref: str) -> str | None:
        """The bare name of the attached tool that `ref` names (its name or its version), or None."""
        for attached in self.tools:
            if attached == ref or attached.endswith("/" + ref):
                return attached.split("/", 2)[2] if attached.count("/") >= 2 else attached
        return None

    @model_validator(mode="after")
    def _rules_name_attached_tools(self) -> Flow:
        rules = []
        for rule in self.router_rules:
            name = self._attached_name(rule.tool)
            if name is None:
                raise ValueError(f"router rule {rule.pattern!r} names '{rule.tool}', which is not attached")
            rules.append(rule if name == rule.tool else rule.model_copy(update={"tool": name}))
        self.router_rules = rules
        return self

    @field_validator("name")
    @classmethod
    def _no_space_or_dot_at_an_end(cls, name: str, info: ValidationInfo) -> str:
        """`weather ` and `weather.` read as `weather`. A flow stored before this rule keeps its
        name: the store reads its flows with the context {"stored": True}."""
        if name.strip(" .") != name and not (info.context or {}).get("stored"):
            raise ValueError(
                f"{shown_value(name)} starts or ends with a space or a dot: remove it "
                "(it would read as another name)"
            )
        return name

    @model_validator(mode="after")
    def _named_choice_is_attached(self) -> Flow:
        if self.tool_choice not in ("auto", "required", "none"):
            name = self._attached_name(self.tool_choice)
            if name is None:
                raise ValueError(
                    f"tool_choice names '{self.tool_choice}', which is not among the attached tools "
                    f"{self.tools}; attach it or use auto, required or none"
                )
            self.tool_choice = name
        return self

    @field_validator("sources")
    @classmethod
    def _sources_are_named(cls, sources: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
        # the kind's own model checks the rest (flowcall/tools/sources/): the core knows no kind
        for kind, entries in sources.items():
            names = [entry.get("name") for entry in entries]
            for name in names:
                if not isinstance(name, str) or not re.fullmatch(SOURCE_NAME, name):
                    raise ValueError(
                        f"every {kind!r} source needs a name: lowercase letters, digits, - and _, "
                        "starting with a letter or digit, at most 40"
                    )
            if len(set(names)) != len(names):
                raise ValueError(f"two {kind!r} sources share a name; give each its own")
        return sources

    def source_prefixes(self) -> tuple[str, ...]:
        """`<source name>/<kind>/`: how the references of tools that sources serve begin."""
        return (
            tuple(f"{server.name}/mcp/" for server in self.mcp_servers)
            + tuple(f"{source.name}/http/" for source in self.http_tools)
            + tuple(f"{entry['name']}/{kind}/" for kind, entries in self.sources.items() for entry in entries)
        )

    def plugin_refs(self) -> list[str]:
        """The tool references served by plugins, not by the flow's sources (MCP servers, ...)."""
        prefixes = self.source_prefixes()
        return [ref for ref in self.tools if not (prefixes and ref.startswith(prefixes))]

    @model_serializer(mode="wrap")
    def _no_default_switches(self, handler: Any) -> dict[str, Any]:
        # a switch left off dumps as before the setting existed: saved flows keep their hash
        data = handler(self)
        for switch in ("conversation", "answers_without_tools", "sources"):
            if not getattr(self, switch):
                data.pop(switch, None)
        return data

    def content_hash(self) -> str:
        """Stable hash of the spec: saving an unchanged flow makes no new version."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def to_json(self) -> str:
        data = self.model_dump(mode="json", exclude_none=True)
        if self.layout is not None and (self.layout.positions or self.layout.parked):
            data["layout"] = self.layout.model_dump(mode="json")
        return json.dumps(data, indent=2, ensure_ascii=False)


def _is_secret_name(name: str) -> bool:
    """AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, DB_PASSWORD, x-api-key, Authorization, Cookie ...
    but not max_tokens, DB_PASSWORD_FILE, MONKEY or KEYBOARD."""
    words = [w.lower() for w in _NAME_WORDS.findall(name)]
    if not words or words[-1] in _ABOUT_WORDS:
        return False
    if words[-1] == "auth" or any(w in _SECRET_WORDS for w in words):
        return True
    glued = "".join(words)
    if any(part in glued for part in _SECRET_PARTS):
        return True
    return any("token" in w and not w.endswith(("tokens", "tokenizer", "tokenize")) for w in words)


def _is_random_token(run: str) -> bool:
    """A whitespace-free run of 32+ characters of a hex or base64 alphabet mixing letters and
    digits: hex with both, or base64 with upper case, lower case and digits. Identifiers,
    UUIDs (hex only in 8-4-4-4-12 pieces, one case) and hashes of digest length do not count."""
    run = run.strip("-_=")
    if len(run) < 32 or not any(c.isdigit() for c in run):
        return False
    if _HEX.fullmatch(run):
        return any(c.isalpha() for c in run) and len(run) not in _DIGEST_LENGTHS
    return any(c.isupper() for c in run) and any(c.islower() for c in run)


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    _, colon, password = parts.netloc.rpartition("@")[0].partition(":")
    if colon and password:
        return "a URL with a password in it (user:password@host)"
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if value and _is_secret_name(name) and not _ENV_REFERENCE.fullmatch(value):
            return f"a URL with a credential in its query ({name}=...)"
    return None


def _value_problem(text: str) -> str | None:
    """Why a string looks like it holds a credential, in words that do not quote it; or None."""
    if _KEY_FORMATS.search(text):
        return "a value in the format of an API key, token or private key"
    if any(_is_random_token(m.group()) for m in _LONG_RUN.finditer(text)):
        return "a long random value, like a key or token"
    for match in _URL.finditer(text):
        problem = _url_problem(match.group().rstrip(").,;"))
        if problem:
            return problem
    return None


def _path_part(key: Any) -> str:
    key = str(key)
    return "<a key that looks like a secret>" if _value_problem(key) else key


def _find_secrets(data: Any, path: str = "", *, in_schema: bool = False) -> list[tuple[str, str]]:
    """(path, why) for each place in flow JSON that holds what looks like a secret. Inside a JSON
    Schema (polish.output_schema) keys are property names, so only values are judged there."""
    found: list[tuple[str, str]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{_path_part(key)}" if path else _path_part(key)
            if isinstance(key, str) and _value_problem(key):
                found.append((where, "a key that looks like a secret"))
            literal = isinstance(value, (str, int, float)) and not isinstance(value, bool)
            if (
                not in_schema
                and isinstance(key, str)
                and literal
                and _is_secret_name(key)
                and str(value).strip().lower() not in _HARMLESS_VALUES
                and not _ENV_REFERENCE.fullmatch(str(value))
                and not (path.rsplit(".", 1)[-1] == "headers" and _HEADER_REFERENCE.fullmatch(str(value)))
            ):
                found.append((where, "a literal value under a secret's name"))
            elif isinstance(value, str) and (problem := _value_problem(value)):
                found.append((where, problem))
            else:
                found.extend(_find_secrets(value, where, in_schema=in_schema or key == "output_schema"))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            if isinstance(value, str) and (problem := _value_problem(value)):
                found.append((f"{path}[{i}]", problem))
            else:
                found.extend(_find_secrets(value, f"{path}[{i}]", in_schema=in_schema))
    return found


def _secrets_error(source: str, found: list[tuple[str, str]]) -> ConfigError:
    """Names each place and the fix; never the value (the message is logged and shown)."""
    places = "; ".join(f"{where} ({why})" for where, why in found)
    env_names = [
        where.rsplit(".", 1)[1] for where, _ in found if re.search(r"\.env\.[A-Za-z_][A-Za-z0-9_]*$", where)
    ]
    example = env_names[0] if env_names else "GITHUB_TOKEN"
    if any(".headers." in where for where, _ in found):
        return ConfigError(
            f"{source} holds what looks like a secret at {places}. A flow file is shared and must never hold "
            'one: remove it. For an HTTP source\'s header write a reference, e.g. "Authorization": '
            '"Bearer $API_TOKEN", and set the variable (API_TOKEN) in the environment, where it is read when '
            "a request is made"
        )
    return ConfigError(
        f"{source} holds what looks like a secret at {places}. A flow file is shared and must never hold "
        f'one: remove it. For an MCP server\'s env write a reference, e.g. "{example}": "${example}", '
        f"and set the variable ({example}) in the environment, where it is read when the server "
        "starts; model API keys are read from the environment too (see docs/guide/configuration.md)"
    )


def parse_flow(data: dict[str, Any] | str, *, source: str = "flow") -> Flow:
    """Validate flow JSON, with errors that name the field and the fix."""
    if isinstance(data, str):
        try:
            data = nesting.loads(data, source)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}"
            )
    else:
        nesting.check_depth(data, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must be a JSON object with a 'name', got {type(data).__name__}")
    secrets = _find_secrets(data)
    if secrets:
        raise _secrets_error(source, secrets)
    fmt = data.get("format", FORMAT_VERSION)
    if fmt != FORMAT_VERSION:
        raise ConfigError(f"{source} has format {shown_value(fmt)}; this FlowCall reads '{FORMAT_VERSION}'")
    try:
        return Flow.model_validate(data)
    except ValidationError as exc:
        # sentences that name the field in words and its JSON path, and say what to do
        problems = " ".join(plain_errors(exc, data, model=Flow, paths=True))
        raise ConfigError(f"{source} is not a valid flow: {problems.removesuffix('.')}") from exc


def load_flow(path: str | Path) -> Flow:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"flow file {path} does not exist; pass the path of a flow JSON file (see flows/)")
    return parse_flow(path.read_text(encoding="utf-8"), source=str(path))
