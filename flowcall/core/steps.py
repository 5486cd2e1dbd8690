"""Step and run records: what the engine emits and the store keeps.

A step is one event of a run (a model call, a tool call, an error) with everything needed
to replay it. The engine hands each step to a `StepSink` when it ends, with the loop's state
when it changed, in one transaction: a crash loses at most the step in flight, and the run
can go on from its last committed step (`flowcall runs resume`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Callable, Literal, Protocol

from pydantic import BaseModel, Field


def utcnow() -> datetime:
    return datetime.now(UTC)


class StepKind(StrEnum):
    MODEL_CALL = "model_call"  # the decision model
    TOOL_CALL = "tool_call"
    APPROVAL = "approval"
    POLISH = "polish"  # the polish model
    ERROR = "error"
    WARNING = "warning"  # worth a person's look, e.g. a tool whose definition changed since it was accepted


class RunStatus(StrEnum):
    QUEUED = "queued"  # recorded, not started: whoever executes it claims it by its id (service.execute)
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    WAITING_APPROVAL = "waiting_approval"  # paused until a person approves, denies or edits a call
    CANCELLED = "cancelled"  # stopped by a person (Stop, `runs cancel`, Ctrl-C)
    # never stored: a `running` run whose owner is gone (its process died, or its lease ran
    # out on another host) reads as interrupted, and can be resumed
    INTERRUPTED = "interrupted"


class Step(BaseModel):
    run_id: str
    seq: int
    kind: StepKind
    round: int = 0
    name: str | None = None  # tool name, or provider/model for model calls
    calling_way: str | None = None
    note: str | None = None  # e.g. which stage of a two-stage way, or why auto fell back
    request: dict[str, Any] | None = None  # literal wire request, secrets redacted
    response: dict[str, Any] | None = None  # raw wire response
    rendered_prompt: str | None = None
    tool_calls: list[dict[str, Any]] | None = None  # parsed calls of a model step
    tool_call_id: str | None = None
    arguments: dict[str, Any] | None = None
    result: Any = None
    error_code: str | None = None
    error_message: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    retries: list[dict[str, Any]] = Field(default_factory=list)
    request_id: str | None = None
    trace_id: str | None = None
    started_at: datetime = Field(default_factory=utcnow)
    ended_at: datetime = Field(default_factory=utcnow)


class ChatTurn(BaseModel):
    """An earlier message of the chat a question comes from (a flow with `conversation`)."""

    role: Literal["user", "assistant"]
    content: str = Field(max_length=20_000)


class Run(BaseModel):
    id: str
    flow_name: str
    flow_version_id: int | None = None
    question: str
    # the chat before the question, read by the decision model before it (Flow.conversation)
    context: list[ChatTurn] = Field(default_factory=list, max_length=100)
    status: RunStatus = RunStatus.RUNNING
    final_answer: Any = None
    error: str | None = None
    trace_id: str
    started_at: datetime = Field(default_factory=utcnow)  # a queued run: when it was claimed
    ended_at: datetime | None = None
    queued_at: datetime | None = None  # set for a run recorded before it ran (service.submit)
    # which process runs it ("host/pid/start") and until when it holds the run unless renewed
    owner: str | None = None
    lease_until: datetime | None = None
    # how far the answer is backed by tools: None when tool results back every part of it (or the
    # flow allows answers without tools), ANSWERED_WITHOUT_TOOLS when no tool result backs it,
    # PARTLY_DONE when some part of the request got none (outcome_reasons say which)
    outcome: str | None = None
    outcome_reasons: list[str] = Field(default_factory=list)
    # where each value of the answer came from (provenance.trace): a tool result, the question,
    # or the model alone
    provenance: list[dict[str, Any]] | None = None
    # a sub-flow's run: the run whose tool call started it, and that call (engine/subflows.py)
    parent_run_id: str | None = None
    parent_call_id: str | None = None
    steps: list[Step] = Field(default_factory=list)

    @property
    def tokens_in(self) -> int:
        return sum(s.tokens_in for s in self.steps if not is_reused(s))

    @property
    def tokens_out(self) -> int:
        return sum(s.tokens_out for s in self.steps if not is_reused(s))


# How the note of an approval step that still waits for a person begins (approval.py)
WAITING_PREFIX = "waiting for a person"


def waiting_calls(run: Run) -> list[Step]:
    """The calls a paused run waits on, in the order they were asked: each call whose latest
    approval step still says it waits (a call answered on an earlier resume has a later step
    with the decision). The one rule the API, the studio and the pages share.

    A sub-flow call that waits stands for its run's waiting calls (kept in its step's result
    when the parent paused): they are listed instead, named `<sub-flow> › <tool>`, with their
    own call ids, which is what an approver answers when the parent is resumed."""
    latest: dict[str, Step] = {}
    for step in run.steps:
        if step.kind == StepKind.APPROVAL and step.tool_call_id:
            latest[step.tool_call_id] = step
    waiting = [s for s in latest.values() if (s.note or "").startswith(WAITING_PREFIX)]
    return [call for step in waiting for call in _sub_flow_calls(step) or [step]]


def _sub_flow_calls(step: Step) -> list[Step]:
    """The waiting calls of the sub-flow run a waiting step stands for (none: a call of its own)."""
    result = step.result if isinstance(step.result, dict) else {}
    listed = result.get(SUB_RUN) and result.get("waiting")
    if not isinstance(listed, list):
        return []
    return [
        step.model_copy(
            update={
                "name": f"{step.name} › {call.get('tool')}",
                "tool_call_id": call.get("call_id"),
                "arguments": call.get("arguments"),
                "note": call.get("note"),
                "result": None,
            }
        )
        for call in listed
        if isinstance(call, dict) and isinstance(call.get("call_id"), str)
    ]


# the key under which a sub-flow call's step names the run it started (its response; the
# result of its waiting step)
SUB_RUN = "child_run_id"


ANSWERED_WITHOUT_TOOLS = "answered_without_tools"
# some parts of the request got a tool result and some did not, or the answer says an action
# was done that no tool call did (claims.py): the reasons say which
PARTLY_DONE = "partly_done"


class RunCancelled(Exception):
    """The run was cancelled (or taken over by a resumer) while this process ran it: stop."""


StepCallback = Callable[["Step"], None]  # told of each step as it is recorded (a live view)


class StepSink(Protocol):
    """Where a run's records go. The store implements it; tests may collect in memory.

    `state` is the loop's checkpoint (loop_state.LoopState) when it changed since the last
    commit; it is committed with the steps, so steps and state never disagree."""

    def run_started(self, run: Run) -> None: ...

    def steps_recorded(self, steps: list[Step], state: dict[str, Any] | None = None) -> None: ...

    def state_saved(self, run: Run, state: dict[str, Any]) -> None: ...

    def run_finished(self, run: Run) -> bool: ...

    def run_paused(self, run: Run, checkpoint: dict[str, Any]) -> None: ...

    def run_resumed(self, run: Run) -> None: ...

    def run_cancelled(self, run: Run, reason: str) -> None: ...


class MemorySink:
    """Keeps nothing beyond the Run object and runs' last states: for tests and benchmarks."""

    def __init__(self) -> None:
        self.checkpoints: dict[str, dict[str, Any]] = {}

    def run_paused(self, run: Run, checkpoint: dict[str, Any]) -> None:
        self.checkpoints[run.id] = checkpoint

    def run_resumed(self, run: Run) -> None:
        pass

    def run_started(self, run: Run) -> None:
        pass

    def steps_recorded(self, steps: list[Step], state: dict[str, Any] | None = None) -> None:
        if steps and state is not None:
            self.checkpoints[steps[0].run_id] = state

    def step_recorded(self, step: Step) -> None:
        self.steps_recorded([step])

    def state_saved(self, run: Run, state: dict[str, Any]) -> None:
        self.checkpoints[run.id] = state

    def run_finished(self, run: Run) -> bool:
        self.checkpoints.pop(run.id, None)
        return True

    def run_cancelled(self, run: Run, reason: str) -> None:
        self.checkpoints.pop(run.id, None)


REUSED_NOTE = "reused from run "  # in the note of a step a re-run took over from the run it re-ran (rerun.py)


def is_reused(step: Step) -> bool:
    """A step a re-run took over: it shows its tokens, but the earlier run spent them."""
    return REUSED_NOTE in (step.note or "")
