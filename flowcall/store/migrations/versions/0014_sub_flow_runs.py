"""A sub-flow's run names the run whose tool call started it, and that call (engine/subflows.py),
so the inspector opens one from the other and cancelling a run cancels the runs it started.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-08
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("parent_run_id", sa.String(length=36), nullable=True))
    op.add_column("runs", sa.Column("parent_call_id", sa.String(length=255), nullable=True))
    op.create_index(op.f("ix_runs_parent_run_id"), "runs", ["parent_run_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_runs_parent_run_id"), table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("parent_call_id")
        batch.drop_column("parent_run_id")
