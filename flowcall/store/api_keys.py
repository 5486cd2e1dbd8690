"""Stored keys to the HTTP API: a row per key with its SHA-256 and first characters, never the
key (flowcall/trust/api_keys.py makes keys and says why a fast hash is right). Kept beside the Store,
like datasets.py: only the keys commands, the API page and the API server use them."""

from __future__ import annotations

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.steps import utcnow
from flowcall.store.models import ApiKeyRow
from flowcall.store.repository import Store
from flowcall.trust.api_keys import SECRET_PREFIX, ApiKey


def _record(row: ApiKeyRow) -> ApiKey:
    return ApiKey(
        name=row.name,
        prefix=row.prefix,
        flows=row.flows,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )


def _name_taken(name: str) -> ConfigError:
    return ConfigError(
        f"a key named {name!r} exists and is not revoked; choose another name, or revoke it first "
        f"with `flowcall keys revoke {name!r}`"
    )


def add_key(store: Store, name: str, prefix: str, key_hash: str, flows: list[str] | None) -> ApiKey:
    """Store a new key by its hash; ConfigError if a key not revoked has this name."""
    try:
        with Session(store.engine) as s, s.begin():
            if s.scalar(select(ApiKeyRow.id).where(ApiKeyRow.name == name, ApiKeyRow.revoked_at.is_(None))):
                raise _name_taken(name)
            row = ApiKeyRow(name=name, prefix=prefix, key_hash=key_hash, flows=flows, created_at=utcnow())
            s.add(row)
            s.flush()
            return _record(row)
    except IntegrityError as exc:  # another process took the name at the same moment
        raise _name_taken(name) from exc


def list_keys(store: Store) -> list[ApiKey]:
    """Every key, revoked ones too, oldest first."""
    with Session(store.engine) as s:
        return [
            _record(row) for row in s.scalars(select(ApiKeyRow).order_by(ApiKeyRow.created_at, ApiKeyRow.id))
        ]


def revoke_keys(store: Store, name_or_prefix: str) -> list[ApiKey]:
    """Revoke the key in use with this name; if none has it, those whose prefix this is (as
    `keys list` shows it, with or without "fc_"). NotFoundError, saying what there is, if none."""
    given = name_or_prefix.strip()
    prefix = given.removeprefix(SECRET_PREFIX)
    active = ApiKeyRow.revoked_at.is_(None)
    with Session(store.engine) as s, s.begin():
        rows = list(s.scalars(select(ApiKeyRow).where(ApiKeyRow.name == given, active).with_for_update()))
        if not rows and prefix:
            rows = list(
                s.scalars(
                    select(ApiKeyRow)
                    .where(ApiKeyRow.prefix == prefix, active)
                    .order_by(ApiKeyRow.id)
                    .with_for_update()
                )
            )
        if not rows:
            raise _nothing_to_revoke(s, given, or_(ApiKeyRow.name == given, ApiKeyRow.prefix == prefix))
        now = utcnow()
        for row in rows:
            row.revoked_at = now
        return [_record(row) for row in rows]


def _nothing_to_revoke(s: Session, given: str, matches: ColumnElement[bool]) -> NotFoundError:
    if s.scalar(select(ApiKeyRow.id).where(matches).limit(1)) is not None:
        return NotFoundError(f"the key {given!r} is already revoked; `flowcall keys list` shows every key")
    active = [
        f"{name} (fc_{prefix})"
        for name, prefix in s.execute(
            select(ApiKeyRow.name, ApiKeyRow.prefix)
            .where(ApiKeyRow.revoked_at.is_(None))
            .order_by(ApiKeyRow.name)
        )
    ]
    return NotFoundError(
        f"no key is named {given!r} or has that prefix; keys in use: {', '.join(active) or 'none'}"
    )


def find_key(store: Store, key_hash: str) -> ApiKey | None:
    """The key with this hash, revoked or not; None if there is none."""
    with Session(store.engine) as s:
        row = s.scalar(select(ApiKeyRow).where(ApiKeyRow.key_hash == key_hash))
        return _record(row) if row is not None else None
