"""A flow as a tool of another flow: the sub-flow's run, started, found again, or resumed.

A call of a sub-flow tool (tools/sources/flow.py) runs the sub-flow as a run of its own, in
the same store, with the same consent, linked both ways: the child run names its parent run
and the call (Run.parent_run_id, parent_call_id), and the parent's tool step names the child
run (its response's `child_run_id`). The child's id comes from the parent run's id and the
call's id (`child_run_id`), so asking again finds the same run instead of starting another: a
parent that goes on after a pause or a crash gets the child's answer if it ended, and resumes
it if it waits or was interrupted. Nothing runs twice.

Sub-flow calls run first in their round, before the round's other calls (`run_first`), so a
child that waits for a person pauses the parent before anything else of the round ran: the
parent waits with that call pending, and its waiting step lists the child's waiting calls
(steps.waiting_calls shows those). Resuming the parent calls the sub-flow again, which resumes
the child with the same approver; its answer then goes to the parent's model.

At most MAX_DEPTH sub-flows run inside each other; a flow already on the chain is refused
(saving refuses such a flow first: tools/sources/flow.check_chain).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, replace
from typing import Any, Protocol

from flowcall.core.errors import ConfigError, ErrorCode, FlowCallError
from flowcall.core.messages import ToolCall
from flowcall.core.spec import Flow
from flowcall.core.steps import SUB_RUN, WAITING_PREFIX, Run, RunCancelled, RunStatus, StepKind, waiting_calls
from flowcall.engine.approval import Approver, Decision
from flowcall.engine.phases import Paused, Scope
from flowcall.engine.replay import replay_factory
from flowcall.tools.execute import CallOutcome, cap_result, check_call

MAX_DEPTH = 4  # sub-flows inside sub-flows, at most
_NAMESPACE = uuid.UUID("5b0c1f6e-8d7a-4f0e-9a51-3c2b7d4e6f10")  # of sub-flow run ids


class FlowRecords(Protocol):
    """What the engine reads to run sub-flows: stored flow versions and runs (the Store)."""

    def get_flow(self, name: str, version: int | None = None) -> tuple[Flow, int, int]: ...

    def get_flow_version(self, version_id: int) -> Flow: ...

    def find_run(self, run_id: str) -> Run | None: ...

    def get_checkpoint(self, run_id: str) -> dict[str, Any] | None: ...


class Engine(Protocol):
    """What running a sub-flow needs of the parent's engine (loop.Engine): its parts, to build one
    like it a level down, and its way to run or resume a flow. A protocol, so this module does
    not import the loop that imports it."""

    registry: Any
    provider_for: Any
    sink: Any
    grants: Any
    subflows: SubFlows | None

    def run(self, flow: Flow, question: str, **options: Any) -> Run: ...

    def resume(self, run: Run, flow: Flow, checkpoint: dict[str, Any] | None, **options: Any) -> Run: ...


@dataclass(frozen=True)
class SubFlows:
    """Handed to an Engine so its runs can run sub-flows. `replaying`: the recorded run a replay
    follows (its sub-flows then answer from their own records too); `chain`: the flows above."""

    records: FlowRecords
    replaying: str | None = None
    chain: tuple[str, ...] = ()


class SubflowWaiting(Exception):
    """The sub-flow's run waits for a person: the parent pauses too."""

    def __init__(self, run: Run):
        super().__init__(f"the sub-flow run {run.id[:8]} waits for a person")
        self.run = run


def child_run_id(parent_run_id: str, call_id: str) -> str:
    """The id of the run a call of a sub-flow starts: the same for the same call of the same run."""
    return str(uuid.uuid5(_NAMESPACE, f"{parent_run_id}/{call_id}"))


class Runner:
    """`services["run_flow"]` of one run (tools/sources/flow.FlowRunner): runs a sub-flow for a call."""

    def __init__(self, engine: Engine, subflows: SubFlows, flow: Flow, approver: Approver | None):
        self.engine, self.subflows, self.flow, self.approver = engine, subflows, flow, approver

    def _approver_for(self, flow: str) -> Approver | None:
        """The run's approver, asked about the sub-flow's calls with their tools named as the
        sub-flow's (`tidy › fs/v1/delete_file`): the terminal says whose call it is."""
        approver = self.approver
        if approver is None:
            return None
        return lambda call, tool: approver(call, replace(tool, version=f"{flow} › {tool.version}"))

    def description(self, flow: str, version: int) -> str:
        try:
            return self.subflows.records.get_flow(flow, version)[0].description
        except ConfigError:
            return ""  # the call says what is missing

    def __call__(self, flow: str, version: int, question: str, context: Any) -> Any:
        chain = (*self.subflows.chain, self.flow.name)
        if flow in chain:
            raise _failed(f"the sub-flow {flow!r} would call itself: {' -> '.join((*chain, flow))}")
        if len(chain) > MAX_DEPTH:
            raise _failed(
                f"sub-flows nest deeper than {MAX_DEPTH}: {' -> '.join((*chain, flow))}; a sub-flow "
                "this deep does not run: answer without it, or make the flows call fewer sub-flows"
            )
        if context.call_id is None:
            raise _failed("a sub-flow runs only for a tool call of a run")
        child_id = child_run_id(context.run_id, context.call_id)
        records = self.subflows.records
        found = None
        try:
            engine = self._engine_for(context.call_id, chain)
            found = records.find_run(child_id)
            if found is None:
                sub, version_id, _ = records.get_flow(flow, version)
                parent = (context.run_id, context.call_id)
                run = engine.run(
                    sub,
                    question,
                    flow_version_id=version_id,
                    approver=self._approver_for(flow),
                    run_id=child_id,
                    parent=parent,
                )
            elif found.status in (RunStatus.WAITING_APPROVAL, RunStatus.INTERRUPTED, RunStatus.QUEUED):
                sub = records.get_flow_version(found.flow_version_id or 0)
                checkpoint = records.get_checkpoint(found.id)
                run = engine.resume(found, sub, checkpoint, approver=self._approver_for(flow))
            else:
                run = found  # it ended: its answer, without running anything again
        except ConfigError as exc:  # not stored here, claimed by another resumer, a missing key ...
            started = found is not None
            raise _failed(f"the sub-flow {flow!r} version {version} could not run: {exc}", started) from None
        return _answer(run, flow)

    def _engine_for(self, call_id: str, chain: tuple[str, ...]) -> Engine:
        """An engine like this run's, one level down. In a replay, the child's models answer
        from the recorded child run of the same call."""
        provider_for, replaying = self.engine.provider_for, None
        if self.subflows.replaying is not None:
            replaying = child_run_id(self.subflows.replaying, call_id)
            recorded = self.subflows.records.find_run(replaying)
            if recorded is None:
                raise ConfigError(
                    f"the recorded run {self.subflows.replaying[:8]} has no sub-flow run for call "
                    f"{call_id}: the replay went another way"
                )
            provider_for = replay_factory(recorded)
        sub = replace(self.subflows, replaying=replaying, chain=chain)
        return type(self.engine)(
            self.engine.registry, provider_for, self.engine.sink, self.engine.grants, subflows=sub
        )


def services(engine: Engine, flow: Flow, approver: Approver | None) -> dict[str, Any]:
    """What a run of `flow` hands its tool sources: the way to run a sub-flow, when it can."""
    from flowcall.tools.sources.flow import RUN_FLOW

    return {RUN_FLOW: Runner(engine, engine.subflows, flow, approver)} if engine.subflows else {}


def _failed(message: str, started: bool = False) -> FlowCallError:
    """A sub-flow call's failure; `started`: its run exists (the parent's step links it)."""
    return FlowCallError(ErrorCode.TOOL_ERROR, message, details={"started": started})


def _answer(run: Run, flow: str) -> Any:
    """The answer of the sub-flow's run, or why there is none."""
    if run.status == RunStatus.SUCCEEDED:
        return run.final_answer
    if run.status == RunStatus.WAITING_APPROVAL:
        raise SubflowWaiting(run)
    if run.status == RunStatus.CANCELLED:
        raise _failed(f"the sub-flow run {run.id[:8]} ({flow}) was cancelled: {run.error}", True)
    if run.status == RunStatus.FAILED:
        raise _failed(f"the sub-flow {flow!r} failed (run {run.id[:8]}): {run.error}", True)
    raise _failed(
        f"the sub-flow run {run.id[:8]} ({flow}) is {run.status} elsewhere; go on once it ended",
        True,
    )


def run_first(
    scope: Scope,
    calls: list[ToolCall],
    repairs: dict[str, dict],
    settled: dict[str, CallOutcome],
    decisions: dict[str, Decision],
) -> Paused | None:
    """Run the round's sub-flow calls before its other calls; their outcomes go to `settled`
    (the round then records them with the rest, and runs them no more). A sub-flow that waits
    for a person pauses the run here, with the round's calls pending and nothing else run, and
    the person's `decisions` on them kept: resuming does not ask about those again."""
    tools, state = scope.tools, scope.state
    todo = [
        c
        for c in calls
        if c.id not in settled and check_call(c, tools) is None and tools[c.name].source == "flow"
    ]
    if not todo:
        return None
    # committed first: after a crash the run goes on with these calls, so the same child runs
    state.pending, state.pending_repairs = calls, repairs
    state.decided = {call_id: decision.model_dump() for call_id, decision in decisions.items()}
    scope.rec.save(state)
    for call in todo:
        try:
            settled[call.id] = _outcome(scope, call)
        except SubflowWaiting as waiting:
            _record_waiting(scope, call, waiting.run)
            return Paused(state)
    return None


def _outcome(scope: Scope, call: ToolCall) -> CallOutcome:
    tool = scope.tools[call.name]
    started = time.perf_counter()
    child = child_run_id(scope.run.id, call.id)
    try:
        result = tool.invoke(call.arguments or {}, replace(scope.context, call_id=call.id))
    except (SubflowWaiting, RunCancelled):
        raise
    except FlowCallError as exc:
        linked = child if exc.details.get("started") else None
        return CallOutcome(
            call,
            tool,
            error_code=exc.code,
            error_message=exc.message,
            latency_ms=_since(started),
            child_run_id=linked,
        )
    except Exception as exc:  # noqa: BLE001 - as a tool's failure: data for the model
        message = f"{tool.name} failed: {type(exc).__name__}: {exc}"
        return CallOutcome(
            call, tool, error_code=ErrorCode.TOOL_ERROR, error_message=message, latency_ms=_since(started)
        )
    return CallOutcome(call, tool, result=cap_result(result), latency_ms=_since(started), child_run_id=child)


def _since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _record_waiting(scope: Scope, call: ToolCall, child: Run) -> None:
    """The parent's waiting step for a sub-flow call: it names the child run and keeps the
    child's waiting calls, which the parent's waiting list shows (steps.waiting_calls)."""
    calls = waiting_calls(child)
    names = ", ".join(dict.fromkeys(s.name or "a tool" for s in calls)) or "a call"
    scope.rec.record(
        StepKind.APPROVAL,
        round=scope.state.round_no,
        name=call.name,
        tool_call_id=call.id,
        arguments=call.arguments,
        note=f"{WAITING_PREFIX}: the sub-flow {call.name!r} (run {child.id[:8]}) waits for a person "
        f"to approve {names}",
        result={
            SUB_RUN: child.id,
            "waiting": [
                {"call_id": s.tool_call_id, "tool": s.name, "arguments": s.arguments, "note": s.note}
                for s in calls
            ],
        },
    )
