"""Providers whose capabilities are what the probe measured, not what the wire format allows.

`auto` picks its calling way from `provider.capabilities`; wrapping a factory with
`with_profiles` makes that choice follow the stored profile of the model (flowcall/probe.py),
so a model that answers tool requests with text starts on the schema or prompt way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowcall.messages import ModelRequest, ModelTurn
from flowcall.providers.base import Capabilities, Provider, ProviderFactory, redact_url
from flowcall.spec import ModelConfig

if TYPE_CHECKING:
    from flowcall.model_profile import ModelProfile
    from flowcall.store import Store


def measured(capabilities: Capabilities, profile: ModelProfile) -> Capabilities:
    """`capabilities` with the profile's measured fields; a copy, since providers share theirs.

    A provider's own `preferred_ways` stay as they are: that order was calibrated on far more
    questions than the probe's three (the local model's on BFCL and the example flows), and
    `auto` still falls back when the first way fails. The probe decides the order for every
    provider without one, which is every remote model, and says why in `ways_reason`."""
    update: dict = profile.capabilities_update()
    if not capabilities.preferred_ways and profile.ways_reason():
        update["ways_reason"] = profile.ways_reason()
    return capabilities.model_copy(update=update)


class ProfiledProvider:
    """The wrapped provider with other capabilities; everything else is passed through."""

    def __init__(self, inner: Provider, capabilities: Capabilities):
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.capabilities = capabilities

    def complete(self, request: ModelRequest) -> ModelTurn:
        return self.inner.complete(request)

    def __getattr__(self, attribute: str) -> Any:  # e.g. the local provider's render()
        return getattr(self.inner, attribute)


def with_profiles(factory: ProviderFactory, store: Store) -> ProviderFactory:
    """`factory`, with each provider's capabilities updated by its stored profile, if any."""
    from flowcall.store.profiles import get_profile  # late: the store is not needed to build providers

    def build(config: ModelConfig) -> Provider:
        provider = factory(config)
        # profiles are stored under the base URL without credentials (probe.py)
        profile = get_profile(store, config.provider, provider.model,
                              redact_url(config.base_url) if config.base_url else None)
        if profile is None:
            return provider
        return ProfiledProvider(provider, measured(provider.capabilities, profile))

    return build
