"""Bring a database to the newest schema with Alembic, configured in code (no alembic.ini)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

from flowcall.store.db import make_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# Any fixed number: serialises two processes that migrate the same PostgreSQL database at once.
_PG_LOCK_KEY = 0x466C6F7743616C6C  # "FlowCall"


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def upgrade(engine_or_url: Engine | str) -> None:
    """Migrate to head inside one transaction on our own connection (a no-op when current)."""
    engine = make_engine(engine_or_url) if isinstance(engine_or_url, str) else engine_or_url
    try:
        cfg = alembic_config()
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK_KEY})")
            cfg.attributes["connection"] = connection
            command.upgrade(cfg, "head")
    finally:
        if engine is not engine_or_url:
            engine.dispose()
