"""Runs say how far tools back their answer: an outcome (answered_without_tools) with its
reasons, and the provenance of each answer value; an experiment's items keep the outcome and
how many answer values were traced.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("outcome", sa.String(40), nullable=True))
    op.add_column("runs", sa.Column("outcome_reasons", sa.JSON(), nullable=True))
    op.add_column("runs", sa.Column("provenance", sa.JSON(), nullable=True))
    op.add_column("experiment_items", sa.Column("outcome", sa.String(40), nullable=True))
    op.add_column("experiment_items", sa.Column("traced", sa.Integer(), nullable=True))
    op.add_column("experiment_items", sa.Column("answer_values", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("experiment_items") as batch:
        batch.drop_column("answer_values")
        batch.drop_column("traced")
        batch.drop_column("outcome")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("provenance")
        batch.drop_column("outcome_reasons")
        batch.drop_column("outcome")
