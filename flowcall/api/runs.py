"""Flows and runs over REST: list, export and import flows; start a run (waiting for it,
streaming its steps and its models' text as Server-Sent Events, or on the workers); read,
resume and cancel runs."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, StreamingResponse

from flowcall.api.access import Caller, Slot, no_flow, no_run
from flowcall.api.context import ApiContext, api_of, caller
from flowcall.api.errors import CONFLICT, FORBIDDEN, ApiError
from flowcall.api.running import (
    Going,
    Written,
    in_thread,
    launch,
    run_summary,
    sse,
    status_code,
    steps_then_run,
    wait_for,
    waiting,
)
from flowcall.core.errors import ConfigError, NotFoundError
from flowcall.core.spec import parse_flow
from flowcall.core.steps import Run, RunStatus, Step
from flowcall.engine.approval import Decision
from flowcall.service import door
from flowcall.trust.approval_floor import ApprovalsLowered, check_approvals_kept
from flowcall.workers.here import HereDoor

router = APIRouter(prefix="/v1", tags=["flows and runs"])
MAX_VERSION = 2**31 - 1  # a version is a 32-bit integer in the store (PostgreSQL INTEGER)


class RunRequest(BaseModel):
    question: str = Field(min_length=1, max_length=20_000)
    version: int | None = Field(
        default=None, ge=1, le=MAX_VERSION, description="A version of the flow; default: the latest."
    )
    stream: bool = Field(
        default=False,
        description="Server-Sent Events: the text each model writes as it writes it, each step as "
        "it commits, then the run.",
    )
    queue: bool = Field(default=False, description="Hand the run to the workers (a broker must be set).")


class CallDecision(BaseModel):
    call_id: str
    action: Literal["approve", "deny", "edit"]
    arguments: dict[str, Any] | None = Field(default=None, description="The arguments to run with, for edit.")
    reason: str = Field(default="", max_length=2_000)


class ResumeRequest(BaseModel):
    decisions: list[CallDecision] = Field(default_factory=list, max_length=100)


@router.get("/flows")
def list_flows(who: Caller = Depends(caller), api: ApiContext = Depends(api_of)) -> list[dict[str, Any]]:
    return [
        {
            "name": f["name"],
            "version": f["version"],
            "description": f["description"],
            "updated_at": f["updated_at"].isoformat() if f["updated_at"] else None,
        }
        for f in api.service.list_flows()
        if who.allows(f["name"])
    ]


@router.get("/flows/{name}")
def export_flow(
    name: str,
    version: int | None = Query(default=None, ge=1, le=MAX_VERSION),
    who: Caller = Depends(caller),
    api: ApiContext = Depends(api_of),
) -> dict[str, Any]:
    """The flow's JSON, as `flowcall flows export` writes it."""
    return json.loads(_flow_for(api, who, name, version).to_json())


@router.post("/flows", status_code=201)
def import_flow(
    body: dict[str, Any] = Body(...), who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> dict[str, Any]:
    """Save a flow, as `flowcall flows import` does: a name taken by a different flow gets a new
    one (NAME-imported); a saved flow is never changed. Refused (403) when it would call,
    without asking, a tool that a saved flow asks a person about."""
    if who.flows is not None:
        raise ApiError(403, FORBIDDEN, "a key limited to some flows may not import flows")
    flow = parse_flow(json.dumps(body), source="the request body")
    api.service.registry.resolve(flow.plugin_refs())
    api.quota.check_flows(api.service, who)
    try:
        adopted = api.service.import_for_key(flow, who.api_key)
    except ApprovalsLowered as exc:
        raise ApiError(403, FORBIDDEN, str(exc)) from None
    pending = [item.summary for item, granted in api.service.trust_status(adopted.flow) if not granted]
    return {
        "name": adopted.flow.name,
        "version": adopted.version,
        "note": adopted.note,
        "needs_grant": pending,
    }


@router.post("/flows/{name}/runs", responses={202: {"description": "The run waits for a person, or goes on"}})
async def start_run(
    name: str, body: RunRequest, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> Any:
    """Run the flow on a question. Without `stream`, the answer comes when the run ends (200),
    or 202 with the run's id when it waits for a person or takes longer than the server waits."""
    flow = await run_in_threadpool(_startable, api, who, name, body.version)
    slot = await run_in_threadpool(take_slot, api, who)
    service, key = api.service, who.api_key
    if body.queue:
        try:
            workers = door.choose(service, None, queue=True)
            run = await in_thread(lambda: door.start_run(service, workers, flow, body.question, api_key=key))
        except BaseException:
            slot.release()
            raise
        # the run goes on in a worker: this thread follows it to its end, holding its slot
        going = launch(lambda on_step: service.follow(run.id, on_step=on_step), slot, watched=body.stream)
        return await _answer(api, going, body.stream, run.id)
    run_id = str(uuid.uuid4())
    going = launch(
        lambda on_step: door.start_run(
            service, HereDoor(service, on_step=on_step), flow, body.question, run_id=run_id, api_key=key
        ),
        slot,
        watched=body.stream,
    )
    return await _answer(api, going, body.stream, run_id)


@router.get("/runs")
def list_runs(
    flow: str | None = None,
    status: str | None = None,
    limit: int = Query(default=50, ge=1, le=500),
    since: datetime | None = None,
    until: datetime | None = None,
    model: str | None = None,
    text: str | None = None,
    who: Caller = Depends(caller),
    api: ApiContext = Depends(api_of),
) -> list[dict[str, Any]]:
    """Newest first, with the filters of `flowcall runs list`: the runs this key started."""
    if flow is not None and not who.allows(flow):
        return []  # as for a flow with no runs
    runs = api.service.list_runs(
        flow, status, limit, since=since, until=until, model=model, text=text, api_key=who.api_key
    )
    return [run_summary(r, steps=False) for r in runs if who.allows(r.flow_name)]


@router.get("/runs/{run_id}")
def get_run(run_id: str, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)) -> dict[str, Any]:
    """The run with every step, as the inspector shows it; `waiting` too, while a call waits
    for a person (what a client that polls decides on)."""
    run = _run_for(api, who, run_id)
    body = run.model_dump(mode="json")
    if run.status == RunStatus.WAITING_APPROVAL:
        body["waiting"] = waiting(run)
    return body


@router.post("/runs/{run_id}/resume", responses={202: {"description": "The run waits again, or goes on"}})
async def resume_run(
    run_id: str, body: ResumeRequest, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> Any:
    """Go on with a run that waits for a person: approve, deny (with a reason) or edit each
    waiting call by its id. A call left out keeps waiting."""
    run = await run_in_threadpool(_run_for, api, who, run_id)
    decided = {
        d.call_id: Decision(action=d.action, arguments=d.arguments, reason=d.reason, by=f"API key {who.name}")
        for d in body.decisions
    }

    def resume() -> Run:
        here = HereDoor(api.service)
        try:
            here.continue_with(run.id, lambda call, tool: decided.get(call.id))
        except ConfigError as exc:  # not waiting, or another resumer has it
            raise ApiError(409, CONFLICT, str(exc)) from None
        return here.ended[run.id]

    slot = await run_in_threadpool(take_slot, api, who, stores=False)
    return await _answer(api, launch(lambda _: resume(), slot), False, run.id)


@router.post("/runs/{run_id}/cancel")
def cancel_run(
    run_id: str, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> dict[str, Any]:
    run = _run_for(api, who, run_id)
    return run_summary(api.service.cancel(run.id, by=f"API key {who.name}"))


def _flow_for(api: ApiContext, who: Caller, name: str, version: int | None) -> Any:
    """The saved flow, if the caller may use it: a flow it may not use is answered exactly as
    one that does not exist (no_flow), and neither lists the flows there are."""
    who.require(name)
    try:
        flow, _, _ = api.service.get_flow(name)
    except NotFoundError:
        raise no_flow(name) from None
    if version is not None:  # the caller may see this flow, so its versions too
        flow, _, _ = api.service.get_flow(name, version)
    return flow


def _run_for(api: ApiContext, who: Caller, run_id: str) -> Run:
    """The run with exactly this id (never a prefix: it would be an oracle), if the caller
    started it (a key sees its own runs; the no-auth caller every run): else no_run, the same
    answer as for an id no run has."""
    run = api.service.find_run(run_id, api_key=who.api_key)
    if run is None or not who.allows(run.flow_name):
        raise no_run(run_id)
    return run


def _startable(api: ApiContext, who: Caller, name: str, version: int | None) -> Any:
    """The saved flow, refused (409) before anything starts when it would start or reach
    something nobody granted, exactly as `flowcall run` refuses it; an older version, refused
    (403) when it would call without asking a tool the latest asks a person about."""
    flow = _flow_for(api, who, name, version)
    if version is not None:
        latest = api.service.get_flow(name)[0]
        advice = f"run the latest version of {name!r}, which asks"
        try:
            check_approvals_kept(flow, [latest], advice=advice)
        except ApprovalsLowered as exc:
            raise ApiError(403, FORBIDDEN, str(exc)) from None
    api.service.registry.resolve(flow.plugin_refs())
    api.service.require_trust(flow)
    return flow


def take_slot(api: ApiContext, who: Caller, *, stores: bool = True) -> Slot:
    """A place for one more run of this caller (429 past the key's or the server's limit),
    after its storage quota (429) when the run `stores` a new one."""
    if stores:
        api.quota.check_runs(api.service, who)
    return api.limits.start_run(who)


async def _answer(api: ApiContext, going: Going, stream: bool, run_id: str) -> Any:
    """The run as the request asked for it: a stream of its steps, or its summary when it ends
    (202 with its id when it waits longer than the server waits). Either way the run holds its
    place in the limits until it ends (running.launch)."""
    if stream:
        return StreamingResponse(
            _events(going),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    run = await wait_for(going, api.settings.wait_s)
    if run is None:
        return JSONResponse(
            {"id": run_id, "status": "running", "follow": f"/v1/runs/{run_id}"}, status_code=202
        )
    return JSONResponse(run_summary(run), status_code=status_code(run))


def _again(written: Written) -> dict[str, bool]:
    return {"again": True} if written.again else {}


async def _events(going: Going) -> Any:
    """The run's events: `text` as a model writes (from this server's own runs; a run on the
    workers sends its steps only), `step` as each step commits, then `run`; or `error`."""
    try:
        async for item in steps_then_run(going):
            if item is None:
                yield ": keep-alive\n\n"
            elif isinstance(item, Written):
                yield sse("text", {"step": item.step, "kind": item.kind, "text": item.text, **_again(item)})
            elif isinstance(item, Step):
                yield sse("step", item.model_dump(mode="json"))
            else:
                yield sse("run", run_summary(item))
    except ApiError as exc:
        yield sse("error", {"code": exc.code, "message": exc.message})
    except Exception as exc:  # noqa: BLE001 - the stream has started: the error goes in it
        yield sse("error", {"code": "INTERNAL", "message": f"the run could not go on ({type(exc).__name__})"})
