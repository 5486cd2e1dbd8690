"""Datasets (versioned items) and experiments (a dataset run through a flow, scored per item);
runs recorded before they run (queued) keep when they were queued.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("queued_at", sa.DateTime(timezone=True), nullable=True))
    _dataset_tables()
    _experiment_tables()


def _dataset_tables() -> None:
    """A dataset's name, its versions, and each version's items in order."""
    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("name", name=op.f("uq_datasets_name")),
    )
    op.create_table(
        "dataset_versions",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "dataset_id", sa.Integer(), sa.ForeignKey("datasets.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("item_count", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(500), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("dataset_id", "version", name=op.f("uq_dataset_versions_dataset_id_version")),
    )
    op.create_table(
        "dataset_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "version_id",
            sa.Integer(),
            sa.ForeignKey("dataset_versions.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("item", sa.JSON(), nullable=False),
        sa.UniqueConstraint("version_id", "position", name=op.f("uq_dataset_items_version_id_position")),
    )


def _experiment_tables() -> None:
    """An experiment (a dataset version run through a flow version), and one row per item and attempt."""
    _experiments_table()
    _experiment_items_table()


def _experiments_table() -> None:
    op.create_table(
        "experiments",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("flow_ref", sa.String(500), nullable=False),
        sa.Column("flow_name", sa.String(120), nullable=False),
        sa.Column("flow_version", sa.Integer(), nullable=False),
        sa.Column(
            "flow_version_id",
            sa.Integer(),
            sa.ForeignKey("flow_versions.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("dataset_name", sa.String(120), nullable=False),
        sa.Column("dataset_version", sa.Integer(), nullable=False),
        sa.Column("dataset_version_id", sa.Integer(), sa.ForeignKey("dataset_versions.id"), nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("polish_model", sa.String(255), nullable=True),
        sa.Column("calling_way", sa.String(32), nullable=False),
        sa.Column("repeat", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("summary", sa.JSON(), nullable=True),
    )


def _experiment_items_table() -> None:
    op.create_table(
        "experiment_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "experiment_id", sa.Integer(), sa.ForeignKey("experiments.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("item_key", sa.Text(), nullable=False),
        sa.Column(
            "run_id", sa.String(36), sa.ForeignKey("runs.id", ondelete="SET NULL"), nullable=True, index=True
        ),
        sa.Column("status", sa.String(16), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("verdicts", sa.JSON(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.UniqueConstraint(
            "experiment_id",
            "position",
            "attempt",
            name=op.f("uq_experiment_items_experiment_id_position_attempt"),
        ),
    )


def downgrade() -> None:
    op.drop_table("experiment_items")
    op.drop_table("experiments")
    op.drop_table("dataset_items")
    op.drop_table("dataset_versions")
    op.drop_table("datasets")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("queued_at")
