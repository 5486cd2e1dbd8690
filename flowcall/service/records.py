"""The store's records as the studio, the CLI and the HTTP API read and write them: flows and
their versions, runs, grants. A mixin of the service (front.FlowCall), so those callers reach the
store only through the service (tests/test_layers.py keeps it so); each method is the store's
own, under the same name where the service has none of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow
from flowcall.core.steps import Run, RunStatus
from flowcall.store import Store
from flowcall.trust.consent import Grants, TrustItem


class Records:
    """Needs `self.store` (the service's)."""

    store: Store

    # --- flows -------------------------------------------------------------------------------
    def list_flows(self) -> list[dict[str, Any]]:
        """One entry per flow, by name: name, version, version_id, updated_at, description."""
        return self.store.list_flows()

    def get_flow(self, name: str, version: int | None = None) -> tuple[Flow, int, int]:
        """The latest (or the given) version of a flow: (flow, version_id, version)."""
        return self.store.get_flow(name, version)

    def flow_description(self, name: str, version: int) -> str:
        """What a saved flow version says it does ("" when it is not stored here)."""
        try:
            return self.store.get_flow(name, version)[0].description
        except ConfigError:
            return ""

    def get_flow_version(self, version_id: int) -> Flow:
        """The flow exactly as a run ran it (runs point at a version id)."""
        return self.store.get_flow_version(version_id)

    def flow_versions(self, name: str) -> list[dict[str, Any]]:
        """Every version of a flow, newest first: version, version_id, spec_hash, created_at."""
        return self.store.flow_versions(name)

    def delete_flow(self, name: str) -> None:
        """Delete a flow and its versions; its runs stay, without a flow version."""
        self.store.delete_flow(name)

    # --- runs --------------------------------------------------------------------------------
    def get_run(self, run_id: str) -> Run:
        """A run with its steps in order; `run_id` may be a unique prefix, as git does for commits."""
        return self.store.get_run(run_id)

    def find_run(self, run_id: str, *, api_key: str | None = None) -> Run | None:
        """The run with exactly this id (no prefix), with its steps; with `api_key`, only if
        that key started it; else None."""
        return self.store.find_run(run_id, api_key=api_key)

    def list_runs(
        self,
        flow_name: str | None = None,
        status: RunStatus | str | None = None,
        limit: int = 50,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        model: str | None = None,
        text: str | None = None,
        api_key: str | None = None,
    ) -> list[Run]:
        """Newest first, without steps (get_run has them), filtered as `flowcall runs list` is."""
        return self.store.list_runs(
            flow_name, status, limit, since=since, until=until, model=model, text=text, api_key=api_key
        )

    def run_models(self) -> list[str]:
        """Every provider/model name that answered in some run: the inspector's model filter."""
        return self.store.run_models()

    def run_sink(self) -> Any:
        """Where a run recorded outside a flow goes (`flowcall eval bfcl --save`): the store."""
        return self.store

    # --- grants ------------------------------------------------------------------------------
    def grants(self) -> Grants:
        """What is granted on this machine, for a check that starts or reaches something."""
        return self.store

    def grant_items(self, items: list[TrustItem], *, by: str) -> None:
        """Record a person's grant of each item (the consent panel lists them)."""
        self.store.grant(items, by=by)

    def list_grants(self) -> list[dict[str, Any]]:
        """Every grant, with who granted it and when."""
        return self.store.list_grants()

    def revoke_grants(self, key_prefix: str) -> list[dict[str, Any]]:
        """Revoke the grants whose key starts with `key_prefix` (at least 8 characters)."""
        return self.store.revoke(key_prefix)

    def database_label(self) -> str:
        """The database's URL with its password as ***: to show, never to connect with."""
        return self.store.engine.url.render_as_string(hide_password=True)
