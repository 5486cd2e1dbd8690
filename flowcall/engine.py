"""The loop: decide -> approve -> execute -> ... -> finish, emitting a step for each event.

A run goes through named phases over one scope (`_Scope`): `_begin`, then rounds of
`_decide_round` (Answered | Retry | CallsDecided), `_approve` (Approved, or a pause) and
`_execute_round` (RoundResult), then `_finish` (the answer). The engine knows nothing about
storage or UI: it hands finished steps, with the loop state they lead to, to a StepSink and
an optional callback. Providers come from a factory, so tests run the whole loop scripted.
"""

from __future__ import annotations

import json
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, ContextManager

import json_repair

from flowcall import progress, schemas
from flowcall.approval import Approver, Decision, needs_approval
from flowcall.calling import make_way
from flowcall.calling.base import CallingWay, calls_from_text
from flowcall.calling.doc_values import doc_values, required_doc_values, retry_message, with_unmade_note
from flowcall.calling.relevance import RETRY_PREFIX
from flowcall.calling.router import Rule
from flowcall.errors import ConfigError, ErrorCode, FlowCallError, ProviderError
from flowcall.loop_state import LoopState, restored_outcome
from flowcall.messages import Message, ModelRequest, ModelTurn, ResponseFormat, ToolCall, ToolSpec
from flowcall.providers import NotConfigured
from flowcall.providers.base import Provider
from flowcall.spec import Flow, ModelConfig
from flowcall.provenance import trace
from flowcall.steps import ANSWERED_WITHOUT_TOOLS, Run, RunCancelled, RunStatus, Step, StepKind, StepSink, utcnow
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.execute import NOT_RUN, CallOutcome, check_call, drop_schema_echo, drop_undeclared, run_calls
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.review import definition, fingerprint, injection_warnings, what_changed

ProviderFactory = Callable[[ModelConfig], Provider]
StepCallback = Callable[[Step], None]

POLISH_SYSTEM = (
    "You write the final answer to the user's question from the tool results below. "
    "Use only facts from the tool results; say so if they do not answer the question."
)


def fill_variables(text: str) -> str:
    """System prompts may say {{today}}, {{tomorrow}}, {{now}} or {{weekday}}: small models
    cannot know the date, and "明天" means nothing without it."""
    now = datetime.now().astimezone()
    values = {"today": now.date().isoformat(), "tomorrow": (now.date() + timedelta(days=1)).isoformat(),
              "now": now.isoformat(timespec="minutes"), "weekday": now.strftime("%A")}
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


class RunFailed(FlowCallError):
    """Raised inside the loop to end a run; the run is recorded as failed, not lost."""


class _Recorder:
    """Numbers steps, stamps them with the run's trace id, and hands them on as they end.

    The loop state goes to the sink with the steps it belongs to: `mark` keeps a changed state
    to be committed with the next step, `record_round` commits a tool round's steps with the
    state after it, `save` commits a state alone (before tools start)."""

    def __init__(self, run: Run, sink: StepSink, callback: StepCallback | None):
        self.run, self.sink, self.callback = run, sink, callback
        self._state: dict[str, Any] | None = None

    def _step(self, step_kind: StepKind, fields: dict[str, Any]) -> Step:
        step = Step(run_id=self.run.id, seq=len(self.run.steps) + 1, kind=step_kind, trace_id=self.run.trace_id, **fields)
        self.run.steps.append(step)
        return step

    def record(self, step_kind: StepKind, **fields: Any) -> Step:
        step = self._step(step_kind, fields)
        state, self._state = self._state, None
        self.sink.steps_recorded([step], state)
        if self.callback:
            self.callback(step)
        return step

    def record_round(self, steps: list[tuple[StepKind, dict[str, Any]]], state: LoopState) -> None:
        built = [self._step(kind, fields) for kind, fields in steps]
        self._state = None
        self.sink.steps_recorded(built, state.checkpoint())
        for step in built:
            if self.callback:
                self.callback(step)

    def mark(self, state: LoopState) -> None:
        self._state = state.checkpoint()

    def save(self, state: LoopState) -> None:
        self._state = None
        self.sink.state_saved(self.run, state.checkpoint())


class _Paused(Exception):
    """A call waits for a person; the run stops here and keeps its state."""

    def __init__(self, state: LoopState):
        self.state = state


@dataclass
class _Models:
    """A run's providers, built once: before anything is recorded where they can be
    (Engine._models_before_run), else inside the run."""

    decider: Provider
    polisher: Provider | None

    @classmethod
    def build(cls, flow: Flow, provider_for: ProviderFactory, *, decision_only: bool = False) -> _Models:
        polish = flow.polish if not decision_only else None
        return cls(provider_for(flow.decision), provider_for(polish) if polish is not None else None)


@dataclass
class _Scope:
    """Everything one run's phases share."""

    flow: Flow
    run: Run
    rec: _Recorder
    tools: dict[str, Tool]
    models: _Models
    way: CallingWay
    context: RunContext
    state: LoopState
    approver: Approver | None
    changed: frozenset[str]  # tools whose definition changed since accepted: their calls wait for a person
    maybe_ran: frozenset[str]  # calls started before an interruption whose results were never committed


# --- what each phase of a round returns ---------------------------------------------------
@dataclass
class Answered:
    """The decision model answered (or only repeated answered calls): the loop ends."""

    text: str | None


@dataclass
class Retry:
    """The model's call could not be read; it is told why and decides again."""

    problem: str


@dataclass
class CallsDecided:
    calls: list[ToolCall]
    repairs: dict[str, dict]


@dataclass
class Approved:
    """The calls as they will run (edited ones with the person's arguments) and the denied
    ones' outcomes by call id."""

    calls: list[ToolCall]
    repairs: dict[str, dict]
    settled: dict[str, CallOutcome]


@dataclass
class RoundResult:
    outcomes: list[CallOutcome]
    tool_ran: bool
    wrong: CallOutcome | None  # the first call the model got wrong, paid from the retry budget


MAYBE_RAN_NOTE = ("waiting for a person: this call was started before the run was interrupted and its result "
                  "was never recorded, so it may have run already: approve to run it again, or deny to go on "
                  "without it")


def safe_to_repeat(tool: Tool) -> bool:
    """May a call whose result was lost run again unasked? Only a read-only tool whose
    read-only hint comes from code this machine trusts (a plugin, a trusted server): an
    untrusted server could call anything read-only."""
    return tool.annotations.read_only and (tool.source == "python" or tool.trusted)


class Engine:
    def __init__(self, registry: ToolRegistry, provider_for: ProviderFactory, sink: StepSink):
        self.registry = registry
        self.provider_for = provider_for
        self.sink = sink

    # ---------------------------------------------------------------- public
    def run(
        self,
        flow: Flow,
        question: str,
        *,
        flow_version_id: int | None = None,
        on_step: StepCallback | None = None,
        approver: Approver | None = None,
    ) -> Run:
        """Run the flow. A provider missing a setting (an API key not set) raises NotConfigured
        before anything is recorded: it is the person's to fix, not a failed run."""
        models = self._models_before_run(flow)
        run = Run(id=str(uuid.uuid4()), flow_name=flow.name, flow_version_id=flow_version_id,
                  question=question, trace_id=uuid.uuid4().hex)
        self.sink.run_started(run)
        return self._execute(flow, run, _Recorder(run, self.sink, on_step), approver, None, models)

    def resume(self, run: Run, flow: Flow, checkpoint: dict[str, Any] | None, *, approver: Approver | None,
               on_step: StepCallback | None = None) -> Run:
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
            raise ConfigError(f"run {run.id[:8]} ran tools but has no saved state (it was recorded by an older "
                              "FlowCall or imported); re-run it from a step instead: `flowcall runs rerun`")
        models = self._models_before_run(flow)
        self.sink.run_resumed(run)
        run.status = RunStatus.RUNNING
        return self._execute(flow, run, _Recorder(run, self.sink, on_step), approver, state, models)

    def continue_from(self, flow: Flow, question: str, checkpoint: dict[str, Any], reused: list[Step], *,
                      flow_version_id: int | None = None, on_step: StepCallback | None = None,
                      approver: Approver | None = None) -> Run:
        """A new run that starts from a loop state instead of from the question: re-running
        from a step. `reused` are the earlier run's steps that led there; they are recorded
        first (marked as reused), so the new run reads whole in the inspector. Their tokens
        stay on them for display; the earlier run spent them (see steps.is_reused)."""
        models = self._models_before_run(flow)  # as in run(): a missing key before any record
        state = LoopState.restore(checkpoint)
        run = Run(id=str(uuid.uuid4()), flow_name=flow.name, flow_version_id=flow_version_id,
                  question=question, trace_id=uuid.uuid4().hex)
        self.sink.run_started(run)
        recorder = _Recorder(run, self.sink, on_step)
        for step in reused:
            fields = step.model_dump(exclude={"run_id", "seq", "trace_id", "kind"})
            recorder.record(step.kind, **fields)
        return self._execute(flow, run, recorder, approver, state, models)

    def _models_before_run(self, flow: Flow, *, decision_only: bool = False) -> _Models | None:
        """The flow's providers, or NotConfigured naming the variable to set. Any other failure
        to build one (no model file, a broken GGUF) is left to the run, which records it."""
        try:
            return _Models.build(flow, self.provider_for, decision_only=decision_only)
        except NotConfigured:
            raise
        except Exception:  # built again inside the run, where the failure is recorded
            return None

    def _execute(self, flow: Flow, run: Run, recorder: _Recorder, approver: Approver | None,
                 state: LoopState | None, models: _Models | None = None) -> Run:
        try:
            with self._registry_for(flow) as registry:
                models = models or _Models.build(flow, self.provider_for)  # a failure here is recorded
                scope = self._begin(flow, run, recorder, registry, approver, state, models)
                run.final_answer = self._loop(scope)
                run.provenance = trace(run.final_answer, scope.state.done, run.question, run.steps)
            run.status = RunStatus.SUCCEEDED
        except _Paused as paused:
            run.status = RunStatus.WAITING_APPROVAL
            self.sink.run_paused(run, paused.state.checkpoint())
            return run
        except RunCancelled as exc:  # cancelled by a person elsewhere, or taken over: the store says so
            run.status, run.error, run.ended_at = RunStatus.CANCELLED, str(exc), utcnow()
            return run
        except FlowCallError as exc:
            run.status, run.error = RunStatus.FAILED, f"{exc.code}: {exc.message}"
            if not isinstance(exc, RunFailed):
                self._record_end(recorder, StepKind.ERROR, error_code=str(exc.code), error_message=exc.message)
        except Exception as exc:  # a bug or an unexpected library error: keep the run, say what broke
            run.status, run.error = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
            self._record_end(recorder, StepKind.ERROR, error_code=str(ErrorCode.INTERNAL), error_message=run.error)
        except BaseException as exc:  # Ctrl-C, the studio stopping its script: a person stopped it
            self._stopped(run, exc)
            raise
        run.ended_at = utcnow()
        if not self.sink.run_finished(run):
            run.status = RunStatus.CANCELLED  # cancelled between its last step and now: it stays so
        return run

    @staticmethod
    def _record_end(recorder: _Recorder, kind: StepKind, **fields: Any) -> None:
        try:
            recorder.record(kind, **fields)
        except RunCancelled:
            pass  # the run is over either way; run_finished leaves a cancelled run cancelled

    def _stopped(self, run: Run, exc: BaseException) -> None:
        if isinstance(exc, KeyboardInterrupt):
            reason = "stopped with Ctrl-C"
        elif type(exc).__name__ in ("StopException", "RerunException"):  # Streamlit ends the page's script
            reason = "stopped in the studio"
        else:
            reason = f"stopped ({type(exc).__name__})"
        run.status, run.error, run.ended_at = RunStatus.CANCELLED, reason, utcnow()
        try:
            self.sink.run_cancelled(run, reason)
        except Exception:  # the database may be what failed; the run then reads as interrupted
            pass

    def decide_only(self, flow: Flow, messages: list[Message], tools: list[ToolSpec], *,
                    label: str | None = None, run: Run | None = None) -> tuple[Run, ModelTurn | None]:
        """One decision, nothing executed: for evaluations, where the tools exist only as
        definitions. Still a recorded run, so each case can be opened in the inspector. `run`,
        if given, is a queued run to claim (sink.run_resumed) and make this decision in."""
        models = self._models_before_run(flow, decision_only=True)
        if run is None:
            question = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
            run = Run(id=str(uuid.uuid4()), flow_name=label or flow.name, question=question,
                      trace_id=uuid.uuid4().hex)
            self.sink.run_started(run)
        else:
            self.sink.run_resumed(run)
            run.status = RunStatus.RUNNING
        rec = _Recorder(run, self.sink, None)
        turn = None
        try:
            decider = models.decider if models else self.provider_for(flow.decision)  # a failure here is recorded
            way = _way_for(flow, decider)
            request = ModelRequest(messages=messages, tools=tools, tool_choice=flow.tool_choice,
                                   parallel_tool_calls=flow.parallel_tool_calls,
                                   temperature=flow.decision.temperature, max_tokens=flow.decision.max_tokens)
            turn, _ = self._decide_checked(decider, way, request, rec, 1, flow.retry_budget)
            run.final_answer = {"tool_calls": [c.model_dump(mode="json") for c in turn.tool_calls], "answer": turn.content}
            run.status = RunStatus.SUCCEEDED
        except FlowCallError as exc:
            run.status, run.error = RunStatus.FAILED, f"{exc.code}: {exc.message}"
        except Exception as exc:  # a provider that cannot be built, a library error: recorded, not lost
            run.status, run.error = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
        run.ended_at = utcnow()
        self.sink.run_finished(run)
        return run, turn

    # ---------------------------------------------------------------- the phases
    def _registry_for(self, flow: Flow) -> ContextManager[ToolRegistry]:
        """The plugin registry, plus the flow's MCP and HTTP tools while the run lasts."""
        if not (flow.mcp_servers or flow.http_tools):
            return nullcontext(self.registry)
        from flowcall.tools.sources import run_registry  # the mcp SDK loads only when a flow needs it

        return run_registry(self.registry, flow)

    def _begin(self, flow: Flow, run: Run, rec: _Recorder, registry: ToolRegistry, approver: Approver | None,
               state: LoopState | None, models: _Models) -> _Scope:
        """Phase 1: the run's tools, way and state (a new one from the question, or the one it
        goes on from)."""
        if flow.polish is not None and flow.polish.output_schema:
            # loading a flow refuses this (spec.py); a flow copied without validation gets here
            try:
                schemas.check_refs(flow.polish.output_schema, "polish.output_schema")
            except schemas.SchemaRefError as exc:
                raise FlowCallError(ErrorCode.INVALID_ARGUMENT, str(exc)) from None
        tools = {t.name: t for t in registry.resolve(flow.tools)}
        changed = self._check_pins(flow, tools, rec)
        if state is None:
            messages = []
            if flow.decision.system_prompt:
                messages.append(Message(role="system", content=fill_variables(flow.decision.system_prompt)))
            messages.append(Message(role="user", content=run.question))
            state = LoopState(messages=messages, budget=flow.retry_budget)
        else:
            state.done = [restored_outcome(o, tools) for o in state.done_records]
        # tools that keep data use the run's store; their artifacts live in the state, so they are saved with it
        context = RunContext(run_id=run.id, store=self.sink, artifacts=state.artifacts)
        return _Scope(flow=flow, run=run, rec=rec, tools=tools, models=models, way=_way_for(flow, models.decider),
                      context=context, state=state, approver=approver, changed=changed,
                      maybe_ran=frozenset(state.running))

    def _loop(self, scope: _Scope) -> Any:
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
            self._execute_round(scope, approved)
        return self._finish(scope)

    def _decide_round(self, scope: _Scope) -> Answered | Retry | CallsDecided:
        """Phase 2: one decision. The state changes only in memory here; it is committed with
        the round's tool steps, so a crash during a decision decides that round again."""
        state, flow = scope.state, scope.flow
        state.round_no += 1
        choice = flow.tool_choice if state.tool_rounds == 0 or flow.tool_choice in ("auto", "none") else "auto"
        request = ModelRequest(
            messages=list(state.messages), tools=[t.spec() for t in scope.tools.values()], tool_choice=choice,
            parallel_tool_calls=flow.parallel_tool_calls, temperature=flow.decision.temperature,
            max_tokens=flow.decision.max_tokens,
        )
        turn, state.budget = self._decide_checked(scope.models.decider, scope.way, request, scope.rec, state.round_no,
                                                  state.budget)
        state.last_text = turn.content
        if choice != "none" and (turn.tool_calls or turn.withheld or turn.parse_errors):
            state.wanted_tools = True  # an answer without a tool result is then unbacked (unbacked_reasons)
            state.unbacked += turn.withheld
            if turn.parse_errors and not turn.tool_calls:
                state.unbacked.append(unreadable_reason("; ".join(turn.parse_errors)))
        if turn.parse_errors and not turn.tool_calls:
            state.budget = self._spend(state.budget, ErrorCode.PARSE_FAILED, turn.parse_errors[0], scope.rec)
            state.messages += parse_retry_messages(turn.content, turn.parse_errors[0])
            scope.rec.mark(state)  # the spent retry goes with the next step
            return Retry(turn.parse_errors[0])
        if not turn.tool_calls:
            state.finished = True
            return Answered(turn.content)
        calls, repairs = _repair(turn.tool_calls, scope.tools)
        if all(self._signature(c) in state.seen for c in calls):
            state.finished = True  # only repeats of answered calls: the model has what it needs
            return Answered(turn.content)
        state.messages.append(Message(role="assistant", content=turn.content, tool_calls=calls))
        return CallsDecided(calls, repairs)

    def _approve(self, scope: _Scope, decided: CallsDecided) -> Approved:
        """Phase 3: put the calls that need a person to the approver. With no answer, the run
        pauses here (_Paused) with these calls pending. A call that may have run already (see
        LoopState.running) needs a person too, unless its tool is safe to repeat."""
        calls, repairs, tools, state, rec = decided.calls, decided.repairs, scope.tools, scope.state, scope.rec

        def maybe_ran(call: ToolCall) -> bool:
            return call.id in scope.maybe_ran and not safe_to_repeat(tools[call.name])

        gated = [c for c in calls if check_call(c, tools) is None
                 and (needs_approval(tools[c.name], scope.flow, scope.changed) or maybe_ran(c))]
        decisions: dict[str, Decision] = {}
        for call in gated:
            decision = scope.approver(call, tools[call.name]) if scope.approver else None
            if decision is None:
                state.pending, state.pending_repairs = calls, repairs
                for waiting in gated:
                    note = MAYBE_RAN_NOTE if maybe_ran(waiting) else "waiting for a person to approve, deny or edit"
                    rec.record(StepKind.APPROVAL, round=state.round_no, name=waiting.name, tool_call_id=waiting.id,
                               arguments=waiting.arguments, note=note)
                raise _Paused(state)
            decisions[call.id] = decision
            if decision.action != "deny" and tools[call.name].version in scope.changed:
                tool = tools[call.name]
                self.sink.pin_tool(scope.flow.name, tool.version, fingerprint(tool), definition(tool))  # accepted as it is now
        kept, settled = [], {}
        for call in calls:
            decision = decisions.get(call.id)
            if decision is not None and decision.action == "edit":
                call = call.model_copy(update={"arguments": decision.arguments,
                                               "raw_arguments": json.dumps(decision.arguments, ensure_ascii=False)})
            if decision is not None:
                rec.record(StepKind.APPROVAL, round=state.round_no, name=call.name, tool_call_id=call.id,
                           arguments=call.arguments, result={"action": decision.action, "by": decision.by,
                                                              "reason": decision.reason or None},
                           note=f"{decision.action} by {decision.by}" + (f": {decision.reason}" if decision.reason else ""),
                           error_code=str(ErrorCode.APPROVAL_DENIED) if decision.action == "deny" else None)
            if decision is not None and decision.action == "deny":
                settled[call.id] = CallOutcome(call, tools[call.name], error_code=ErrorCode.APPROVAL_DENIED,
                                               error_message="a person denied this call"
                                               + (f": {decision.reason}" if decision.reason else "")
                                               + "; do not call it again, answer without it")
            kept.append(call)
        return Approved(kept, repairs, settled)

    def _execute_round(self, scope: _Scope, approved: Approved) -> RoundResult:
        """Phase 4: run the approved calls and commit their steps with the state after them, in
        one transaction. Before any tool starts, the state naming the calls about to run is
        committed: after a crash, resume knows which calls may have run."""
        state, tools, flow = scope.state, scope.tools, scope.flow
        calls, settled = approved.calls, approved.settled
        state.pending, state.pending_repairs = calls, approved.repairs
        state.running = [c.id for c in calls if c.id not in settled and check_call(c, tools) is None]
        if state.running:
            scope.rec.save(state)
        with progress.step(StepKind.TOOL_CALL.value, ", ".join(c.name for c in calls if c.id not in settled)):
            outcomes = self._run_tools(calls, tools, scope.context, flow, settled)
        # the round is counted whole: with the calls a re-run kept from it (see rerun.py)
        whole_round, state.kept = [*(restored_outcome(r, tools) for r in state.kept), *outcomes], []
        state.take_results(outcomes)
        state.unbacked += [no_result_reason(o.call.name, o.error_code, o.error_message)
                           for o in outcomes if o.error_code is not None]
        wrong, exhausted = state.count_round(whole_round)
        state.pending, state.pending_repairs, state.running = [], {}, []
        scope.rec.record_round([(StepKind.TOOL_CALL, _tool_step(o, state.round_no, approved.repairs))
                                for o in outcomes], state)
        scope.maybe_ran = frozenset()
        if exhausted:
            self._spend(0, wrong.error_code, wrong.error_message or "", scope.rec)
        return RoundResult(outcomes, any(o.error_code not in NOT_RUN for o in whole_round), wrong)

    def _finish(self, scope: _Scope) -> Any:
        """Phase 5: the answer: the polish model's, the decision model's own, or (no polish
        model, max_rounds reached) one more decision asked to answer without tools."""
        state, flow, rec, tools = scope.state, scope.flow, scope.rec, scope.tools
        decider, way = scope.models.decider, scope.way
        messages, round_no, finished, last_text, done = (state.messages, state.round_no, state.finished,
                                                         state.last_text, state.done)
        unbacked = unbacked_reasons(state, flow)
        if unbacked is not None:
            scope.run.outcome, scope.run.outcome_reasons = ANSWERED_WITHOUT_TOOLS, unbacked
        if scope.models.polisher is not None:  # reaching max_rounds is the normal hand-off to the polish model
            return self._polish(flow, scope.models.polisher, scope.run.question, done,
                                last_text if finished else None, rec, unbacked)
        if finished and last_text:
            return last_text
        if not finished:
            rec.record(StepKind.ERROR, round=round_no, error_code=str(ErrorCode.MAX_ROUNDS),
                       error_message=f"the decision model still called tools after {flow.max_rounds} rounds and "
                                     "there is no polish model; asking it to answer without tools")
        # No polish model and no answer yet: ask the decision model once more, without tools.
        request = ModelRequest(messages=list(messages), tool_choice="none", temperature=flow.decision.temperature,
                               max_tokens=flow.decision.max_tokens)
        turn = self._decide(decider, way, request, rec, round_no + 1)
        if finished:
            return turn.content or ""
        try:
            return _answer_after_max_rounds(turn, tools, flow, done)
        except RunFailed:
            # A small model asked without tools often writes a call anyway: say plainly once
            # what is wanted, then judge that answer.
            retry = ModelRequest(messages=[*messages, *_ANSWER_NOW], tool_choice="none",
                                 temperature=flow.decision.temperature, max_tokens=flow.decision.max_tokens)
            turn = self._decide(decider, way, retry, rec, round_no + 2)
            return _answer_after_max_rounds(turn, tools, flow, done)

    def _check_pins(self, flow: Flow, tools: dict[str, Tool], rec: _Recorder) -> frozenset[str]:
        """MCP and HTTP tools are pinned as first used; one whose definition changed since (a
        server can change what a tool says or takes at any time) gets a warning step, and its
        calls wait for a person this run. Approving such a call accepts the new definition.
        Descriptions with instructions aimed at the model get a warning step too."""
        if not hasattr(self.sink, "tool_pins"):
            return frozenset()
        pins, changed = self.sink.tool_pins(flow.name), set()
        for tool in tools.values():
            if tool.source == "python":
                continue
            for warning in injection_warnings(tool):  # an outside server's text reaches the model as is
                rec.record(StepKind.WARNING, name=tool.name, note=f"{tool.version}: {warning}")
            pin = pins.get(tool.version)
            if pin is None:
                self.sink.pin_tool(flow.name, tool.version, fingerprint(tool), definition(tool))
            elif pin["fingerprint"] != fingerprint(tool):
                changed.add(tool.version)
                what = ", ".join(what_changed(pin["definition"], definition(tool)))
                rec.record(StepKind.WARNING, name=tool.name, note=f"the {what} of {tool.version} changed since it was "
                           "first accepted; its calls wait for a person this run",
                           result={"accepted": pin["definition"], "now": definition(tool)})
        return frozenset(changed)

    # ---------------------------------------------------------------- pieces
    @staticmethod
    def _run_tools(calls: list[ToolCall], tools: dict[str, Tool], context: RunContext, flow: Flow,
                   settled: dict[str, CallOutcome]) -> list[CallOutcome]:
        """Check every call and run the valid ones at once; the outcomes in call order.
        `settled` calls (denied by a person) keep their outcome and are not run."""
        runnable, outcomes = [], list(settled.values())
        for call in calls:
            if call.id in settled:
                continue
            problem = check_call(call, tools)
            if problem is None:
                runnable.append((call, tools[call.name]))
            else:
                outcomes.append(problem)
        outcomes.extend(run_calls(runnable, context, flow.tool_timeout_s))
        outcomes.sort(key=lambda o: calls.index(o.call))
        return outcomes

    @staticmethod
    def _signature(call: Any) -> str:
        return LoopState.signature(call)

    @staticmethod
    def _spend(budget: int, code: ErrorCode | None, message: str, rec: _Recorder) -> int:
        """A wrong call costs one retry; past the budget the run fails with that call's error."""
        if budget <= 0:
            rec.record(StepKind.ERROR, error_code=str(code), error_message=f"retry budget exhausted: {message}")
            raise RunFailed(code or ErrorCode.INVALID_ARGUMENT, f"the model kept making wrong calls: {message}")
        return budget - 1

    def _decide(self, provider: Provider, way: CallingWay, request: ModelRequest, rec: _Recorder,
                round_no: int) -> ModelTurn:
        def call(way_name: str, sent: ModelRequest, interpret: Callable[[ModelTurn], ModelTurn] | None = None,
                 note: str | None = None) -> ModelTurn:
            return self._model_call(provider, rec, StepKind.MODEL_CALL, round_no, way_name, sent, interpret, note)

        try:
            return way.decide(request, provider.capabilities, call)
        except ProviderError as exc:
            raise RunFailed(exc.code, exc.message) from exc

    def _decide_checked(self, provider: Provider, way: CallingWay, request: ModelRequest, rec: _Recorder,
                        round_no: int, budget: int) -> tuple[ModelTurn, int]:
        """A decision, made once more when its calls carry values from the tools' docs instead
        of the conversation (calling/doc_values.py): a warning step says which and why, the
        model reads the same, and the second decision stands. It costs one retry of `budget`;
        with none left, the first decision stands. Either way a call whose required argument is
        still the docs' own example is not made (_without_unsaid); where the second decision
        has no call left, the first one's sound calls stand (the retry must not lose "成都"
        because the model wrote "北京" twice). Returns the turn and the budget left."""
        turn = self._decide(provider, way, request, rec, round_no)
        found = doc_values(turn.tool_calls, request.tools, request.messages) if turn.tool_calls and budget > 0 else []
        if not found:
            return self._without_unsaid(provider, way, request, turn, rec, round_no), budget
        rec.record(StepKind.WARNING, round=round_no, name="doc_values", error_code=str(ErrorCode.INVALID_ARGUMENT),
                   note="argument values from the tools' docs, not the conversation; asking once more (one retry)",
                   error_message="; ".join(item.line() for item in found),
                   result=[{"tool": i.tool, "argument": i.argument, "value": i.value, "why": i.why} for i in found])
        named = {call.name for call in turn.tool_calls}
        again = request.model_copy(update={
            "messages": [*request.messages, retry_message(found)],
            # the decision to call these tools stands; only their arguments are written again
            "tools": [t for t in request.tools if t.name in named],
            "tool_choice": request.tool_choice if request.tool_choice not in ("auto", "none") else "required"})
        second = self._decide(provider, way, again, rec, round_no)
        return self._without_unsaid(provider, way, request, second, rec, round_no, earlier=turn), budget - 1

    def _without_unsaid(self, provider: Provider, way: CallingWay, request: ModelRequest, turn: ModelTurn,
                        rec: _Recorder, round_no: int, earlier: ModelTurn | None = None) -> ModelTurn:
        """The decision without the calls whose required argument is the tool's own example
        ("owner": "octocat" from the docs, for "thanks, that's all"): the conversation never
        gave what the tool cannot run without, so the call is not what the user asked, and it
        could act on a resource nobody named. Where no call is left, the model answers instead
        (tool_choice none), unless `earlier` (the decision before a retry) has calls that are
        sound. A flow whose tool_choice demands a call keeps it."""
        if not turn.tool_calls or request.tool_choice != "auto":
            return turn
        unsaid = self._unsaid(turn, request)
        if not any(unsaid.values()):
            return turn
        flagged = [item for items in unsaid.values() for item in items]
        kept = [call for call in turn.tool_calls if not unsaid[id(call)]]
        if not kept and earlier is not None and earlier.tool_calls:
            before = self._unsaid(earlier, request)
            if kept := [call for call in earlier.tool_calls if not before[id(call)]]:
                turn = earlier
        rec.record(StepKind.WARNING, round=round_no, name="doc_values", error_code=str(ErrorCode.INVALID_ARGUMENT),
                   note=("not made: a required argument is the tool's own example, which the conversation never "
                         "gave" + ("; the model answers instead" if not kept else
                                   "; the first decision's other calls stand" if turn is earlier else "")),
                   error_message="; ".join(item.line() for item in flagged),
                   result=[{"tool": i.tool, "argument": i.argument, "value": i.value, "why": i.why} for i in flagged])
        withheld = [withheld_reason(item.tool, item.argument, item.value) for item in flagged]
        if kept:
            return turn.model_copy(update={"tool_calls": kept, "withheld": withheld})
        answer = self._decide(provider, way, request.model_copy(update={
            "tool_choice": "none", "messages": with_unmade_note(request.messages)}), rec, round_no)
        return answer.model_copy(update={"withheld": withheld})

    @staticmethod
    def _unsaid(turn: ModelTurn, request: ModelRequest) -> dict[int, list]:
        """Per call (by id): its required arguments that are still the docs' own example."""
        return {id(call): required_doc_values(doc_values([call], request.tools, request.messages), request.tools)
                for call in turn.tool_calls}

    def _model_call(
        self, provider: Provider, rec: _Recorder, kind: StepKind, round_no: int, way_name: str | None,
        sent: ModelRequest, interpret: Callable[[ModelTurn], ModelTurn] | None = None, note: str | None = None,
    ) -> ModelTurn:
        """One provider call, recorded as one step (also when it fails, then re-raised)."""
        started_at, t0 = utcnow(), time.perf_counter()
        common = dict(round=round_no, name=f"{provider.name}/{provider.model}", calling_way=way_name, note=note,
                      started_at=started_at)
        try:
            with progress.step(kind.value, _progress_label(provider, note)):
                turn = provider.complete(sent)
        except ProviderError as exc:
            request_sent = exc.details.get("wire_request") or sent.model_dump(mode="json", exclude_none=True)
            rec.record(kind, **common, request=request_sent, error_code=str(exc.code), error_message=exc.message,
                       request_id=exc.request_id, latency_ms=(time.perf_counter() - t0) * 1000,
                       retries=exc.details.get("retries") or exc.retries)
            raise
        if interpret:
            turn = interpret(turn)
        rec.record(
            kind, **common, request=turn.wire_request or sent.model_dump(mode="json", exclude_none=True),
            response=turn.wire_response, rendered_prompt=turn.rendered_prompt,
            tool_calls=[c.model_dump(mode="json") for c in turn.tool_calls],
            result=turn.content, tokens_in=turn.usage.input_tokens, tokens_out=turn.usage.output_tokens,
            latency_ms=turn.latency_ms or (time.perf_counter() - t0) * 1000, retries=turn.retries,
            request_id=turn.request_id,
            error_code=str(ErrorCode.PARSE_FAILED) if turn.parse_errors and not turn.tool_calls else None,
            error_message="; ".join(turn.parse_errors) or None,
        )
        return turn

    def _polish(self, flow: Flow, polisher: Provider, question: str, done: list[CallOutcome], draft: str | None,
                rec: _Recorder, unbacked: list[str] | None = None) -> Any:
        assert flow.polish is not None
        schema = flow.polish.output_schema
        system = fill_variables(flow.polish.system_prompt or POLISH_SYSTEM)
        if unbacked is not None:
            system += "\n" + NO_TOOL_RESULT_NOTE
        # Where the provider enforces the schema (grammar, json_schema), the schema text in the
        # prompt only costs tokens: ~400 prompt tokens, ~28% of the commute polish step locally.
        if schema and not polisher.capabilities.json_schema_output:
            system += ("\nReply with one JSON object valid against this JSON Schema, and nothing else:\n"
                       + json.dumps(schema, ensure_ascii=False))
        lines = [f"Question: {question}", "", "Tool results:"]
        lines += [f"- {o.call.name}({o.call.arguments_json()}) -> {o.content_for_model()}" for o in done] or ["(no tool was called)"]
        if unbacked is not None:
            lines += ["", "No tool result came back, because:", *(f"- {reason}" for reason in unbacked)]
        if draft:
            lines += ["", f"The decision model's draft answer: {draft}"]
        messages = [Message(role="system", content=system), Message(role="user", content="\n".join(lines))]
        response_format = ResponseFormat(name="answer", json_schema=schema) if schema else None
        budget = flow.retry_budget
        while True:
            request = ModelRequest(messages=list(messages), response_format=response_format,
                                   temperature=flow.polish.temperature, max_tokens=flow.polish.max_tokens)
            try:
                turn = self._model_call(polisher, rec, StepKind.POLISH, 0, None, request,
                                        note=f"{UNBACKED_NOTE}{'; '.join(unbacked)}" if unbacked is not None else None)
            except ProviderError as exc:
                raise RunFailed(exc.code, exc.message) from exc
            if not schema:
                return turn.content or ""
            answer, problem = _structured(turn.content, schema)
            if problem is None:
                return answer
            rec.record(StepKind.ERROR, error_code=str(ErrorCode.INVALID_ARGUMENT),
                       error_message=f"polish output does not match the schema: {problem}")
            if budget <= 0:
                raise RunFailed(ErrorCode.INVALID_ARGUMENT, f"the polish model's answer never matched the schema: {problem}")
            budget -= 1
            messages += [Message(role="assistant", content=turn.content or ""),
                         Message(role="user", content=f"That JSON is not valid against the schema: {problem}. Reply again with corrected JSON only.")]


def parse_retry_messages(content: str | None, problem: str) -> list[Message]:
    """What the model reads after a tool call that could not be parsed: its own text, then why."""
    return [Message(role="assistant", content=content or ""),
            Message(role="user", content=f"{RETRY_PREFIX}your tool call could not be read ({problem}). "
                                         "Write it again as valid JSON, or answer without a tool.")]


_ANSWER_NOW = [Message(role="user", content="Do not call a tool now. Answer my question in plain sentences, "
                                           "using only the tool results above.")]


def _answer_after_max_rounds(turn: ModelTurn, tools: dict[str, Tool], flow: Flow, done: list[CallOutcome]) -> str:
    """The decision model's last word after max_rounds, with no polish model: it must be text.

    Asked without tools, a model may still write a call (as text: a small model's habit) or
    nothing. Neither is an answer, so the run fails with MAX_ROUNDS instead of succeeding with
    an empty answer or a call's JSON; the message quotes the last tool result, so the person
    still sees what the tools found. (A success made of a raw tool result would hand a client,
    say an MCP host, something no model ever phrased as an answer.)"""
    offered = ModelRequest(messages=[], tools=[t.spec() for t in tools.values()])
    read = calls_from_text(turn, offered)
    if (turn.content or "").strip() and not read.tool_calls and not read.parse_errors:
        return turn.content or ""
    wrote = "a tool call" if (turn.content or "").strip() else "nothing"
    last = f"; the last tool result ({done[-1].call.name}): {done[-1].content_for_model()[:300]}" if done else ""
    raise RunFailed(ErrorCode.MAX_ROUNDS, f"after {flow.max_rounds} rounds of tools, asked to answer without "
                                          f"them, the decision model wrote {wrote} instead of an answer, and the "
                                          f"flow has no polish model to write one{last}")


def _way_for(flow: Flow, decider: Provider) -> CallingWay:
    """A fresh way per run: `auto` remembers its fallbacks for the rest of the run only.
    A provider that brings its own way uses it: a replay answers whole decisions from its
    record (replay.py), whatever way made them."""
    own = getattr(decider, "decision_way", None)
    if callable(own):
        return own()
    rules = [Rule(r.pattern, r.tool) for r in flow.router_rules]
    return make_way(flow.decision.calling_way, decider.capabilities, rules)


def _tool_step(outcome: CallOutcome, round_no: int, repairs: dict[str, dict]) -> dict[str, Any]:
    """A tool call's step: the call as it ran, its result or error, and what was repaired."""
    return dict(
        round=round_no, name=outcome.call.name, tool_call_id=outcome.call.id,
        arguments=outcome.call.arguments, result=outcome.result,
        error_code=outcome.error_code and str(outcome.error_code), error_message=outcome.error_message,
        latency_ms=outcome.latency_ms,
        response={"executed": outcome.error_code not in NOT_RUN | {ErrorCode.APPROVAL_DENIED},
                  "raw_arguments": outcome.call.raw_arguments,
                  **({"dropped_ungrounded": outcome.call.dropped_arguments} if outcome.call.dropped_arguments else {}),
                  **repairs.get(outcome.call.id, {})},
    )


def _repair(calls: list[ToolCall], tools: dict[str, Tool]) -> tuple[list[ToolCall], dict[str, dict]]:
    """Calls with copied schema keywords and undeclared keys dropped, and per call id what was
    dropped."""
    repaired, notes = [], {}
    for call in calls:
        if call.name in tools:
            call, dropped = drop_schema_echo(call, tools[call.name])
            if dropped:
                notes[call.id] = {"dropped_schema_keys": dropped}
            call, unknown = drop_undeclared(call, tools[call.name])
            if unknown:
                notes.setdefault(call.id, {})["dropped_unknown_keys"] = unknown
        repaired.append(call)
    return repaired, notes




def _structured(content: str | None, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """Parse (repairing if needed) and validate a structured answer."""
    if not content or not content.strip():
        return None, "the answer is empty"
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        value = json_repair.loads(content)
    errors = sorted(schemas.validator(schema, "polish.output_schema").iter_errors(value), key=lambda e: e.path)
    if errors:
        return value, "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:5])
    return value, None


UNBACKED_NOTE = "no tool result backs this answer: "  # the polish step's note, then the reasons
NO_TOOL_RESULT_NOTE = ("No tool gave a result for this question, so you have no facts from tools. Do not state "
                       "weather, times, prices, names, numbers or any other fact as if a tool had looked it up. "
                       "Say plainly that it could not be looked up and why, in the user's language.")


def _progress_label(provider: Provider, note: str | None) -> str:
    """What a watcher sees while a model call runs: a stage's own label ("relevance of
    get_weather"), else the model; why `auto` chose its way stays in the step's note."""
    stage = (note or "").split("; ")[0]
    return stage if stage and not stage.startswith(("auto: ", "after fallback: ")) else f"{provider.name}/{provider.model}"


def unbacked_reasons(state: LoopState, flow: Flow) -> list[str] | None:
    """Why the answer has no tool result behind it, or None when one backs it (or no tool was
    wanted: the decision answered directly and the flow lets it)."""
    demanded = flow.tool_choice not in ("auto", "none")
    if not (state.wanted_tools or demanded) or any(o.error_code is None for o in state.done):
        return None
    reasons = list(dict.fromkeys(state.unbacked))
    if demanded and not state.wanted_tools:
        reasons.append("the flow requires a tool call, and the decision model made none")
    return reasons or ["the decision model called a tool, and no call gave a result"]


def no_result_reason(name: str, code: ErrorCode | str, message: str | None) -> str:
    """Why a call gave no result, for the run's outcome and the polish model."""
    message = (message or "").strip()
    if code == ErrorCode.APPROVAL_DENIED:
        return f"{name} was denied: {message}" if message else f"{name} was denied"
    verb = "failed" if code not in NOT_RUN else "was not run"
    return f"{name} {verb}: {code}" + (f" ({message[:300]})" if message else "")


def unreadable_reason(problem: str) -> str:
    return f"a tool call could not be read: {problem}"


def withheld_reason(tool: str, argument: str, value: Any) -> str:
    return f"{tool} was not run: its {argument} {value!r} is the tool's own example, and nothing in the conversation says it"
