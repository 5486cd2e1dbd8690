"""The tables. Change them only together with a new migration in migrations/versions/."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from flowcall.core.steps import utcnow


class UTCDateTime(TypeDecorator[datetime]):
    """Always timezone-aware UTC, also on SQLite, which stores datetimes without a zone."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: FlowCall stores timezone-aware times only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# Plain JSON everywhere, not JSONB: a step must show the literal request with its keys in the
# order they were sent, and JSONB re-sorts keys and refuses NUL characters. SQL NULL for None.
JSONType = JSON(none_as_null=True)

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class FlowRow(Base):
    __tablename__ = "flows"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    layout: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)  # the canvas; no version
    # the API key that imported it (its name), for the key's quota; None: a person saved it
    api_key: Mapped[str | None] = mapped_column(String(160), nullable=True, index=True)


class FlowVersionRow(Base):
    __tablename__ = "flow_versions"
    __table_args__ = (UniqueConstraint("flow_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    flow_id: Mapped[int] = mapped_column(ForeignKey("flows.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    spec: Mapped[dict[str, Any]] = mapped_column(JSONType)
    spec_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class RunRow(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # SET NULL: deleting a flow keeps its runs (see Store.delete_flow).
    flow_version_id: Mapped[int | None] = mapped_column(
        ForeignKey("flow_versions.id", ondelete="SET NULL"), index=True
    )
    flow_name: Mapped[str] = mapped_column(String(120), index=True)
    question: Mapped[str] = mapped_column(Text)
    # the chat before the question (steps.ChatTurn), for a flow that reads it; None: none
    context: Mapped[Any] = mapped_column(JSONType, nullable=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    final_answer: Mapped[Any] = mapped_column(JSONType, nullable=True)
    error: Mapped[str | None] = mapped_column(Text)
    trace_id: Mapped[str] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    # the loop's state (loop_state.LoopState) as last committed with a step, kept while the
    # run is running or waits for approval; None once it ends
    checkpoint: Mapped[Any] = mapped_column(JSONType, nullable=True)
    # the process that runs it ("host/pid/start") and its lease (store/ownership.py)
    owner: Mapped[str | None] = mapped_column(String(255), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # when a run recorded before it ran (queued) was recorded; its started_at is when it was claimed
    queued_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # answered_without_tools, with why; and each answer value's source (steps.Run)
    outcome: Mapped[str | None] = mapped_column(String(40), nullable=True)
    outcome_reasons: Mapped[Any] = mapped_column(JSONType, nullable=True)
    provenance: Mapped[Any] = mapped_column(JSONType, nullable=True)
    # the API key that started it (its name): only that key sees it through the API; None: the
    # CLI, the studio, the API without keys (--no-auth) or an import
    api_key: Mapped[str | None] = mapped_column(String(160), nullable=True, index=True)
    # a sub-flow's run: the run whose tool call started it, and that call (engine/subflows.py);
    # no foreign key, so a parent deleted or not imported leaves its child readable
    parent_run_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    parent_call_id: Mapped[str | None] = mapped_column(String(255), nullable=True)


class StepRow(Base):
    __tablename__ = "steps"
    __table_args__ = (UniqueConstraint("run_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))
    round: Mapped[int] = mapped_column(Integer, default=0)
    name: Mapped[str | None] = mapped_column(String(255))
    calling_way: Mapped[str | None] = mapped_column(String(32))
    note: Mapped[str | None] = mapped_column(Text)
    request: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    response: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    rendered_prompt: Mapped[str | None] = mapped_column(Text)
    tool_calls: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)
    tool_call_id: Mapped[str | None] = mapped_column(String(255))
    arguments: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
    result: Mapped[Any] = mapped_column(JSONType, nullable=True)
    error_code: Mapped[str | None] = mapped_column(String(64))
    error_message: Mapped[str | None] = mapped_column(Text)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    retries: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType)
    request_id: Mapped[str | None] = mapped_column(String(255))
    trace_id: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime] = mapped_column(UTCDateTime)


class RunArtifactsRow(Base):
    """The run context's artifacts as they were after step `seq`, saved when they changed:
    a re-run from a later step starts with them (flowcall/core/artifacts.py has the format)."""

    __tablename__ = "run_artifacts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    artifacts: Mapped[dict[str, Any]] = mapped_column(JSONType)


class ToolPinRow(Base):
    """A tool definition as a person first accepted it for a flow (trust on first use): MCP and
    HTTP tools whose definition later differs are flagged and wait for approval."""

    __tablename__ = "tool_pins"
    __table_args__ = (UniqueConstraint("flow_name", "tool_version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    flow_name: Mapped[str] = mapped_column(String(120))
    tool_version: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str] = mapped_column(String(64))
    definition: Mapped[dict[str, Any]] = mapped_column(JSONType)
    pinned_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class GrantRow(Base):
    """Something a person allowed flows to start or reach, keyed by the hash of exactly that."""

    __tablename__ = "grants"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(40))
    subject: Mapped[dict[str, Any]] = mapped_column(JSONType)
    summary: Mapped[str] = mapped_column(Text)
    granted_by: Mapped[str] = mapped_column(String(120))
    granted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TaskRow(Base):
    """Tasks made by the built-in `create_task` plugin."""

    __tablename__ = "tasks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    priority: Mapped[int] = mapped_column(Integer)
    due_date: Mapped[date | None] = mapped_column(Date)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ModelProfileRow(Base):
    """The last capability probe of one model (flowcall/service/probe.py). base_url is "" rather than
    NULL when there is none, so the unique key holds on every database."""

    __tablename__ = "model_profiles"
    __table_args__ = (UniqueConstraint("provider", "model", "base_url"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    provider: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(255))
    base_url: Mapped[str] = mapped_column(String(500), default="")
    profile: Mapped[dict[str, Any]] = mapped_column(JSONType)
    probed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class DatasetRow(Base):
    """A named dataset; its items live in versions, as a flow's spec does."""

    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(120), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DatasetVersionRow(Base):
    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("dataset_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(64))
    item_count: Mapped[int] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(500))  # the file it came from, or the BFCL category and split
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class DatasetItemRow(Base):
    """One item (flowcall/core/datasets.py's DatasetItem as JSON) at its place in a version."""

    __tablename__ = "dataset_items"
    __table_args__ = (UniqueConstraint("version_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    item: Mapped[dict[str, Any]] = mapped_column(JSONType)


class ExperimentRow(Base):
    """A dataset version run through a flow version: what ran, and the summary once it ended."""

    __tablename__ = "experiments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    flow_ref: Mapped[str] = mapped_column(String(500))  # as the person gave it: a file or a saved name
    flow_name: Mapped[str] = mapped_column(String(120))
    flow_version: Mapped[int] = mapped_column(Integer)
    flow_version_id: Mapped[int | None] = mapped_column(ForeignKey("flow_versions.id", ondelete="SET NULL"))
    dataset_name: Mapped[str] = mapped_column(String(120))
    dataset_version: Mapped[int] = mapped_column(Integer)
    dataset_version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id"))
    model: Mapped[str] = mapped_column(String(255))
    polish_model: Mapped[str | None] = mapped_column(String(255), nullable=True)
    calling_way: Mapped[str] = mapped_column(String(32))
    repeat: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16), index=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)


class ExperimentItemRow(Base):
    """One run of one dataset item (`attempt` counts the repeats): its run, then its verdicts."""

    __tablename__ = "experiment_items"
    __table_args__ = (UniqueConstraint("experiment_id", "position", "attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)  # the item's place in the dataset version
    attempt: Mapped[int] = mapped_column(Integer)
    item_key: Mapped[str] = mapped_column(Text)  # the item's id, else its question: what compare pairs on
    run_id: Mapped[str | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"), index=True)
    status: Mapped[str | None] = mapped_column(String(16), nullable=True)  # the run's, once scored
    passed: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    verdicts: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONType, nullable=True)
    latency_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    # the run answered without the tool its decision wanted; how many answer values were traced
    outcome: Mapped[str | None] = mapped_column(String(40), nullable=True)
    traced: Mapped[int | None] = mapped_column(Integer, nullable=True)
    answer_values: Mapped[int | None] = mapped_column(Integer, nullable=True)


class ApiKeyRow(Base):
    """A key to the HTTP API (flowcall/trust/api_keys.py). The key itself is never stored: only its
    SHA-256, which a request's key is looked up by, and its first 8 characters, for lists.
    A name is unique among the keys not revoked: a revoked key keeps its name in the list,
    and a new key may take it."""

    __tablename__ = "api_keys"
    __table_args__ = (
        Index(
            "uq_api_keys_name_active",
            "name",
            unique=True,
            sqlite_where=text("revoked_at IS NULL"),
            postgresql_where=text("revoked_at IS NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(120))
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    flows: Mapped[list[str] | None] = mapped_column(JSONType, nullable=True)  # None: every flow
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
