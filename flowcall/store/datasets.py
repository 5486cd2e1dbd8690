"""Stored datasets, versioned as flows are: importing changed items under a name adds a version,
importing the same items again keeps the latest one. Kept beside the Store, like profiles.py:
only the datasets and experiments commands (and later their page) use them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from flowcall.core.datasets import DatasetItem, check_name, content_hash
from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.store.models import DatasetItemRow, DatasetRow, DatasetVersionRow
from flowcall.store.repository import Store


@dataclass
class StoredDataset:
    name: str
    version: int
    version_id: int
    content_hash: str
    source: str
    created_at: datetime
    items: list[DatasetItem]


@dataclass
class Saved:
    version: int
    version_id: int
    created: bool  # False: the latest version already held exactly these items


def save_dataset(store: Store, name: str, items: list[DatasetItem], source: str) -> Saved:
    """Store `items` under `name` as a new version unless they equal the latest version's."""
    check_name(name)
    if not items:
        raise ConfigError(f"dataset {name!r} would have no items; nothing was stored")
    try:
        return _save(store, name, items, source)
    except IntegrityError:  # another process saved under this name at the same moment: again, on its result
        return _save(store, name, items, source)


def _save(store: Store, name: str, items: list[DatasetItem], source: str) -> Saved:
    digest = content_hash(items)
    with Session(store.engine) as s, s.begin():
        dataset = s.scalar(select(DatasetRow).where(DatasetRow.name == name))
        if dataset is None:
            dataset = DatasetRow(name=name)
            s.add(dataset)
            s.flush()
        latest = s.scalar(
            select(DatasetVersionRow)
            .where(DatasetVersionRow.dataset_id == dataset.id)
            .order_by(DatasetVersionRow.version.desc())
            .limit(1)
        )
        if latest is not None and latest.content_hash == digest:
            return Saved(latest.version, latest.id, created=False)
        row = DatasetVersionRow(
            dataset_id=dataset.id,
            version=latest.version + 1 if latest else 1,
            content_hash=digest,
            item_count=len(items),
            source=source[:500],
        )
        s.add(row)
        s.flush()
        s.execute(
            insert(DatasetItemRow),
            [
                {"version_id": row.id, "position": position, "item": item.dump()}
                for position, item in enumerate(items)
            ],
        )
        return Saved(row.version, row.id, created=True)


def _version_row(s: Session, name: str, version: int | None) -> DatasetVersionRow:
    dataset_id = s.scalar(select(DatasetRow.id).where(DatasetRow.name == name))
    if dataset_id is None:
        known = ", ".join(s.scalars(select(DatasetRow.name).order_by(DatasetRow.name))) or "none yet"
        raise NotFoundError(
            f"no dataset named {name!r}; known datasets: {known} "
            "(import one with `flowcall datasets import FILE --name NAME`)"
        )
    query = select(DatasetVersionRow).where(DatasetVersionRow.dataset_id == dataset_id)
    row = s.scalar(
        query.order_by(DatasetVersionRow.version.desc()).limit(1)
        if version is None
        else query.where(DatasetVersionRow.version == version)
    )
    if row is None:
        versions = list(
            s.scalars(
                select(DatasetVersionRow.version)
                .where(DatasetVersionRow.dataset_id == dataset_id)
                .order_by(DatasetVersionRow.version)
            )
        )
        raise NotFoundError(f"dataset {name!r} has no version {version}; it has versions {versions}")
    return row


def _items(s: Session, version_id: int) -> list[DatasetItem]:
    rows = s.scalars(
        select(DatasetItemRow.item)
        .where(DatasetItemRow.version_id == version_id)
        .order_by(DatasetItemRow.position)
    )
    return [DatasetItem.model_validate(item) for item in rows]


def get_dataset(store: Store, name: str, version: int | None = None) -> StoredDataset:
    """The latest (or the given) version of a dataset, with its items in order."""
    with Session(store.engine) as s:
        row = _version_row(s, name, version)
        return StoredDataset(
            name, row.version, row.id, row.content_hash, row.source, row.created_at, _items(s, row.id)
        )


def get_version(store: Store, version_id: int) -> StoredDataset:
    """A dataset version by its id (experiments point at one)."""
    with Session(store.engine) as s:
        row = s.get(DatasetVersionRow, version_id)
        if row is None:
            raise NotFoundError(f"dataset version {version_id} does not exist")
        name = s.scalar(select(DatasetRow.name).where(DatasetRow.id == row.dataset_id))
        return StoredDataset(
            name, row.version, row.id, row.content_hash, row.source, row.created_at, _items(s, row.id)
        )


def dataset_item(store: Store, version_id: int, position: int) -> DatasetItem:
    """One item of a dataset version: what a run of an experiment is scored against."""
    with Session(store.engine) as s:
        item = s.scalar(
            select(DatasetItemRow.item).where(
                DatasetItemRow.version_id == version_id, DatasetItemRow.position == position
            )
        )
    if item is None:
        raise NotFoundError(f"dataset version {version_id} has no item {position + 1}")
    return DatasetItem.model_validate(item)


def list_datasets(store: Store) -> list[dict[str, Any]]:
    """One entry per dataset, by name: name, version (the latest), items, source, updated_at."""
    latest = (
        select(DatasetVersionRow.dataset_id, func.max(DatasetVersionRow.version).label("version"))
        .group_by(DatasetVersionRow.dataset_id)
        .subquery()
    )
    query = (
        select(DatasetRow.name, DatasetVersionRow)
        .join(latest, latest.c.dataset_id == DatasetRow.id)
        .join(
            DatasetVersionRow,
            (DatasetVersionRow.dataset_id == DatasetRow.id) & (DatasetVersionRow.version == latest.c.version),
        )
        .order_by(DatasetRow.name)
    )
    with Session(store.engine) as s:
        return [
            {
                "name": name,
                "version": row.version,
                "items": row.item_count,
                "source": row.source,
                "updated_at": row.created_at,
            }
            for name, row in s.execute(query)
        ]
