"""Runs and flows remember the API key that started or imported them (its name; NULL for the
CLI, the studio and imports from files), so a key sees only its own runs and each key's
storage can be held to a quota.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("api_key", sa.String(length=160), nullable=True))
    op.create_index(op.f("ix_runs_api_key"), "runs", ["api_key"], unique=False)
    op.add_column("flows", sa.Column("api_key", sa.String(length=160), nullable=True))
    op.create_index(op.f("ix_flows_api_key"), "flows", ["api_key"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_flows_api_key"), table_name="flows")
    with op.batch_alter_table("flows") as batch:
        batch.drop_column("api_key")
    op.drop_index(op.f("ix_runs_api_key"), table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("api_key")
