"""The "http" kind: the operations of an OpenAPI 3 document (a file or a URL) as tools, attached
as `<name>/http/<operationId>`; flows list them in `http_tools`.

A document is read when a run loads it, through the SSRF guard; with grants, only bytes a person
granted are parsed (consent.require_document, in openapi_tools). A URL's content can be known only
by fetching it, so it is asked for once the URL itself is granted (`fetched_items`).
"""

from __future__ import annotations

import httpx
from pydantic import BaseModel

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow, HTTPToolSource
from flowcall.tools.base import Tool
from flowcall.tools.http_guard import ResponseTooLarge, UnsafeRequest
from flowcall.tools.sources.base import FormField, LoadContext
from flowcall.trust.consent import TrustItem, document_item, http_items, is_url


class OpenAPIKind:
    kind = "http"
    label = "HTTP source"
    flow_field = "http_tools"  # where a flow lists them (else: flow.sources[kind])
    config_model: type[BaseModel] = HTTPToolSource

    def configs(self, flow: Flow) -> list[BaseModel]:
        return list(flow.http_tools)

    def load(self, config: BaseModel, context: LoadContext) -> list[Tool]:
        from flowcall.tools.openapi_tools import tools_from_openapi

        assert isinstance(config, HTTPToolSource)
        try:
            return tools_from_openapi(config, context.grants)
        except UnsafeRequest as exc:
            raise ConfigError(str(exc)) from exc

    def trust_items(self, config: BaseModel) -> list[TrustItem]:
        assert isinstance(config, HTTPToolSource)
        return http_items(config)

    def fetched_items(self, config: BaseModel) -> list[TrustItem]:
        """The document's content as fetched now, when it is a URL (a file is hashed by
        `trust_items`). One that cannot be fetched is left to the run, which says why."""
        from flowcall.tools.openapi_tools import document_sha256

        assert isinstance(config, HTTPToolSource)
        if not is_url(config.openapi):
            return []
        try:
            return [document_item(config, document_sha256(config))]
        except (ConfigError, UnsafeRequest, ResponseTooLarge, httpx.HTTPError):
            return []

    def form_fields(self) -> dict[str, FormField]:
        return {
            "name": FormField("Name", "its tools are attached as <name>/http/<operationId>", "things"),
            "openapi": FormField("OpenAPI document", "a file path or an http(s) URL"),
            "base_url": FormField("Base URL", "instead of the document's servers", "https://api.example.com"),
            "operations": FormField("Only these operations", "operationIds; none listed: all"),
            "headers": FormField("Headers", "sent with every request; write a secret as $NAME"),
            "allow_hosts": FormField("Allowed internal hosts", "hosts the SSRF guard would refuse"),
            "timeout_s": FormField("Timeout (s)"),
            "max_response_bytes": FormField("Response size cap (bytes)"),
        }

    def call_timeout_s(self, config: BaseModel) -> float:
        assert isinstance(config, HTTPToolSource)
        return config.timeout_s

    def describe(self, config: BaseModel) -> str:
        assert isinstance(config, HTTPToolSource)
        return config.openapi


KIND = OpenAPIKind()
