"""Runs started from a request: the run goes on in a thread of its own (a model call blocks),
and the request waits for it, streams its steps (and the text its models write, as they write
it), or answers with its id once it waits too long.
A run never depends on its request: a client that goes away leaves a run that ends as it would
have, recorded, to read with GET /v1/runs/{id}."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable

from flowcall.core import progress
from flowcall.core.steps import Run, RunStatus, Step, waiting_calls

_RUNS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="flowcall-api-run")
KEEP_ALIVE_S = 15.0
ENDED = {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}


async def in_thread(work: Callable[[], Any]) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_RUNS, work)


async def wait_for(work: Callable[[], Run], wait_s: float) -> Run | None:
    """The run `work` returns, or None when it takes longer than `wait_s` (it goes on)."""
    future = asyncio.get_running_loop().run_in_executor(_RUNS, work)
    try:
        return await asyncio.wait_for(asyncio.shield(future), wait_s)
    except asyncio.TimeoutError:
        return None


@dataclass(frozen=True)
class Written:
    """A piece of the text a model step is writing, as it comes: `step` is the number its
    record will have, `kind` model_call or polish. `again`: the step's call started over (a
    stream that broke off, tried again), so the text it had so far is void."""

    step: int
    kind: str
    text: str
    again: bool = False


class Relay:
    """A progress.Watcher in the run's thread: each piece of a model step's text, and each step
    record, handed to `post` in the order they happen."""

    def __init__(self, post: Callable[[Any], None]) -> None:
        self.post, self.last_seq, self.kind, self.open = post, 0, "", False

    def recorded(self, step: Step) -> None:
        self.last_seq = step.seq
        self.post(step)

    def started(self, kind: str, label: str) -> None:
        if self.open and kind == self.kind:  # the call started over (progress.restart)
            self.post(Written(self.last_seq + 1, kind, "", again=True))
        self.kind, self.open = kind, True

    def text(self, piece: str) -> None:
        self.post(Written(self.last_seq + 1, self.kind, piece))

    def ended(self) -> None:
        self.open = False


async def steps_then_run(
    work: Callable[[Callable[[Step], None]], Run], *, written: bool = False
) -> AsyncIterator[Step | Run | Written | None]:
    """Each step as `work` commits it, then the run; None now and then while nothing happens
    (for a keep-alive). With `written`, the run is watched, and the text its models write
    comes too, piece by piece (Written), before the step's record. An exception from `work`
    is raised here."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Step | Written] = asyncio.Queue()

    def post(item: Step | Written) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    def watched() -> Run:
        relay = Relay(post)
        with progress.watching(relay):
            return work(relay.recorded)

    future = loop.run_in_executor(_RUNS, watched if written else lambda: work(post))
    while True:
        getter = asyncio.ensure_future(queue.get())
        done, _ = await asyncio.wait(
            {getter, future}, timeout=KEEP_ALIVE_S, return_when=asyncio.FIRST_COMPLETED
        )
        if getter in done:
            yield getter.result()
            continue
        getter.cancel()
        if future in done:
            while not queue.empty():
                yield queue.get_nowait()
            yield future.result()
            return
        yield None


def waiting(run: Run) -> list[dict[str, Any]]:
    """What a paused run waits for, as the API shows it (steps.waiting_calls)."""
    return [
        {"call_id": s.tool_call_id, "tool": s.name, "arguments": s.arguments, "note": s.note}
        for s in waiting_calls(run)
    ]


def step_summary(step: Step) -> dict[str, Any]:
    return {
        "seq": step.seq,
        "kind": str(step.kind),
        "round": step.round,
        "name": step.name,
        "error_code": step.error_code,
        "latency_ms": round(step.latency_ms or 0.0, 1),
        "tokens_in": step.tokens_in,
        "tokens_out": step.tokens_out,
    }


def run_summary(run: Run, *, steps: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": run.id,
        "flow": run.flow_name,
        "status": str(run.status),
        "question": run.question,
        "answer": run.final_answer,
        "outcome": run.outcome,
        "outcome_reasons": run.outcome_reasons,
        "error": run.error,
        "started_at": run.started_at.isoformat(),
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "tokens_in": run.tokens_in,
        "tokens_out": run.tokens_out,
    }
    if steps:
        body["steps"] = [step_summary(s) for s in run.steps]
    if run.status == RunStatus.WAITING_APPROVAL:
        body["waiting"] = waiting(run)
    return body


def status_code(run: Run) -> int:
    """200 for a run that ended (whichever way), 202 for one that goes on or waits for a person."""
    return 200 if run.status in ENDED else 202


def sse(event: str, data: Any) -> str:
    """One Server-Sent Event. The data is JSON on one line: a newline in a question or an answer
    is escaped, so outside text can never end the event or forge another."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"
