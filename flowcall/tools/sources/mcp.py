"""The "mcp" kind: an MCP server (a stdio command or a streamable HTTP URL) whose tools a flow
attaches as `<server>/mcp/<tool>`; flows list them in `mcp_servers`.

A server is started when a run loads it and stopped when the run ends (the run's ExitStack); a
stdio server starts only if what it would run, resolved right before the start, is granted
(consent.checked_start, in mcp_client). The consent items (the command or URL, and `trusted`)
are consent's own (consent.server_items): this module only says which servers a flow has.
"""

from __future__ import annotations

from pydantic import BaseModel

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow, MCPServerConfig
from flowcall.tools.base import Tool
from flowcall.tools.sources.base import FormField, LoadContext
from flowcall.trust.consent import TrustItem, server_items


class MCPKind:
    kind = "mcp"
    label = "MCP server"
    flow_field = "mcp_servers"  # where a flow lists them (else: flow.sources[kind])
    config_model: type[BaseModel] = MCPServerConfig

    def configs(self, flow: Flow) -> list[BaseModel]:
        return list(flow.mcp_servers)

    def load(self, config: BaseModel, context: LoadContext) -> list[Tool]:
        # the SDK loads only when a server is started
        from flowcall.tools.mcp_client import MCPConnection, MCPToolError, tools_of

        assert isinstance(config, MCPServerConfig)
        try:
            return tools_of(context.stack.enter_context(MCPConnection(config, context.grants)))
        except (MCPToolError, TimeoutError) as exc:
            raise ConfigError(str(exc)) from exc

    def trust_items(self, config: BaseModel) -> list[TrustItem]:
        assert isinstance(config, MCPServerConfig)
        return server_items(config)

    def form_fields(self) -> dict[str, FormField]:
        return {
            "name": FormField("Name", "its tools are attached as <name>/mcp/<tool>", "time"),
            "command": FormField(
                "Command", "the program to start and its arguments", '["uvx", "mcp-server-time"]'
            ),
            "url": FormField("URL (streamable HTTP)", "instead of a command", "http://127.0.0.1:8765/mcp"),
            "env": FormField("Environment", "NAME = value; write a secret as $NAME"),
            "trusted": FormField("Trusted", "run its tools in a flow without asking a person"),
            "startup_timeout_s": FormField("Startup timeout (s)"),
            "call_timeout_s": FormField("Call timeout (s)"),
        }

    def call_timeout_s(self, config: BaseModel) -> float:
        assert isinstance(config, MCPServerConfig)
        return config.call_timeout_s

    def describe(self, config: BaseModel) -> str:
        assert isinstance(config, MCPServerConfig)
        return config.describe()


KIND = MCPKind()
