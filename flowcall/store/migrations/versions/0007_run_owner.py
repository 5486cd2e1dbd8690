"""Durable runs: a run's owner and lease (interrupted runs), and the artifacts saved with it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("owner", sa.String(255), nullable=True))
    op.add_column("runs", sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "run_artifacts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True
        ),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("artifacts", sa.JSON(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_artifacts")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("lease_until")
        batch.drop_column("owner")
