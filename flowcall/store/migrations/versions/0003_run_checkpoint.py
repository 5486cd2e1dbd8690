"""Runs get a checkpoint: the loop's state while a run waits for a person to approve a call,
so it can resume later, also after a restart.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("checkpoint", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "checkpoint")
