"""The flow: pydantic models that are also the JSON export format.

A flow file never holds an API key: providers read keys from the environment, and a
flow that carries one is refused on load.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from flowcall.errors import ConfigError

FORMAT_VERSION = "flowcall.flow/v1"
CallingWayName = Literal["auto", "native", "prompt", "schema", "router"]
ProviderName = Literal["local", "openai", "dashscope", "openai-compatible", "scripted"]

_SECRET_KEYS = re.compile(r"(api[_-]?key|secret|token|password|authorization)$", re.IGNORECASE)


class ModelConfig(BaseModel):
    """Which model, where, and how it is prompted."""

    model_config = ConfigDict(extra="forbid")

    provider: ProviderName = "local"
    model: str = "qwen2.5-coder-0.5b-instruct"
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
        return schema


class MCPServerConfig(BaseModel):
    """An MCP server whose tools a flow attaches as `<name>/mcp/<tool>`: a stdio command or a
    streamable HTTP URL. `env` values that start with `$` are read from the environment when
    the server starts, so a flow file never holds a key."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$", description="Lowercase; the tools' namespace.")
    command: list[str] | None = Field(default=None, min_length=1, description="argv of a stdio server.")
    url: str | None = Field(default=None, pattern=r"^https?://", description="A streamable HTTP endpoint.")
    env: dict[str, str] = Field(default_factory=dict)
    trusted: bool = Field(default=False, description="Run its tools without asking a person.")
    startup_timeout_s: float = Field(default=30.0, gt=0, le=300)
    call_timeout_s: float = Field(default=30.0, gt=0, le=600)

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server '{self.name}' needs exactly one of command (stdio) or url (streamable HTTP)")
        return self

    def describe(self) -> str:
        return " ".join(self.command) if self.command else str(self.url)

    def target(self) -> Any:
        """What the SDK's Client connects to."""
        if self.url:
            return self.url
        import os

        from mcp import StdioServerParameters

        # merged by the SDK over a small safe environment: the parent's keys are not handed on
        env = {k: os.environ.get(v[1:], "") if v.startswith("$") else v for k, v in self.env.items()}
        return StdioServerParameters(command=self.command[0], args=self.command[1:], env=env or None)


class HTTPToolSource(BaseModel):
    """The operations of an OpenAPI 3 document as tools, attached as `<name>/http/<operationId>`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$", description="Lowercase; the tools' namespace.")
    openapi: str = Field(min_length=1, description="A file path or an http(s) URL of the document.")
    base_url: str | None = Field(default=None, pattern=r"^https?://", description="Overrides the document's servers.")
    operations: list[str] | None = Field(default=None, description="Only these operationIds (default: all).")
    allow_hosts: list[str] = Field(default_factory=list,
                                   description="Hosts allowed although they are internal (loopback, private...).")
    timeout_s: float = Field(default=15.0, gt=0, le=300)
    max_response_bytes: int = Field(default=1_000_000, gt=0, le=50_000_000)


class Flow(BaseModel):
    """question -> decision model -> tools (looped) -> polish model -> answer."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["flowcall.flow/v1"] = FORMAT_VERSION
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
    router_rules: list[RouterRule] = Field(default_factory=list, description="Intent rules for the router way.")
    mcp_servers: list[MCPServerConfig] = Field(default_factory=list, description="MCP servers whose tools it attaches.")
    http_tools: list[HTTPToolSource] = Field(default_factory=list, description="OpenAPI documents whose operations it attaches.")
    needs_approval: list[str] = Field(default_factory=list, description="Tools whose calls wait for a person, "
                                      "besides destructive ones and those of untrusted MCP servers.")
    polish: PolishConfig | None = None

    @model_validator(mode="after")
    def _rules_name_attached_tools(self) -> Flow:
        for rule in self.router_rules:
            if not any(ref == rule.tool or ref.endswith("/" + rule.tool) for ref in self.tools):
                raise ValueError(f"router rule {rule.pattern!r} names '{rule.tool}', which is not attached")
        return self

    @model_validator(mode="after")
    def _named_choice_is_attached(self) -> Flow:
        if self.tool_choice not in ("auto", "required", "none"):
            if not any(ref == self.tool_choice or ref.endswith("/" + self.tool_choice) for ref in self.tools):
                raise ValueError(
                    f"tool_choice names '{self.tool_choice}', which is not among the attached tools "
                    f"{self.tools}; attach it or use auto, required or none"
                )
        return self

    def plugin_refs(self) -> list[str]:
        """The tool references served by plugins, not by the flow's MCP servers or HTTP tools."""
        prefixes = (tuple(f"{server.name}/mcp/" for server in self.mcp_servers)
                    + tuple(f"{source.name}/http/" for source in self.http_tools))
        return [ref for ref in self.tools if not (prefixes and ref.startswith(prefixes))]

    def content_hash(self) -> str:
        """Stable hash of the spec: saving an unchanged flow makes no new version."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False)


def _find_secrets(data: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and _SECRET_KEYS.search(key) and value:
                found.append(where)
            found.extend(_find_secrets(value, where))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            found.extend(_find_secrets(value, f"{path}[{i}]"))
    return found


def parse_flow(data: dict[str, Any] | str, *, source: str = "flow") -> Flow:
    """Validate flow JSON, with errors that name the field and the fix."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}")
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must be a JSON object with a 'name', got {type(data).__name__}")
    secrets = [p for p in _find_secrets(data) if not p.endswith("output_schema")]
    if secrets:
        raise ConfigError(
            f"{source} contains what looks like a secret at {', '.join(secrets)}; flow files never hold "
            "API keys: remove it and set the key in an environment variable (see README, Configuration)"
        )
    fmt = data.get("format", FORMAT_VERSION)
    if fmt != FORMAT_VERSION:
        raise ConfigError(f"{source} has format '{fmt}'; this FlowCall reads '{FORMAT_VERSION}'")
    try:
        return Flow.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"{source} is not a valid flow: {problems}") from exc


def load_flow(path: str | Path) -> Flow:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"flow file {path} does not exist; pass the path of a flow JSON file (see flows/)")
    return parse_flow(path.read_text(encoding="utf-8"), source=str(path))
