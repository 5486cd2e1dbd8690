"""Alembic environment: runs on the connection `flowcall.store.migrate` hands over.

Run from the command line (for writing new revisions) it opens FLOWCALL_DATABASE_URL, e.g.
`alembic -c flowcall/store/alembic.ini revision --autogenerate -m "..."`.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy import JSON, Connection

from flowcall.core import config as flowcall_config
from flowcall.core.errors import ConfigError
from flowcall.store.db import make_engine
from flowcall.store.models import Base, UTCDateTime


def _render_type(type_: str, obj: Any, autogen_context: AutogenContext) -> str | bool:
    """Autogenerate plain SQLAlchemy types, so revisions never import flowcall.store.models."""
    if type_ != "type":
        return False
    if isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    if isinstance(obj, JSON):
        autogen_context.imports.add("from sqlalchemy.dialects import postgresql")
        return 'sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True), "postgresql")'
    return False


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER most things
        render_item=_render_type,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise ConfigError("FlowCall migrations run online only; drop --sql and point at a database")

_connection = context.config.attributes.get("connection")
if _connection is not None:
    _run(_connection)
else:
    _engine = make_engine(context.config.get_main_option("sqlalchemy.url") or flowcall_config.database_url())
    try:
        with _engine.begin() as conn:
            _run(conn)
    finally:
        _engine.dispose()
