"""Persistence: flows (versioned), runs and their steps, tasks; SQLite or PostgreSQL."""

from flowcall.store.db import make_engine
from flowcall.store.repository import Store, open_store

__all__ = ["Store", "make_engine", "open_store"]
