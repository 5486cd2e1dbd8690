"""Initial schema: flows and their versions, runs and their steps, tasks.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Self-contained on purpose (no import of flowcall.store.models): a migration must keep
meaning what it meant when it was written, whatever the models become.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON(none_as_null=True)


def _time() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    _flow_tables()
    _runs_table()
    _steps_table()
    _tasks_table()


def _flow_tables() -> None:
    """A flow's name, and each saved version of its spec."""
    op.create_table(
        "flows",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flows")),
        sa.UniqueConstraint("name", name=op.f("uq_flows_name")),
    )
    op.create_table(
        "flow_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("flow_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("spec", _json(), nullable=False),
        sa.Column("spec_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", _time(), nullable=False),
        sa.ForeignKeyConstraint(
            ["flow_id"], ["flows.id"], name=op.f("fk_flow_versions_flow_id_flows"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flow_versions")),
        sa.UniqueConstraint("flow_id", "version", name=op.f("uq_flow_versions_flow_id_version")),
    )


def _runs_table() -> None:
    """One row a run, with the indexes the run lists filter and sort by."""
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("flow_version_id", sa.Integer(), nullable=True),
        sa.Column("flow_name", sa.String(length=120), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("final_answer", _json(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("trace_id", sa.String(length=255), nullable=False),
        sa.Column("started_at", _time(), nullable=False),
        sa.Column("ended_at", _time(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["flow_version_id"],
            ["flow_versions.id"],
            name=op.f("fk_runs_flow_version_id_flow_versions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    for column in ("flow_name", "flow_version_id", "started_at", "status"):
        op.create_index(op.f(f"ix_runs_{column}"), "runs", [column], unique=False)


def _steps_table() -> None:
    """Every step of a run, in order: what was sent, what came back, what it cost."""
    op.create_table(
        "steps",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("calling_way", sa.String(length=32), nullable=True),
        sa.Column("request", _json(), nullable=True),
        sa.Column("response", _json(), nullable=True),
        sa.Column("rendered_prompt", sa.Text(), nullable=True),
        sa.Column("tool_calls", _json(), nullable=True),
        sa.Column("tool_call_id", sa.String(length=255), nullable=True),
        sa.Column("arguments", _json(), nullable=True),
        sa.Column("result", _json(), nullable=True),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.Column("retries", _json(), nullable=True),
        sa.Column("request_id", sa.String(length=255), nullable=True),
        sa.Column("trace_id", sa.String(length=255), nullable=True),
        sa.Column("started_at", _time(), nullable=False),
        sa.Column("ended_at", _time(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_steps_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_steps")),
        sa.UniqueConstraint("run_id", "seq", name=op.f("uq_steps_run_id_seq")),
    )


def _tasks_table() -> None:
    """The bundled task tools' tasks."""
    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("created_at", _time(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tasks")),
    )


def downgrade() -> None:
    op.drop_table("tasks")
    op.drop_table("steps")
    op.drop_table("runs")  # its indexes go with it
    op.drop_table("flow_versions")
    op.drop_table("flows")
