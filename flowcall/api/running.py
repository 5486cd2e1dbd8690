"""Runs started from a request: the run goes on in a thread of its own (a model call blocks),
and the request waits for it, streams its steps (and the text its models write, as they write
it), or answers with its id once it waits too long.
A run never depends on its request: a client that goes away leaves a run that ends as it would
have, recorded, to read with GET /v1/runs/{id}. So the run, not the request, holds its place
in the limits (access.Slot): the thread that runs it gives it back when it ends."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable

from flowcall.api.access import Slot
from flowcall.core import progress
from flowcall.core.steps import Run, RunStatus, Step, waiting_calls

_RUNS = ThreadPoolExecutor(max_workers=64, thread_name_prefix="flowcall-api-run")
KEEP_ALIVE_S = 15.0
ENDED = {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED}


async def in_thread(work: Callable[[], Any]) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_RUNS, work)


# A run's work: given a callback for each step it commits (None: nobody watches), the run.
Work = Callable[[Callable[[Step], None] | None], Run]


@dataclass(frozen=True)
class Going:
    """A run going on in its own thread (launch): its end, and what it posts as it goes."""

    future: asyncio.Future[Run]
    queue: asyncio.Queue[Step | Written]


def launch(work: Work, slot: Slot, *, watched: bool = False) -> Going:
    """Start `work` in a thread now, holding `slot` until it returns or raises: the thread gives
    it back, so a client that hangs up or a request that stops waiting leaves the run counted
    for as long as it goes. `watched` (a stream): each step, and each piece of the text its
    models write (Written), is posted to the queue as it happens."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Step | Written] = asyncio.Queue()

    def post(item: Step | Written) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, item)

    def held() -> Run:
        try:
            if not watched:
                return work(None)
            relay = Relay(post)
            with progress.watching(relay):
                return work(relay.recorded)
        finally:
            slot.release()

    try:
        future = loop.run_in_executor(_RUNS, held)
    except BaseException:
        slot.release()
        raise
    future.add_done_callback(_retrieved)  # nobody may be left to read its error: no warning then
    return Going(future, queue)


def _retrieved(future: asyncio.Future[Run]) -> None:
    if not future.cancelled():
        future.exception()


async def wait_for(going: Going, wait_s: float) -> Run | None:
    """The run, or None when it takes longer than `wait_s` (it goes on). An exception from its
    work is raised here."""
    try:
        return await asyncio.wait_for(asyncio.shield(going.future), wait_s)
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


async def steps_then_run(going: Going) -> AsyncIterator[Step | Run | Written | None]:
    """Each step of a watched run (launch) as it commits, and the text its models write, piece
    by piece (Written), before the step's record; then the run. None now and then while
    nothing happens (for a keep-alive). An exception from its work is raised here."""
    future, queue = going.future, going.queue
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


# Every character some client ends a line on (str.splitlines, JavaScript's line readers),
# as a JSON escape. json.dumps escapes the control characters but leaves U+0085, U+2028 and
# U+2029 raw; without indent it writes none of these outside a string, and inside one the
# escape means the same character.
_LINE_BREAKS = str.maketrans({c: f"\\u{ord(c):04x}" for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def data_line(data: Any) -> str:
    """The `data:` line that ends a Server-Sent Event: `data` as JSON with no line break in it
    for any client, so outside text can never cut the line, end the event or forge another."""
    text = json.dumps(data, ensure_ascii=False, default=str).translate(_LINE_BREAKS)
    return f"data: {text}\n\n"


def sse(event: str, data: Any) -> str:
    """One Server-Sent Event (data_line)."""
    return f"event: {event}\n{data_line(data)}"
