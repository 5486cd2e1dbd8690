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

from flowcall.api.access import Caller
from flowcall.api.context import ApiContext, api_of, caller
from flowcall.api.errors import CONFLICT, FORBIDDEN, ApiError
from flowcall.api.running import Written, in_thread, run_summary, sse, status_code, steps_then_run, wait_for
from flowcall.core.errors import ConfigError
from flowcall.core.spec import parse_flow
from flowcall.core.steps import Run, Step
from flowcall.engine.approval import Decision

router = APIRouter(prefix="/v1", tags=["flows and runs"])


class RunRequest(BaseModel):
    question: str = Field(min_length=1, max_length=20_000)
    version: int | None = Field(default=None, ge=1, description="A version of the flow; default: the latest.")
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
        for f in api.service.store.list_flows()
        if who.allows(f["name"])
    ]


@router.get("/flows/{name}")
def export_flow(
    name: str,
    version: int | None = Query(default=None, ge=1),
    who: Caller = Depends(caller),
    api: ApiContext = Depends(api_of),
) -> dict[str, Any]:
    """The flow's JSON, as `flowcall flows export` writes it."""
    who.require(name)
    flow, _, _ = api.service.store.get_flow(name, version)
    return json.loads(flow.to_json())


@router.post("/flows", status_code=201)
def import_flow(
    body: dict[str, Any] = Body(...), who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> dict[str, Any]:
    """Save a flow, as `flowcall flows import` does: a name taken by a different flow gets a new
    one (NAME-imported); a saved flow is never changed."""
    if who.flows is not None:
        raise ApiError(403, FORBIDDEN, "a key limited to some flows may not import flows")
    flow = parse_flow(json.dumps(body), source="the request body")
    api.service.registry.resolve(flow.plugin_refs())
    adopted = api.service.adopt(flow)
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
    who.require(name)
    flow = await run_in_threadpool(_startable, api, name, body.version)
    service = api.service
    if body.queue:
        run = await in_thread(lambda: service.run_queued(flow, body.question))
        return await _answer(
            api,
            who,
            lambda on_step: service.follow(run.id, on_step=on_step),
            body.stream,
            lambda: service.follow(run.id, timeout_s=api.settings.wait_s),
            run.id,
        )
    run_id = str(uuid.uuid4())
    return await _answer(
        api,
        who,
        lambda on_step: service.run(flow, body.question, on_step=on_step, run_id=run_id),
        body.stream,
        lambda: service.run(flow, body.question, run_id=run_id),
        run_id,
    )


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
    """Newest first, with the filters of `flowcall runs list`."""
    if flow is not None:
        who.require(flow)
    runs = api.service.store.list_runs(flow, status, limit, since=since, until=until, model=model, text=text)
    return [run_summary(r, steps=False) for r in runs if who.allows(r.flow_name)]


@router.get("/runs/{run_id}")
def get_run(run_id: str, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)) -> dict[str, Any]:
    """The run with every step, as the inspector shows it."""
    run = api.service.store.get_run(run_id)
    who.require(run.flow_name)
    return run.model_dump(mode="json")


@router.post("/runs/{run_id}/resume", responses={202: {"description": "The run waits again, or goes on"}})
async def resume_run(
    run_id: str, body: ResumeRequest, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> Any:
    """Go on with a run that waits for a person: approve, deny (with a reason) or edit each
    waiting call by its id. A call left out keeps waiting."""
    run = await run_in_threadpool(api.service.store.get_run, run_id)
    who.require(run.flow_name)
    decided = {
        d.call_id: Decision(action=d.action, arguments=d.arguments, reason=d.reason, by=f"API key {who.name}")
        for d in body.decisions
    }

    def resume() -> Run:
        try:
            return api.service.resume(run.id, approver=lambda call, tool: decided.get(call.id))
        except ConfigError as exc:  # not waiting, or another resumer has it
            raise ApiError(409, CONFLICT, str(exc)) from None

    return await _answer(api, who, None, False, resume, run.id)


@router.post("/runs/{run_id}/cancel")
def cancel_run(
    run_id: str, who: Caller = Depends(caller), api: ApiContext = Depends(api_of)
) -> dict[str, Any]:
    run = api.service.store.get_run(run_id)
    who.require(run.flow_name)
    return run_summary(api.service.cancel(run.id, by=f"API key {who.name}"))


def _startable(api: ApiContext, name: str, version: int | None) -> Any:
    """The saved flow, refused (409) before anything starts when it would start or reach
    something nobody granted, exactly as `flowcall run` refuses it."""
    flow, _, _ = api.service.store.get_flow(name, version)
    api.service.registry.resolve(flow.plugin_refs())
    api.service.require_trust(flow)
    return flow


async def _answer(
    api: ApiContext, who: Caller, streamed: Any, stream: bool, blocking: Any, run_id: str | None = None
) -> Any:
    """The run as the request asked for it: a stream of its steps, or its summary when it ends
    (202 with its id when it waits longer than the server waits). The key's concurrency limit
    holds while the run goes on."""
    api.limits.start_run(who)
    if stream:
        return StreamingResponse(
            _events(api, who, streamed),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    try:
        run = await wait_for(blocking, api.settings.wait_s)
    finally:
        api.limits.end_run(who)
    if run is None:
        return JSONResponse(
            {"id": run_id, "status": "running", "follow": f"/v1/runs/{run_id}"}, status_code=202
        )
    return JSONResponse(run_summary(run), status_code=status_code(run))


def _again(written: Written) -> dict[str, bool]:
    return {"again": True} if written.again else {}


async def _events(api: ApiContext, who: Caller, work: Any) -> Any:
    """The run's events: `text` as a model writes (from this server's own runs; a run on the
    workers sends its steps only), `step` as each step commits, then `run`; or `error`."""
    try:
        async for item in steps_then_run(work, written=True):
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
    finally:
        api.limits.end_run(who)
