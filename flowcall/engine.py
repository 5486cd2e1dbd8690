"""The loop: decide -> validate -> execute -> ... -> polish, emitting a step for each event.

The engine knows nothing about storage or UI: it hands finished steps to a StepSink and an
optional callback. Providers come from a factory, so tests run the whole loop scripted.
"""

from __future__ import annotations

import json
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable, ContextManager

import jsonschema
import json_repair

from flowcall.approval import Approver, Decision, needs_approval
from flowcall.calling import make_way
from flowcall.calling.base import CallingWay, calls_from_text
from flowcall.calling.relevance import RETRY_PREFIX
from flowcall.calling.router import Rule
from flowcall.errors import ErrorCode, FlowCallError, ProviderError
from flowcall.messages import Message, ModelRequest, ModelTurn, ResponseFormat, ToolCall, ToolSpec
from flowcall.providers import NotConfigured
from flowcall.providers.base import Provider
from flowcall.spec import Flow, ModelConfig
from flowcall.steps import Run, RunStatus, Step, StepKind, StepSink, utcnow
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.execute import CallOutcome, check_call, drop_schema_echo, run_calls
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
    """Numbers steps, stamps them with the run's trace id, and hands them on as they end."""

    def __init__(self, run: Run, sink: StepSink, callback: StepCallback | None):
        self.run, self.sink, self.callback = run, sink, callback

    def record(self, step_kind: StepKind, **fields: Any) -> Step:
        step = Step(run_id=self.run.id, seq=len(self.run.steps) + 1, kind=step_kind, trace_id=self.run.trace_id, **fields)
        self.run.steps.append(step)
        self.sink.step_recorded(step)
        if self.callback:
            self.callback(step)
        return step


class _Paused(Exception):
    """A call waits for a person; the run stops here and keeps its state."""

    def __init__(self, state: _Loop):
        self.state = state


@dataclass
class _Loop:
    """Where the loop is: all a paused run needs to go on (as JSON, in the runs table)."""

    messages: list[Message]
    budget: int
    done: list[CallOutcome] = field(default_factory=list)  # executed calls, for the polish model
    seen: set[str] = field(default_factory=set)  # calls already answered, to stop a model that repeats itself
    last_text: str | None = None
    finished: bool = False
    round_no: int = 0  # decision calls made
    tool_rounds: int = 0  # rounds in which a tool ran; wrong-only rounds are paid from the retry budget
    pending: list[ToolCall] = field(default_factory=list)  # calls waiting for a person
    pending_repairs: dict[str, dict] = field(default_factory=dict)
    done_records: list[dict[str, Any]] = field(default_factory=list)  # `done` as restored, before tools are known
    # a re-run from a tool call: the outcomes (as `done` records) of the round's calls before
    # it, kept from the earlier run; with the pending calls they make the round that is counted
    kept: list[dict[str, Any]] = field(default_factory=list)

    FORMAT = 1  # the checkpoint's "v": raise it when the layout changes, so a FlowCall refuses what it cannot read

    def checkpoint(self) -> dict[str, Any]:
        return {
            "v": self.FORMAT, "messages": [m.model_dump(mode="json") for m in self.messages], "budget": self.budget,
            "done": [{"call": o.call.model_dump(mode="json"), "result": o.result,
                      "error_code": o.error_code and str(o.error_code), "error_message": o.error_message,
                      "latency_ms": o.latency_ms} for o in self.done],
            "seen": sorted(self.seen), "last_text": self.last_text, "finished": self.finished,
            "round_no": self.round_no, "tool_rounds": self.tool_rounds,
            "pending": [c.model_dump(mode="json") for c in self.pending], "pending_repairs": self.pending_repairs,
            **({"kept": self.kept} if self.kept else {}),  # optional: older checkpoints read the same
        }

    @classmethod
    def restore(cls, data: dict[str, Any]) -> _Loop:
        version = data.get("v", 1)  # checkpoints saved before the field existed are version 1
        if version != cls.FORMAT:
            from flowcall.errors import ConfigError

            raise ConfigError(f"the run's saved state has format version {version!r}, and this FlowCall reads "
                              f"version {cls.FORMAT} only; resume it with the FlowCall version that paused it")
        return cls(messages=[Message.model_validate(m) for m in data["messages"]], budget=data["budget"],
                   seen=set(data["seen"]), last_text=data["last_text"], finished=data["finished"],
                   round_no=data["round_no"], tool_rounds=data["tool_rounds"],
                   pending=[ToolCall.model_validate(c) for c in data["pending"]],
                   pending_repairs=data["pending_repairs"], done_records=data["done"], kept=data.get("kept", []))


def _restored(record: dict[str, Any], tools: dict[str, Tool]) -> CallOutcome:
    call = ToolCall.model_validate(record["call"])
    return CallOutcome(call, tools.get(call.name), result=record["result"],
                       error_code=ErrorCode(record["error_code"]) if record["error_code"] else None,
                       error_message=record["error_message"], latency_ms=record["latency_ms"])


@dataclass
class _Models:
    """A run's providers, built once: before anything is recorded where they can be
    (Engine._models_before_run), else inside the run."""

    decider: Provider
    polisher: Provider | None

    @classmethod
    def build(cls, flow: Flow, provider_for: ProviderFactory) -> _Models:
        return cls(provider_for(flow.decision), provider_for(flow.polish) if flow.polish is not None else None)


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

    def resume(self, run: Run, flow: Flow, checkpoint: dict[str, Any], *, approver: Approver | None,
               on_step: StepCallback | None = None) -> Run:
        """Go on with a run that waited for approval, from its saved state: the pending calls are
        put to `approver`, then the loop continues. Hidden-context artifacts do not survive a
        pause (they may be DataFrames); tools that need them must run again.

        `sink.run_resumed` claims the run (the store: a compare-and-set on its status), so of
        two resumers only one goes on; the other gets a ConfigError. The state is read first:
        a format this FlowCall cannot read is refused while the run still waits."""
        state = _Loop.restore(checkpoint)
        self.sink.run_resumed(run)
        run.status = RunStatus.RUNNING
        return self._execute(flow, run, _Recorder(run, self.sink, on_step), approver, state)

    def continue_from(self, flow: Flow, question: str, checkpoint: dict[str, Any], reused: list[Step], *,
                      flow_version_id: int | None = None, on_step: StepCallback | None = None,
                      approver: Approver | None = None) -> Run:
        """A new run that starts from a loop state instead of from the question: re-running
        from a step. `reused` are the earlier run's steps that led there; they are recorded
        first (marked as reused), so the new run reads whole in the inspector. Their tokens
        stay on them for display; the earlier run spent them (see steps.is_reused)."""
        models = self._models_before_run(flow)  # as in run(): a missing key before any record
        run = Run(id=str(uuid.uuid4()), flow_name=flow.name, flow_version_id=flow_version_id,
                  question=question, trace_id=uuid.uuid4().hex)
        self.sink.run_started(run)
        recorder = _Recorder(run, self.sink, on_step)
        for step in reused:
            fields = step.model_dump(exclude={"run_id", "seq", "trace_id", "kind"})
            recorder.record(step.kind, **fields)
        return self._execute(flow, run, recorder, approver, _Loop.restore(checkpoint), models)

    def _models_before_run(self, flow: Flow) -> _Models | None:
        """The flow's providers, or NotConfigured naming the variable to set. Any other failure
        to build one (no model file, a broken GGUF) is left to the run, which records it."""
        try:
            return _Models.build(flow, self.provider_for)
        except NotConfigured:
            raise
        except Exception:  # built again inside the run, where the failure is recorded
            return None

    def _execute(self, flow: Flow, run: Run, recorder: _Recorder, approver: Approver | None,
                 state: _Loop | None, models: _Models | None = None) -> Run:
        try:
            with self._registry_for(flow) as registry:
                models = models or _Models.build(flow, self.provider_for)  # a failure here is recorded
                run.final_answer = self._run(flow, run.question, run, recorder, registry, approver, state, models)
            run.status = RunStatus.SUCCEEDED
        except _Paused as paused:
            run.status = RunStatus.WAITING_APPROVAL
            self.sink.run_paused(run, paused.state.checkpoint())
            return run
        except FlowCallError as exc:
            run.status, run.error = RunStatus.FAILED, f"{exc.code}: {exc.message}"
            if not isinstance(exc, RunFailed):
                recorder.record(StepKind.ERROR, error_code=str(exc.code), error_message=exc.message)
        except Exception as exc:  # a bug or an unexpected library error: keep the run, say what broke
            run.status, run.error = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
            recorder.record(StepKind.ERROR, error_code="INTERNAL", error_message=run.error)
        run.ended_at = utcnow()
        self.sink.run_finished(run)
        return run

    def decide_only(self, flow: Flow, messages: list[Message], tools: list[ToolSpec], *,
                    label: str | None = None) -> tuple[Run, ModelTurn | None]:
        """One decision, nothing executed: for evaluations, where the tools exist only as
        definitions. Still a recorded run, so each case can be opened in the inspector."""
        question = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")
        run = Run(id=str(uuid.uuid4()), flow_name=label or flow.name, question=question, trace_id=uuid.uuid4().hex)
        self.sink.run_started(run)
        rec = _Recorder(run, self.sink, None)
        turn = None
        try:
            decider = self.provider_for(flow.decision)
            way = _way_for(flow, decider)
            request = ModelRequest(messages=messages, tools=tools, tool_choice=flow.tool_choice,
                                   parallel_tool_calls=flow.parallel_tool_calls,
                                   temperature=flow.decision.temperature, max_tokens=flow.decision.max_tokens)
            turn = self._decide(decider, way, request, rec, 1)
            run.final_answer = {"tool_calls": [c.model_dump(mode="json") for c in turn.tool_calls], "answer": turn.content}
            run.status = RunStatus.SUCCEEDED
        except FlowCallError as exc:
            run.status, run.error = RunStatus.FAILED, f"{exc.code}: {exc.message}"
        run.ended_at = utcnow()
        self.sink.run_finished(run)
        return run, turn

    # ---------------------------------------------------------------- the loop
    def _registry_for(self, flow: Flow) -> ContextManager[ToolRegistry]:
        """The plugin registry, plus the flow's MCP and HTTP tools while the run lasts."""
        if not (flow.mcp_servers or flow.http_tools):
            return nullcontext(self.registry)
        from flowcall.tools.sources import run_registry  # the mcp SDK loads only when a flow needs it

        return run_registry(self.registry, flow)

    def _run(self, flow: Flow, question: str, run: Run, rec: _Recorder, registry: ToolRegistry,
             approver: Approver | None, state: _Loop | None, models: _Models) -> Any:
        tools = {t.name: t for t in registry.resolve(flow.tools)}
        decider = models.decider
        way = _way_for(flow, decider)
        context = RunContext(run_id=run.id, store=self.sink)  # tools that keep data use the run's store
        changed = self._check_pins(flow, tools, rec)
        if state is None:
            messages = []
            if flow.decision.system_prompt:
                messages.append(Message(role="system", content=fill_variables(flow.decision.system_prompt)))
            messages.append(Message(role="user", content=question))
            state = _Loop(messages=messages, budget=flow.retry_budget)
        else:
            state.done = [_restored(o, tools) for o in state.done_records]
        while state.pending or (state.tool_rounds < flow.max_rounds and not state.finished):
            if state.pending:  # a resumed run: the calls that waited for a person
                calls, repairs, state.pending, state.pending_repairs = state.pending, state.pending_repairs, [], {}
            else:
                state.round_no += 1
                choice = flow.tool_choice if state.tool_rounds == 0 or flow.tool_choice in ("auto", "none") else "auto"
                request = ModelRequest(
                    messages=list(state.messages), tools=[t.spec() for t in tools.values()], tool_choice=choice,
                    parallel_tool_calls=flow.parallel_tool_calls, temperature=flow.decision.temperature,
                    max_tokens=flow.decision.max_tokens,
                )
                turn = self._decide(decider, way, request, rec, state.round_no)
                state.last_text = turn.content
                if turn.parse_errors and not turn.tool_calls:
                    state.budget = self._spend(state.budget, ErrorCode.PARSE_FAILED, turn.parse_errors[0], rec)
                    state.messages += parse_retry_messages(turn.content, turn.parse_errors[0])
                    continue
                if not turn.tool_calls:
                    state.finished = True
                    break
                calls, repairs = _repair(turn.tool_calls, tools)
                if all(self._signature(c) in state.seen for c in calls):
                    state.finished = True  # only repeats of answered calls: the model has what it needs
                    break
                state.messages.append(Message(role="assistant", content=turn.content, tool_calls=calls))
            calls, settled = self._approve(calls, repairs, tools, flow, approver, state, rec, changed)
            outcomes = self._run_tools(calls, repairs, tools, context, flow, state.round_no, rec, settled)
            # the round is counted whole: with the calls a re-run kept from it (see rerun.py)
            whole_round, state.kept = [*(_restored(r, tools) for r in state.kept), *outcomes], []
            wrong = next((o for o in whole_round if o.error_code in NOT_RUN), None)
            for outcome in outcomes:
                state.messages.append(Message(role="tool", tool_call_id=outcome.call.id, name=outcome.call.name,
                                              content=outcome.content_for_model()))
                if outcome.error_code not in NOT_RUN:
                    state.done.append(outcome)
                    if outcome.error_code is None:
                        state.seen.add(self._signature(outcome.call))
            if wrong is not None:
                state.budget = self._spend(state.budget, wrong.error_code, wrong.error_message or "", rec)
            if any(o.error_code not in NOT_RUN for o in whole_round):
                state.tool_rounds += 1

        messages, round_no, finished, last_text, done = (state.messages, state.round_no, state.finished,
                                                         state.last_text, state.done)
        if models.polisher is not None:  # reaching max_rounds is the normal hand-off to the polish model
            return self._polish(flow, models.polisher, question, done, last_text if finished else None, rec)
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

    def _approve(self, calls: list[ToolCall], repairs: dict[str, dict], tools: dict[str, Tool], flow: Flow,
                 approver: Approver | None, state: _Loop, rec: _Recorder,
                 changed: frozenset[str] = frozenset()) -> tuple[list[ToolCall], dict[str, CallOutcome]]:
        """Put the calls that need a person to `approver`. Returns the calls as they will run
        (edited ones with the person's arguments) and the denied ones' outcomes by call id.
        With no answer, the run pauses here (_Paused) with these calls pending."""
        gated = [c for c in calls if check_call(c, tools) is None and needs_approval(tools[c.name], flow, changed)]
        decisions: dict[str, Decision] = {}
        for call in gated:
            decision = approver(call, tools[call.name]) if approver else None
            if decision is None:
                state.pending, state.pending_repairs = calls, repairs
                for waiting in gated:
                    rec.record(StepKind.APPROVAL, round=state.round_no, name=waiting.name, tool_call_id=waiting.id,
                               arguments=waiting.arguments, note="waiting for a person to approve, deny or edit")
                raise _Paused(state)
            decisions[call.id] = decision
            if decision.action != "deny" and tools[call.name].version in changed:
                tool = tools[call.name]
                self.sink.pin_tool(flow.name, tool.version, fingerprint(tool), definition(tool))  # accepted as it is now
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
        return kept, settled

    # ---------------------------------------------------------------- pieces
    @staticmethod
    def _run_tools(calls: list[ToolCall], repairs: dict[str, dict], tools: dict[str, Tool], context: RunContext,
                   flow: Flow, round_no: int, rec: _Recorder,
                   settled: dict[str, CallOutcome] | None = None) -> list[CallOutcome]:
        """Check every call, run the valid ones at once, record a step per call, in call order.
        `settled` calls (denied by a person) are recorded with their outcome and not run."""
        runnable, outcomes = [], list((settled or {}).values())
        for call in calls:
            if call.id in (settled or {}):
                continue
            problem = check_call(call, tools)
            if problem is None:
                runnable.append((call, tools[call.name]))
            else:
                outcomes.append(problem)
        outcomes.extend(run_calls(runnable, context, flow.tool_timeout_s))
        outcomes.sort(key=lambda o: calls.index(o.call))
        for outcome in outcomes:
            rec.record(
                StepKind.TOOL_CALL, round=round_no, name=outcome.call.name, tool_call_id=outcome.call.id,
                arguments=outcome.call.arguments, result=outcome.result,
                error_code=outcome.error_code and str(outcome.error_code), error_message=outcome.error_message,
                latency_ms=outcome.latency_ms,
                response={"executed": outcome.error_code not in NOT_RUN | {ErrorCode.APPROVAL_DENIED},
                          "raw_arguments": outcome.call.raw_arguments,
                          **({"dropped_ungrounded": outcome.call.dropped_arguments} if outcome.call.dropped_arguments else {}),
                          **repairs.get(outcome.call.id, {})},
            )
        return outcomes

    @staticmethod
    def _signature(call: Any) -> str:
        return call.name + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)

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

    def _model_call(
        self, provider: Provider, rec: _Recorder, kind: StepKind, round_no: int, way_name: str | None,
        sent: ModelRequest, interpret: Callable[[ModelTurn], ModelTurn] | None = None, note: str | None = None,
    ) -> ModelTurn:
        """One provider call, recorded as one step (also when it fails, then re-raised)."""
        started_at, t0 = utcnow(), time.perf_counter()
        common = dict(round=round_no, name=f"{provider.name}/{provider.model}", calling_way=way_name, note=note,
                      started_at=started_at)
        try:
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
                rec: _Recorder) -> Any:
        assert flow.polish is not None
        schema = flow.polish.output_schema
        system = fill_variables(flow.polish.system_prompt or POLISH_SYSTEM)
        # Where the provider enforces the schema (grammar, json_schema), the schema text in the
        # prompt only costs tokens: ~400 prompt tokens, ~28% of the commute polish step locally.
        if schema and not polisher.capabilities.json_schema_output:
            system += ("\nReply with one JSON object valid against this JSON Schema, and nothing else:\n"
                       + json.dumps(schema, ensure_ascii=False))
        lines = [f"Question: {question}", "", "Tool results:"]
        lines += [f"- {o.call.name}({o.call.arguments_json()}) -> {o.content_for_model()}" for o in done] or ["(no tool was called)"]
        if draft:
            lines += ["", f"The decision model's draft answer: {draft}"]
        messages = [Message(role="system", content=system), Message(role="user", content="\n".join(lines))]
        response_format = ResponseFormat(name="answer", json_schema=schema) if schema else None
        budget = flow.retry_budget
        while True:
            request = ModelRequest(messages=list(messages), response_format=response_format,
                                   temperature=flow.polish.temperature, max_tokens=flow.polish.max_tokens)
            try:
                turn = self._model_call(polisher, rec, StepKind.POLISH, 0, None, request)
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


def _repair(calls: list[ToolCall], tools: dict[str, Tool]) -> tuple[list[ToolCall], dict[str, dict]]:
    """Calls with copied schema keywords dropped, and per call id what was dropped."""
    repaired, notes = [], {}
    for call in calls:
        if call.name in tools:
            call, dropped = drop_schema_echo(call, tools[call.name])
            if dropped:
                notes[call.id] = {"dropped_schema_keys": dropped}
        repaired.append(call)
    return repaired, notes


NOT_RUN = {ErrorCode.UNKNOWN_TOOL, ErrorCode.PARSE_FAILED, ErrorCode.INVALID_ARGUMENT, ErrorCode.MISSING_REQUIRED_FIELD}


def _structured(content: str | None, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """Parse (repairing if needed) and validate a structured answer."""
    if not content or not content.strip():
        return None, "the answer is empty"
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        value = json_repair.loads(content)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(value), key=lambda e: e.path)
    if errors:
        return value, "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:5])
    return value, None
