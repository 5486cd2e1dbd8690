"""The models, for the studio, the CLI and the HTTP API (which do not import the providers): the
providers here and what each reads from the environment, the embedded model's file, and the
grant a flow needs to use a provider of an installed package.

Every list of providers a person sees is read from the providers' own ProviderInfo (flowcall/
providers), so a provider added there, or installed by a package, shows up everywhere at once.
"""

from __future__ import annotations

from flowcall.core.spec import Flow
from flowcall.providers import (
    installed_origin,
    needs_settings,
    provider_for,
    provider_info,
    provider_infos,
    provider_names,
)
from flowcall.providers import local_model as _local_model
from flowcall.providers.base import ProviderInfo, redact_url
from flowcall.trust import consent
from flowcall.trust.consent import TrustItem

__all__ = [
    "ProviderInfo",
    "build_provider",
    "check_provider",
    "embedded_model_status",
    "fetch_embedded_model",
    "file_sha256",
    "needs_settings",
    "provider",
    "provider_names",
    "provider_trust_items",
    "providers",
    "shown_base_url",
    "suggested_models",
    "verify_embedded_model",
]

# --- the providers ------------------------------------------------------------------------------
build_provider = provider_for  # what a flow's model config names (the CLI's evaluation builds with it)


def providers() -> list[ProviderInfo]:
    """The providers a person may pick, built in and installed, in order."""
    return [info for info in provider_infos().values() if info.listed]


def provider(name: str) -> ProviderInfo | None:
    """The provider of that name, or None when none is here."""
    return provider_infos().get(name)


def check_provider(name: str) -> None:
    """ConfigError, naming the providers here and what to install, for a name none of them has."""
    provider_info(name)


def suggested_models(provider: str) -> list[str]:
    """The models the studio offers for a provider (none for one not here)."""
    info = provider_infos().get(provider)
    return list(info.suggested_models) if info is not None else []


def shown_base_url(info: ProviderInfo) -> str | None:
    """The base URL set for the provider, safe to show (no user:password, no key in the query)."""
    return redact_url(info.configured_base_url())


def provider_trust_items(flow: Flow) -> list[TrustItem]:
    """Using each provider of an installed package that the flow's models name: its code runs
    here, with the questions and tool results, so a shared flow that names it asks first, naming
    the package and its module (as for an installed package's tools). Nothing of it is imported
    to ask."""
    used = {}
    for model in (flow.decision, flow.polish):
        origin = installed_origin(model.provider) if model is not None else None
        if model is not None and origin is not None:
            used[model.provider] = origin
    return consent.package_provider_items(used)


# --- the embedded model's file (the local provider) --------------------------------------------
embedded_model_status = _local_model.status  # path, present, size, verified, its name and hash
verify_embedded_model = _local_model.verify  # does the file match the published SHA-256?
file_sha256 = _local_model.sha256_of
fetch_embedded_model = _local_model.fetch  # download it (if it is not here yet) and check it
