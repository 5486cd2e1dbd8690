"""Stored model profiles: the last capability probe of each provider + model + base_url.

Kept beside the Store rather than in it: only the probe writes profiles and only the
profiled provider factory and the Models page read them.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from flowcall.core.model_profile import ModelProfile
from flowcall.store.models import ModelProfileRow
from flowcall.store.repository import Store


def _key(provider: str, model: str, base_url: str | None) -> tuple:
    # "" for no base URL: NULLs never collide in a unique constraint, so they would pile up
    return (
        ModelProfileRow.provider == provider,
        ModelProfileRow.model == model,
        ModelProfileRow.base_url == (base_url or ""),
    )


def save_profile(store: Store, profile: ModelProfile) -> None:
    """Insert, or replace the earlier probe of the same model."""
    data = profile.model_dump(mode="json")
    with Session(store.engine) as s, s.begin():
        row = s.scalars(
            select(ModelProfileRow).where(*_key(profile.provider, profile.model, profile.base_url))
        ).first()
        if row is None:
            s.add(
                ModelProfileRow(
                    provider=profile.provider,
                    model=profile.model,
                    base_url=profile.base_url or "",
                    profile=data,
                    probed_at=profile.probed_at,
                )
            )
        else:
            row.profile, row.probed_at = data, profile.probed_at


def get_profile(store: Store, provider: str, model: str, base_url: str | None = None) -> ModelProfile | None:
    with Session(store.engine) as s:
        row = s.scalars(select(ModelProfileRow).where(*_key(provider, model, base_url))).first()
        return ModelProfile.model_validate(row.profile) if row else None


def list_profiles(store: Store) -> list[ModelProfile]:
    """Newest probe first."""
    with Session(store.engine) as s:
        rows = s.scalars(select(ModelProfileRow).order_by(ModelProfileRow.probed_at.desc())).all()
        return [ModelProfile.model_validate(row.profile) for row in rows]
