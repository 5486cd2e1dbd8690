"""The ASGI app `flowcall serve` runs: the routes, their errors, and the guard in front."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from functools import partial
from typing import Any

from fastapi import FastAPI

from flowcall.api import chat, errors, runs
from flowcall.api.access import Limits, Quota
from flowcall.api.context import ApiContext, Settings, authenticate
from flowcall.api.guard import Guard

SETTINGS_VARIABLE = "FLOWCALL_API_SETTINGS"  # how `serve --workers N` hands its settings to each worker


def create_app(service: Any, settings: Settings) -> Any:
    app = FastAPI(
        title="FlowCall",
        version="1",
        summary="Run FlowCall flows over HTTP",
        description="Every request needs `Authorization: Bearer <key>` (`flowcall keys create NAME`).",
    )
    limits = Limits(settings.rate, settings.burst, settings.concurrent, settings.concurrent_all)
    api = ApiContext(service, settings, limits, Quota(settings.quota_runs, settings.quota_flows))
    app.state.api = api
    errors.install(app)
    app.include_router(runs.router)
    app.include_router(chat.router)
    return Guard(
        app,
        host=settings.host,
        max_body=settings.max_body,
        authenticate=partial(authenticate, api),
        allow_hosts=settings.allow_hosts,
        allow_origins=settings.allow_origins,
    )


def settings_to_env(settings: Settings, database_url: str | None) -> None:
    os.environ[SETTINGS_VARIABLE] = json.dumps({**asdict(settings), "database_url": database_url})


def app_from_env() -> Any:
    """Each uvicorn worker's app (`uvicorn --factory flowcall.api.app:app_from_env`)."""
    from flowcall.service.front import FlowCall

    data = json.loads(os.environ[SETTINGS_VARIABLE])
    database_url = data.pop("database_url")
    data["allow_hosts"], data["allow_origins"] = tuple(data["allow_hosts"]), tuple(data["allow_origins"])
    return create_app(FlowCall.open(database_url), Settings(**data))
