"""Providers: one module per wire format, all behind `Provider.complete`.

`provider_for` turns a flow's model config into a provider; modules are imported on demand
so that, say, the openai SDK is not loaded for a flow that only uses the local model.
"""

from __future__ import annotations

from flowcall.core.errors import ConfigError
from flowcall.core.spec import ModelConfig
from flowcall.providers.base import Capabilities, NotConfigured, Provider

PROVIDER_NAMES = ("local", "openai", "dashscope", "openai-compatible")
HOSTED_PROVIDERS = PROVIDER_NAMES[1:]  # each needs a setting (a key or a base URL) to be built
_BASE_URL_VARIABLE = {"openai": "OPENAI_BASE_URL", "dashscope": "DASHSCOPE_HTTP_BASE_URL"}


def provider_for(config: ModelConfig) -> Provider:
    if config.provider in ("openai", "dashscope") and config.base_url:
        # their keys (OPENAI_API_KEY, DASHSCOPE_API_KEY) go only where the environment says:
        # a flow file, which is shared, must not be able to send them to another server
        raise ConfigError(
            f"a flow cannot set base_url for provider '{config.provider}': its API key is sent only to "
            f"{config.provider}'s own endpoint (or {_BASE_URL_VARIABLE[config.provider]}). "
            "For another server use provider openai-compatible; its key (OPENAI_COMPATIBLE_API_KEY) "
            "is sent only to OPENAI_COMPATIBLE_BASE_URL"
        )
    if config.provider == "local":
        from flowcall.providers.local import LocalProvider

        return LocalProvider.shared()
    if config.provider == "openai":
        from flowcall.providers.openai_compat import openai_provider

        return openai_provider(config.model)
    if config.provider == "dashscope":
        from flowcall.providers.dashscope_native import DashScopeProvider

        return DashScopeProvider(config.model)
    if config.provider == "openai-compatible":
        from flowcall.providers.openai_compat import compatible_provider

        # no base_url in the flow: OPENAI_COMPATIBLE_BASE_URL (compatible_provider says if neither is set)
        return compatible_provider(config.model, config.base_url)
    if config.provider == "scripted":
        # Safe in a shared flow file: this model is a pure function of the request; it reads no
        # file, holds no key and reaches nothing (base_url, if any, is ignored). It lets the CLI,
        # tests and benchmarks run a flow without the embedded model.
        from flowcall.providers.scripted import SCHEMA_MODEL, SchemaDrivenProvider

        if config.model != SCHEMA_MODEL:
            raise ConfigError(
                f"provider 'scripted' has no model '{config.model}'; its one model is '{SCHEMA_MODEL}' "
                "(a deterministic stand-in that calls each tool with arguments made from its schema)"
            )
        return SchemaDrivenProvider(SCHEMA_MODEL)
    raise ConfigError(
        f"provider '{config.provider}' cannot be built from "
        f"a flow file; use one of {', '.join(PROVIDER_NAMES)}"
    )


__all__ = ["Capabilities", "NotConfigured", "Provider", "provider_for", "PROVIDER_NAMES"]
