"""The loop: decide -> approve -> execute -> ... -> finish, emitting a step for each event.

A run goes through named phases over one scope (`Scope`): `_begin`, then rounds of
`_decide_round` (Answered | Retry | CallsDecided), `_approve` (Approved | Paused) and
`_execute_round` (its steps and state committed), then `_finish` (Finished). `settle`
(ending.py) is the one place where how a run ended becomes its status; what the phases share
and return is in phases.py. The engine knows nothing about storage or UI: it hands
finished steps, with the loop state they lead to, to a StepSink and an optional callback.
What the host checks in a decision lives in calling/vetting.py, the answer in final_answer.py.
Providers come from a factory, so tests run the whole loop scripted.
"""

from __future__ import annotations

import uuid
from contextlib import nullcontext
from typing import Any, ContextManager

from flowcall.calling import vetting
from flowcall.core import progress, schemas
from flowcall.core.errors import ConfigError, ErrorCode, FlowCallError
from flowcall.core.messages import Message, ModelRequest, ModelTurn, ToolCall, ToolSpec
from flowcall.core.spec import Flow
from flowcall.core.steps import ChatTurn, Run, RunStatus, Step, StepCallback, StepKind, StepSink
from flowcall.engine import approval, subflows
from flowcall.engine.approval import Approver, Decision
from flowcall.engine.claims import mark_claims
from flowcall.engine.ending import settle
from flowcall.engine.final_answer import ANSWER_NOW, Gaps, last_word, polish, with_gaps
from flowcall.engine.loop_state import LoopState, restored_outcome, unreadable_reason
from flowcall.engine.model_calls import ModelCaller, RunFailed, spend_retry, way_for
from flowcall.engine.outcome import gaps_of, judged
from flowcall.engine.phases import (
    Answered,
    Approved,
    CallsDecided,
    Finished,
    Models,
    Paused,
    Retry,
    Scope,
    Start,
)
from flowcall.engine.provenance import trace
from flowcall.engine.recorder import Recorder
from flowcall.providers import NotConfigured
from flowcall.providers.base import ProviderFactory
from flowcall.tools.base import RunContext
from flowcall.tools.execute import check_call, run_round
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.review import definition, fingerprint
from flowcall.trust.consent import Grants


class Engine:
    def __init__(
        self,
        registry: ToolRegistry,
        provider_for: ProviderFactory,
        sink: StepSink,
        grants: Grants | None = None,
        subflows: subflows.SubFlows | None = None,
    ):
        """`grants`: to check documents and servers again as they load (None: checked by the caller);
        `subflows`: where the flows it may run as tools are stored (None: a flow tool cannot run)."""
        self.registry, self.provider_for, self.sink = registry, provider_for, sink
        self.grants, self.subflows = grants, subflows

    # ---------------------------------------------------------------- public
    def run(
        self,
        flow: Flow,
        question: str,
        *,
        flow_version_id: int | None = None,
        on_step: StepCallback | None = None,
        approver: Approver | None = None,
        run_id: str | None = None,
        context: list[ChatTurn] | None = None,
        parent: tuple[str, str] | None = None,
    ) -> Run:
        """Run the flow. A provider missing a setting (an API key not set) raises NotConfigured
        before anything is recorded: it is the person's to fix, not a failed run. `run_id`: the
        id to record it under, for a caller that names the run before it starts (the HTTP API);
        `context`: the chat before the question, kept with the run (read if the flow says so);
        `parent`: (run id, call id) of the tool call that runs it as a sub-flow (subflows.py)."""
        models = self._models_before_run(flow)
        run = self._new_run(flow.name, question, flow_version_id, run_id, context, parent)
        return self._execute(Start(flow, run, Recorder(run, self.sink, on_step), approver, None, models))

    def resume(
        self,
        run: Run,
        flow: Flow,
        checkpoint: dict[str, Any] | None,
        *,
        approver: Approver | None,
        on_step: StepCallback | None = None,
    ) -> Run:
        """Go on with a run that waited for approval or was interrupted, from its last committed
        state: pending calls are put to `approver` (calls that may have run already wait for a
        person unless safe to repeat), then the loop continues. An interrupted run with no
        state stopped before its first tool round, and starts again from its question; so does
        a queued run, which never started.

        `sink.run_resumed` claims the run (the store: a compare-and-set), so of two resumers
        only one goes on; the other gets a ConfigError. The state is read first: a format this
        FlowCall cannot read is refused while the run still waits. So are missing settings of
        its providers (NotConfigured, as in run()): the run is left as it was, unclaimed."""
        state = LoopState.restore(checkpoint) if checkpoint else None
        if state is None and any(s.kind == StepKind.TOOL_CALL for s in run.steps):
            raise ConfigError(
                f"run {run.id[:8]} ran tools but has no saved state (it was recorded by an older "
                "FlowCall or imported); re-run it from a step instead: `flowcall runs rerun`"
            )
        models = self._models_before_run(flow)
        self.sink.run_resumed(run)
        run.status = RunStatus.RUNNING
        return self._execute(Start(flow, run, Recorder(run, self.sink, on_step), approver, state, models))

    def continue_from(
        self,
        flow: Flow,
        question: str,
        checkpoint: dict[str, Any],
        reused: list[Step],
        *,
        flow_version_id: int | None = None,
        on_step: StepCallback | None = None,
        approver: Approver | None = None,
        context: list[ChatTurn] | None = None,
    ) -> Run:
        """A new run that starts from a loop state instead of from the question: re-running
        from a step. `reused` are the earlier run's steps that led there; they are recorded
        first (marked as reused), so the new run reads whole in the inspector. Their tokens
        stay on them for display; the earlier run spent them (see steps.is_reused)."""
        models = self._models_before_run(flow)  # as in run(): a missing key before any record
        state = LoopState.restore(checkpoint)
        run = self._new_run(flow.name, question, flow_version_id, context=context)
        recorder = Recorder(run, self.sink, on_step)
        for step in reused:
            recorder.record(step.kind, **step.model_dump(exclude={"run_id", "seq", "trace_id", "kind"}))
        return self._execute(Start(flow, run, recorder, approver, state, models))

    def decide_only(
        self,
        flow: Flow,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        label: str | None = None,
        run: Run | None = None,
    ) -> tuple[Run, ModelTurn | None]:
        """One decision, nothing executed: for evaluations, where the tools exist only as
        definitions. Still a recorded run, so each case can be opened in the inspector. `run`,
        if given, is a queued run to claim (sink.run_resumed) and make this decision in."""
        models = self._models_before_run(flow, decision_only=True)
        if run is None:
            question = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
            run = self._new_run(label or flow.name, question, None)
        else:
            self.sink.run_resumed(run)
            run.status = RunStatus.RUNNING
        rec, turn = Recorder(run, self.sink, None), None
        try:
            decider = (
                models.decider if models else self.provider_for(flow.decision)
            )  # a failure here is recorded
            request = ModelRequest(
                messages=messages,
                tools=tools,
                tool_choice=flow.tool_choice,
                parallel_tool_calls=flow.parallel_tool_calls,
                temperature=flow.decision.temperature,
                max_tokens=flow.decision.max_tokens,
            )
            turn, _ = ModelCaller(decider, rec, way_for(flow, decider)).decide_vetted(
                request, 1, flow.retry_budget
            )
            ended: Finished | BaseException = Finished(
                {"tool_calls": [c.model_dump(mode="json") for c in turn.tool_calls], "answer": turn.content}
            )
        except BaseException as exc:  # noqa: BLE001 - settle says what each ending means
            ended = exc
        return settle(self.sink, run, rec, ended), turn

    # ---------------------------------------------------------------- a run's life
    def _new_run(
        self,
        label: str,
        question: str,
        flow_version_id: int | None,
        run_id: str | None = None,
        context: list[ChatTurn] | None = None,
        parent: tuple[str, str] | None = None,
    ) -> Run:
        run = Run(
            id=run_id or str(uuid.uuid4()),
            flow_name=label,
            context=context or [],
            flow_version_id=flow_version_id,
            question=question,
            trace_id=uuid.uuid4().hex,
            parent_run_id=parent and parent[0],
            parent_call_id=parent and parent[1],
        )
        self.sink.run_started(run)
        return run

    def _models_before_run(self, flow: Flow, *, decision_only: bool = False) -> Models | None:
        """The flow's providers, or NotConfigured naming the variable to set. Any other failure
        to build one (no model file, a broken GGUF) is left to the run, which records it."""
        try:
            return Models.build(flow, self.provider_for, decision_only=decision_only)
        except NotConfigured:
            raise
        except Exception:  # built again inside the run, where the failure is recorded
            return None

    def _execute(self, start: Start) -> Run:
        run = start.run
        try:
            with self._registry_for(start) as registry:
                scope = self._begin(start, registry)
                ended: Finished | Paused | BaseException = self._loop(scope)
                if isinstance(ended, Finished):
                    traced = trace(
                        ended.answer, scope.state.done, run.question, run.steps, offered=list(scope.tools)
                    )
                    run.provenance = mark_claims(traced, scope.state.claims)
        except BaseException as exc:  # noqa: BLE001 - settle says what each ending means
            ended = exc
        return settle(self.sink, run, start.rec, ended)

    # ---------------------------------------------------------------- the phases
    def _registry_for(self, start: Start) -> ContextManager[ToolRegistry]:
        """The plugin registry, plus the tools of the flow's sources (MCP, HTTP, sub-flows) while
        the run lasts; a sub-flow runs through `services["run_flow"]` (subflows.Runner)."""
        flow = start.flow
        if not (flow.mcp_servers or flow.http_tools or flow.sources):
            return nullcontext(self.registry)
        from flowcall.tools.sources import run_registry  # the mcp SDK loads only when a flow needs it

        return run_registry(self.registry, flow, self.grants, subflows.services(self, flow, start.approver))

    def _begin(self, start: Start, registry: ToolRegistry) -> Scope:
        """Phase 1: the run's tools, callers and state (a new one from the question, or the one
        it goes on from)."""
        flow, run, rec, state = start.flow, start.run, start.rec, start.state
        models = start.models or Models.build(flow, self.provider_for)  # a failure here is recorded
        if flow.polish is not None and flow.polish.output_schema:
            # loading a flow refuses this (spec.py); a flow copied without validation gets here
            try:
                schemas.check_refs(flow.polish.output_schema, "polish.output_schema")
            except schemas.SchemaRefError as exc:
                raise FlowCallError(ErrorCode.INVALID_ARGUMENT, str(exc)) from None
        tools = {t.name: t for t in registry.resolve(flow.tools)}
        changed = approval.changed_tools(self.sink, flow, tools, rec)
        if state is None:
            state = LoopState.fresh(flow, run.question, run.context)
        else:
            state.done = [restored_outcome(o, tools) for o in state.done_records]
        # tools that keep data use the run's store; their artifacts live in the state, so they are
        # saved with it
        context = RunContext(run_id=run.id, store=self.sink, artifacts=state.artifacts)
        return Scope(
            flow=flow,
            run=run,
            rec=rec,
            tools=tools,
            decider=ModelCaller(models.decider, rec, way_for(flow, models.decider)),
            polisher=ModelCaller(models.polisher, rec) if models.polisher else None,
            context=context,
            state=state,
            approver=start.approver,
            changed=changed,
            maybe_ran=frozenset(state.running),
        )

    def _loop(self, scope: Scope) -> Finished | Paused:
        """Rounds of decide -> approve -> execute until the model answers or max_rounds, then finish."""
        state, flow = scope.state, scope.flow
        while state.pending or (state.tool_rounds < flow.max_rounds and not state.finished):
            if state.pending:  # a resumed run: calls that waited for a person, or were started
                decided = CallsDecided(state.pending, state.pending_repairs)
            else:
                decided = self._decide_round(scope)
            if isinstance(decided, Retry):
                continue
            if isinstance(decided, Answered):
                break
            approved = self._approve(scope, decided)
            if isinstance(approved, Paused):
                return approved
            self._execute_round(scope, approved)
        return self._finish(scope)

    def _decide_round(self, scope: Scope) -> Answered | Retry | CallsDecided:
        """Phase 2: one decision. The state changes only in memory here; it is committed with
        the round's tool steps, so a crash during a decision decides that round again."""
        state, flow = scope.state, scope.flow
        state.round_no += 1
        choice = (
            flow.tool_choice if state.tool_rounds == 0 or flow.tool_choice in ("auto", "none") else "auto"
        )
        request = ModelRequest(
            messages=list(state.messages),
            tools=[t.spec() for t in scope.tools.values()],
            tool_choice=choice,
            parallel_tool_calls=flow.parallel_tool_calls,
            temperature=flow.decision.temperature,
            max_tokens=flow.decision.max_tokens,
        )
        turn, state.budget = scope.decider.decide_vetted(request, state.round_no, state.budget)
        state.last_text = turn.content
        if turn.gate is not None and state.gate is None:  # the question's reading, kept for the outcome
            state.gate = turn.gate.model_dump()
        unreadable = turn.parse_errors[0] if turn.parse_errors and not turn.tool_calls else None
        if choice != "none" and (turn.tool_calls or turn.withheld or turn.parse_errors):
            state.wanted_tools = True  # an answer without a tool result is then unbacked (unbacked_reasons)
            state.unbacked += turn.withheld
            if unreadable:
                state.unbacked.append(unreadable_reason("; ".join(turn.parse_errors)))
        if unreadable:
            state.budget = spend_retry(state.budget, ErrorCode.PARSE_FAILED, unreadable, scope.rec)
            state.note_unreadable(turn.content, unreadable)
            scope.rec.mark(state)  # the spent retry goes with the next step
            return Retry(unreadable)
        if not turn.tool_calls:
            state.finished = True
            return Answered(turn.content)
        calls, repairs = vetting.repair(turn.tool_calls, scope.tools)
        if all(LoopState.signature(c) in state.seen for c in calls):
            state.finished = True  # only repeats of answered calls: the model has what it needs
            return Answered(turn.content)
        state.messages.append(Message(role="assistant", content=turn.content, tool_calls=calls))
        return CallsDecided(calls, repairs)

    def _approve(self, scope: Scope, decided: CallsDecided) -> Approved | Paused:
        """Phase 3: put the calls that need a person to the approver. With no answer, the run
        pauses here with these calls pending. A call that may have run already (see
        LoopState.running) needs a person too, unless its tool is safe to repeat."""
        tools, state = scope.tools, scope.state

        def maybe_ran(call: ToolCall) -> bool:
            return call.id in scope.maybe_ran and not approval.safe_to_repeat(tools[call.name])

        gated = [
            c
            for c in decided.calls
            if check_call(c, tools) is None
            and (approval.needs_approval(tools[c.name], scope.flow, scope.changed) or maybe_ran(c))
        ]
        decisions: dict[str, Decision] = {}
        for call in gated:
            decision = approval.ask(call, tools[call.name], scope.approver, state.decided)
            if decision is None:
                state.pending, state.pending_repairs = decided.calls, decided.repairs
                for waiting in gated:
                    scope.rec.record(
                        StepKind.APPROVAL,
                        round=state.round_no,
                        name=waiting.name,
                        tool_call_id=waiting.id,
                        arguments=waiting.arguments,
                        note=approval.waiting_note(
                            tools[waiting.name], scope.flow, scope.changed, maybe_ran(waiting)
                        ),
                    )
                return Paused(state)
            decisions[call.id] = decision
            tool = tools[call.name]
            if decision.action != "deny" and tool.version in scope.changed:
                self.sink.pin_tool(
                    scope.flow.name, tool.version, fingerprint(tool), definition(tool)
                )  # accepted as it is now
        kept, settled = approval.apply_decisions(decided.calls, decisions, tools, scope.rec, state)
        # sub-flows run first: one that waits for a person pauses the run before the rest run
        paused = subflows.run_first(scope, kept, decided.repairs, settled, decisions)
        return paused or Approved(kept, decided.repairs, settled)

    def _execute_round(self, scope: Scope, approved: Approved) -> None:
        """Phase 4: run the approved calls and commit their steps with the state after them, in
        one transaction. Before any tool starts, the state naming the calls about to run is
        committed: after a crash, resume knows which calls may have run."""
        state, tools, settled = scope.state, scope.tools, approved.settled
        state.pending, state.pending_repairs = approved.calls, approved.repairs
        state.running = [c.id for c in approved.calls if c.id not in settled and check_call(c, tools) is None]
        if state.running:
            scope.rec.save(state)
        with progress.step(
            StepKind.TOOL_CALL.value, ", ".join(c.name for c in approved.calls if c.id not in settled)
        ):
            outcomes = run_round(approved.calls, tools, scope.context, scope.flow.tool_timeout_s, settled)
        _, wrong, exhausted = state.apply_round(outcomes, tools)
        scope.rec.record_round(
            [(StepKind.TOOL_CALL, o.step_fields(state.round_no, approved.repairs)) for o in outcomes], state
        )
        scope.maybe_ran = frozenset()
        if exhausted:
            spend_retry(0, wrong.error_code, wrong.error_message or "", scope.rec)

    def _finish(self, scope: Scope) -> Finished:
        """Phase 5: the answer (_answer), and what it says that no tool did: the run's outcome."""
        gaps = gaps_of(scope.state, scope.flow, scope.tools)
        return Finished(judged(scope.run, scope.state, gaps, self._answer(scope, gaps), scope.tools))

    def _answer(self, scope: Scope, gaps: Gaps) -> Any:
        """The polish model's answer, the decision model's own, or (no polish model, max_rounds
        reached) one more decision asked to answer without tools."""
        state, flow = scope.state, scope.flow
        if scope.polisher is not None:  # reaching max_rounds is the normal hand-off to the polish model
            return polish(
                flow,
                scope.polisher,
                scope.run.question,
                state.done,
                state.last_text if state.finished else None,
                gaps,
            )
        if state.finished and state.last_text:
            return with_gaps(state.last_text, gaps, scope.run.question)
        if not state.finished:
            scope.rec.record(
                StepKind.ERROR,
                round=state.round_no,
                error_code=str(ErrorCode.MAX_ROUNDS),
                error_message=f"the decision model still called tools after {flow.max_rounds} rounds "
                "and there is no polish model; asking it to answer without tools",
            )
        # No polish model and no answer yet: ask the decision model once more, without tools.
        request = ModelRequest(
            messages=list(state.messages),
            tool_choice="none",
            temperature=flow.decision.temperature,
            max_tokens=flow.decision.max_tokens,
        )
        turn = scope.decider.decide(request, state.round_no + 1)
        if state.finished:
            return with_gaps(turn.content or "", gaps, scope.run.question)
        try:
            return with_gaps(last_word(turn, scope.tools, flow, state.done), gaps, scope.run.question)
        except RunFailed:
            # A small model asked without tools often writes a call anyway: say plainly once
            # what is wanted, then judge that answer.
            retry = request.model_copy(update={"messages": [*state.messages, *ANSWER_NOW]})
            turn = scope.decider.decide(retry, state.round_no + 2)
            return with_gaps(last_word(turn, scope.tools, flow, state.done), gaps, scope.run.question)
