"""Flows keep the canvas layout (where each node sits): on the flow, not on a version, so
moving a node never makes a new version.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("flows", sa.Column("layout", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("flows") as batch:
        batch.drop_column("layout")
