"""Providers whose capabilities are what the probe measured, not what the wire format allows.

`auto` picks its calling way from `provider.capabilities`; wrapping a factory with
`with_profiles` makes that choice follow the stored profile of the model (flowcall/service/probe.py),
so a model that answers tool requests with text starts on the schema or prompt way, and its
steps say why (the tuning's `ways_reason`). Where the profiles are kept is not the providers'
business: the service hands in how to look one up.
"""

from __future__ import annotations

from typing import Any, Callable

from flowcall.core.embedded_models import DecisionTuning
from flowcall.core.messages import ModelRequest, ModelTurn
from flowcall.core.model_profile import ModelProfile
from flowcall.core.spec import ModelConfig
from flowcall.providers.base import Capabilities, Provider, ProviderFactory, redact_url

# (provider, model, base URL without credentials) -> the stored profile of that model, if any
ProfileLookup = Callable[[str, str, str | None], ModelProfile | None]


def measured(capabilities: Capabilities, profile: ModelProfile) -> Capabilities:
    """`capabilities` with the profile's measured fields; a copy, since providers share theirs."""
    return capabilities.model_copy(update=profile.capabilities_update())


def measured_tuning(tuning: DecisionTuning, profile: ModelProfile) -> DecisionTuning:
    """`tuning` with why `auto` starts where it does, from the profile.

    A provider's own `preferred_ways` stay as they are, with their reason: that order was
    calibrated on far more questions than the probe's three (the local model's on BFCL and the
    example flows), and `auto` still falls back when the first way fails. The probe decides the
    order for every provider without one, which is every remote model, and says why in
    `ways_reason`."""
    if tuning.preferred_ways or not profile.ways_reason():
        return tuning
    return tuning.model_copy(update={"ways_reason": profile.ways_reason()})


class ProfiledProvider:
    """The wrapped provider with other capabilities and tuning; everything else is passed through."""

    def __init__(self, inner: Provider, capabilities: Capabilities, tuning: DecisionTuning):
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.capabilities = capabilities
        self.tuning = tuning

    def complete(self, request: ModelRequest) -> ModelTurn:
        return self.inner.complete(request)

    def __getattr__(self, attribute: str) -> Any:  # e.g. the local provider's render()
        return getattr(self.inner, attribute)


def with_profiles(factory: ProviderFactory, profile_of: ProfileLookup) -> ProviderFactory:
    """`factory`, with each provider's capabilities updated by its stored profile, if any."""

    def build(config: ModelConfig) -> Provider:
        provider = factory(config)
        # profiles are stored under the base URL without credentials (probe.py)
        base_url = redact_url(config.base_url) if config.base_url else None
        profile = profile_of(config.provider, provider.model, base_url)
        if profile is None:
            return provider
        tuning = getattr(provider, "tuning", None) or DecisionTuning()  # a remote model has none of its own
        return ProfiledProvider(
            provider, measured(provider.capabilities, profile), measured_tuning(tuning, profile)
        )

    return build
