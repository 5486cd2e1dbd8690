"""Providers: one module per wire format, all behind `Provider.complete`.

`provider_for` turns a flow's model config into a provider; modules are imported on demand
so that, say, the openai SDK is not loaded for a flow that only uses the local model.
"""

from __future__ import annotations

from flowcall.errors import ConfigError
from flowcall.providers.base import Capabilities, Provider
from flowcall.spec import ModelConfig

PROVIDER_NAMES = ("local", "openai", "dashscope", "openai-compatible")


def provider_for(config: ModelConfig) -> Provider:
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

        if not config.base_url:
            raise ConfigError("an openai-compatible model needs base_url (e.g. http://127.0.0.1:11434/v1 for Ollama)")
        return compatible_provider(config.model, config.base_url)
    raise ConfigError(
        f"provider '{config.provider}' cannot be built from a flow file; use one of {', '.join(PROVIDER_NAMES)}"
    )


__all__ = ["Capabilities", "Provider", "provider_for", "PROVIDER_NAMES"]
