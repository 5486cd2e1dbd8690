"""What an API key owns: the runs it started and the flows it imported (their `api_key`
column holds the key's name). The HTTP API shows a key only its own runs and holds each key
to a storage quota; the CLI and the studio record none. Kept beside the Store, like
api_keys.py: only the API server uses it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from flowcall.core.steps import Run
from flowcall.store.models import FlowRow, RunRow
from flowcall.store.repository import Store


def stored_by_key(store: Store, api_key: str) -> tuple[int, int]:
    """(runs, flows) the key started or imported that are stored now."""
    with store.engine.connect() as conn:
        runs = conn.scalar(select(func.count()).select_from(RunRow).where(RunRow.api_key == api_key))
        flows = conn.scalar(select(func.count()).select_from(FlowRow).where(FlowRow.api_key == api_key))
    return int(runs or 0), int(flows or 0)


class KeyedSink:
    """The store as a run's sink, recording the API key that starts the run with its first row
    (so the run is the key's from its first moment); everything else goes to the store."""

    def __init__(self, store: Store, api_key: str) -> None:
        self.store, self.api_key = store, api_key

    def run_started(self, run: Run) -> None:
        self.store.run_started(run, api_key=self.api_key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)
