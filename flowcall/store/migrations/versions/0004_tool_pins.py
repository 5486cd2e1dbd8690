"""Tool pins: the definition of each MCP or HTTP tool a flow first used, to notice changes.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tool_pins",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("flow_name", sa.String(120), nullable=False),
        sa.Column("tool_version", sa.String(255), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("pinned_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("flow_name", "tool_version", name=op.f("uq_tool_pins_flow_name_tool_version")),
    )


def downgrade() -> None:
    op.drop_table("tool_pins")
