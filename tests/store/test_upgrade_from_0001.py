"""A database made by an earlier FlowCall (schema 0001, 0007) upgrades in place and keeps its runs."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text

from flowcall.core.steps import RunStatus
from flowcall.store import Store, make_engine
from flowcall.store.migrate import alembic_config


def _old_database(url: str, revision: str) -> None:
    """A SQLite database at `revision` holding one run, r1."""
    engine = make_engine(url)
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.execute(
            text(
                "INSERT INTO runs (id, flow_name, question, status, trace_id, started_at, tokens_in, "
                "tokens_out) VALUES ('r1', 'old', 'q?', 'succeeded', 't', '2026-11-01 00:00:00+00:00', 0, 0)"
            )
        )
    engine.dispose()


def test_0001_database_upgrades_and_keeps_data(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _old_database(url, "0001")
    store = Store.open(url)  # migrates to head
    assert store.get_run("r1").question == "q?"
    with store.engine.connect() as conn:
        assert "note" in [row[1] for row in conn.execute(text("PRAGMA table_info(steps)"))]
    store.close()


def test_0007_database_gets_datasets_experiments_and_queued_runs(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    _old_database(url, "0007")
    store = Store.open(url)
    try:
        run = store.get_run("r1")
        assert run.question == "q?" and run.queued_at is None and run.status == RunStatus.SUCCEEDED
        tables = set(inspect(store.engine).get_table_names())
        assert {"datasets", "dataset_versions", "dataset_items", "experiments", "experiment_items"} <= tables
    finally:
        store.close()
