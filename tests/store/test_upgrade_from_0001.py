"""A database made by an earlier FlowCall (schema 0001) upgrades in place and keeps its runs."""

from __future__ import annotations

from alembic import command
from sqlalchemy import text

from flowcall.store import Store, make_engine
from flowcall.store.migrate import alembic_config


def test_0001_database_upgrades_and_keeps_data(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001")
        conn.execute(text("INSERT INTO runs (id, flow_name, question, status, trace_id, started_at, tokens_in, tokens_out) "
                          "VALUES ('r1', 'old', 'q?', 'succeeded', 't', '2026-11-01 00:00:00+00:00', 0, 0)"))
    engine.dispose()
    store = Store.open(url)  # migrates to head
    assert store.get_run("r1").question == "q?"
    with store.engine.connect() as conn:
        assert "note" in [row[1] for row in conn.execute(text("PRAGMA table_info(steps)"))]
    store.close()
