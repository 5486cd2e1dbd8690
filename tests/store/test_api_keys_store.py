"""The api_keys table on SQLite and PostgreSQL: migration 0011 upgrades a 0010 database, and
the database itself holds a name to one key not revoked (a partial unique index) and a hash to
one key, whoever writes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from alembic import command
from sqlalchemy import inspect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from flowcall.core.steps import utcnow
from flowcall.store import Store, make_engine
from flowcall.store.api_keys import add_key, find_key, list_keys, revoke_keys
from flowcall.store.migrate import alembic_config
from flowcall.store.models import ApiKeyRow
from flowcall.trust.api_keys import key_hash, new_secret, prefix_of


def _row(name: str, secret: str) -> ApiKeyRow:
    return ApiKeyRow(
        name=name, prefix=prefix_of(secret), key_hash=key_hash(secret), flows=None, created_at=utcnow()
    )


def test_a_0010_database_upgrades_to_api_keys(db_url: str, open_stores: Callable[[], Store]) -> None:
    engine = make_engine(db_url)
    cfg = alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0010")
    assert "api_keys" not in inspect(engine).get_table_names()
    engine.dispose()
    store = open_stores()  # migrates to head
    indexes = {ix["name"]: ix for ix in inspect(store.engine).get_indexes("api_keys")}
    assert indexes["ix_api_keys_key_hash"]["unique"] and indexes["uq_api_keys_name_active"]["unique"]
    secret = new_secret()
    add_key(store, "first", prefix_of(secret), key_hash(secret), ["a", "b"])
    assert find_key(store, key_hash(secret)).flows == ["a", "b"]


def test_the_database_keeps_one_active_key_per_name(store: Store) -> None:
    with Session(store.engine) as s, s.begin():
        s.add(_row("same", new_secret()))
    with (
        pytest.raises(IntegrityError),
        Session(store.engine) as s,
        s.begin(),
    ):  # what add_key's check would refuse
        s.add(_row("same", new_secret()))
    revoke_keys(store, "same")
    with Session(store.engine) as s, s.begin():  # a revoked key's name is free again
        s.add(_row("same", new_secret()))
    with Session(store.engine) as s, s.begin():  # and revoked keys may share it
        s.add(
            ApiKeyRow(
                name="same",
                prefix="x",
                key_hash="0" * 64,
                flows=None,
                created_at=utcnow(),
                revoked_at=utcnow(),
            )
        )
    assert [k.active for k in list_keys(store)] == [False, True, False]


def test_the_database_keeps_one_key_per_hash(store: Store) -> None:
    secret = new_secret()
    with Session(store.engine) as s, s.begin():
        s.add(_row("one", secret))
    with pytest.raises(IntegrityError), Session(store.engine) as s, s.begin():
        s.add(_row("two", secret))
