"""Where a run's loop is: one versioned object, the only thing a paused, interrupted or
re-run run needs to go on. The engine commits it with the steps it belongs to (Store), resume
reads it back, and rerun.py builds one from a recorded run, with the same helpers the engine
uses (fresh, apply_round, note_unreadable, signature), so the two never count a round differently.

The saved form is JSON with `"v": 1`; a version this FlowCall cannot read is refused with a
clear error instead of being guessed at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from flowcall.calling.said import DOC_CHECK_PREFIX
from flowcall.core import artifacts as artifact_codec
from flowcall.core.call_ids import repeated
from flowcall.core.errors import ConfigError, ErrorCode
from flowcall.core.messages import GateReading, Message, ToolCall
from flowcall.core.spec import Flow
from flowcall.core.steps import ChatTurn
from flowcall.core.variables import fill_variables
from flowcall.tools.base import Tool
from flowcall.tools.execute import NOT_RUN, CallOutcome

FORMAT = 1  # raise it when the layout changes incompatibly; optional new fields keep it

# How FlowCall's note after an unreadable call begins. States saved before messages carried
# their origin are read by these beginnings (_with_origins).
RETRY_PREFIX = f"{ErrorCode.PARSE_FAILED}: "
_NOTE_PREFIXES = (RETRY_PREFIX, DOC_CHECK_PREFIX)


@dataclass
class LoopState:
    messages: list[Message]
    budget: int
    done: list[CallOutcome] = field(default_factory=list)  # executed calls, for the polish model
    seen: set[str] = field(default_factory=set)  # calls already answered, to stop a model that repeats itself
    last_text: str | None = None
    finished: bool = False
    round_no: int = 0  # decision calls made
    tool_rounds: int = 0  # rounds in which a tool ran; wrong-only rounds are paid from the retry budget
    pending: list[ToolCall] = field(
        default_factory=list
    )  # decided calls not yet run (waiting for a person, or started)
    pending_repairs: dict[str, dict] = field(default_factory=dict)
    # ids of pending calls whose tools were started when this state was committed: after a
    # crash their results may be missing although they ran (see Engine, "may have run")
    running: list[str] = field(default_factory=list)
    # a person's decisions (Decision as JSON) on pending calls, by call id: kept when a sub-flow
    # paused the round before they ran, so the person is not asked about them again
    decided: dict[str, dict[str, Any]] = field(default_factory=dict)
    done_records: list[dict[str, Any]] = field(
        default_factory=list
    )  # `done` as restored, before tools are known
    # a re-run from a tool call: the outcomes (as `done` records) of the round's calls before
    # it, kept from the earlier run; with the pending calls they make the round that is counted
    kept: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)  # the run context's hidden data (DataFrames)
    # a decision called a tool (even one that never ran): an answer with no tool result is then unbacked
    wanted_tools: bool = False
    unbacked: list[str] = field(default_factory=list)  # why calls gave no result: refused, failed, denied
    # what the relevance gate found for the question (messages.GateReading, dumped): why no tool
    # was called, or which tools fit it, so a part whose tool gave no result is said
    gate: dict[str, Any] | None = None
    settled: int = 0  # unbacked reasons before a later round got a result: the model went another way
    claims: list[str] = field(default_factory=list)  # the answer's words for actions no tool did (not saved)

    @classmethod
    def fresh(cls, flow: Flow, question: str, context: Sequence[ChatTurn] = ()) -> LoopState:
        """The state a run starts from: the flow's system prompt, the chat before the question
        (a flow with `conversation`), and the question."""
        messages = []
        if flow.decision.system_prompt:
            messages.append(Message(role="system", content=fill_variables(flow.decision.system_prompt)))
        if flow.conversation:
            messages += [Message(role=turn.role, content=turn.content) for turn in context]
        messages.append(Message(role="user", content=question))
        return cls(messages=messages, budget=flow.retry_budget)

    def note_unreadable(self, content: str | None, problem: str) -> None:
        """What the model reads after a tool call that could not be read: its own text, then why."""
        self.messages += [
            Message(role="assistant", content=content or ""),
            Message.note(
                f"{RETRY_PREFIX}your tool call could not be read ({problem}). "
                "Write it again as valid JSON, or answer without a tool."
            ),
        ]

    def unbacked_reasons(self, flow: Flow) -> list[str] | None:
        """Why the answer has no tool result behind it, or None when one backs it. A flow that
        offers tools and ends with no result is never a plain success: the gate's reason when no
        tool was wanted, unless the flow allows answers without tools (small talk)."""
        demanded = flow.tool_choice not in ("auto", "none")
        if not flow.tools or flow.tool_choice == "none" or any(o.error_code is None for o in self.done):
            return None
        if not (self.wanted_tools or demanded):
            if flow.answers_without_tools:
                return None
            reading = GateReading.model_validate(self.gate) if self.gate else None
            question = next((m.content or "" for m in reversed(self.messages) if m.from_user), "")
            return [
                reading.no_fit_reason(question)
                if reading
                else "the decision model answered without calling a tool"
            ]
        reasons = list(dict.fromkeys(self.unbacked))
        if demanded and not self.wanted_tools:
            reasons.append("the flow requires a tool call, and the decision model made none")
        return reasons or ["the decision model called a tool, and no call gave a result"]

    def undone_parts(self, tools: dict[str, Tool]) -> list[str]:
        """In a run that got some tool result, the parts of the request that got none: calls
        that failed, were refused or denied (unless the tool, or a later round, gave a result
        after all), and tools the gate found fitting the question that were never called, from
        a source no call of the run used (a source's tools are often alternatives for one need:
        add_task and list_tasks; tools of two sources, weather and time, are two needs)."""
        gave = {o.call.name for o in self.done if o.error_code is None}
        failed = [
            r
            for r in dict.fromkeys(self.unbacked[self.settled :])
            if not r.startswith(tuple(f"{n} " for n in gave)) and not r.startswith(UNREADABLE)
        ]  # read again: what the model meant ran, or is said below
        if not self.gate:
            return failed
        called = {o.call.name for o in self.done} | {c.name for c in self.pending}
        used = {_source(tools[name]) for name in called if name in tools}
        never = [
            name
            for name in GateReading.model_validate(self.gate).fits
            if name not in called
            and name in tools
            and _source(tools[name]) not in used
            and not any(reason.startswith(f"{name} ") for reason in failed)
        ]
        return failed + [f"{name} fits the request, and no call of it was made" for name in never]

    @staticmethod
    def signature(call: ToolCall) -> str:
        """A call as it is told apart from another: its tool and its arguments."""
        return call.name + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False)

    def take_results(self, outcomes: list[CallOutcome]) -> None:
        """Calls' results back to the model (as it reads them: cut to size) and counted: a call
        that ran is done, a call that answered is seen (asked again, it is not run again)."""
        for outcome in outcomes:
            self.messages.append(
                Message(
                    role="tool",
                    tool_call_id=outcome.call.id,
                    name=outcome.call.name,
                    content=outcome.content_for_model(),
                )
            )
            if outcome.error_code not in NOT_RUN:
                self.done.append(outcome)
                if outcome.error_code is None:
                    self.seen.add(self.signature(outcome.call))

    def apply_round(
        self, outcomes: list[CallOutcome], tools: dict[str, Tool]
    ) -> tuple[list[CallOutcome], CallOutcome | None, bool]:
        """A round's outcomes taken in: results back to the model, why calls gave no result,
        and the round counted whole, with the calls a re-run kept from it (rerun.py). The
        round's calls are no longer pending. Returns the whole round, its first wrong call and
        whether the budget was already spent (count_round)."""
        whole_round, self.kept = [*(restored_outcome(r, tools) for r in self.kept), *outcomes], []
        if any(o.error_code is None for o in outcomes):
            self.settled = len(self.unbacked)  # the model went on after those failures, and got a result
        self.take_results(outcomes)
        self.unbacked += [
            no_result_reason(o.call.name, o.error_code, o.error_message)
            for o in outcomes
            if o.error_code is not None
        ]
        wrong, exhausted = self.count_round(whole_round)
        self.pending, self.pending_repairs, self.running, self.decided = [], {}, [], {}
        return whole_round, wrong, exhausted

    def count_round(self, whole_round: list[CallOutcome]) -> tuple[CallOutcome | None, bool]:
        """A round of calls counted: a wrong call is paid from the retry budget, a call that ran
        makes it a tool round. Returns (the first wrong call, whether the budget was already spent)."""
        wrong = next((o for o in whole_round if o.error_code in NOT_RUN), None)
        exhausted = wrong is not None and self.budget <= 0
        if wrong is not None and not exhausted:
            self.budget -= 1
        if any(o.error_code not in NOT_RUN for o in whole_round):
            self.tool_rounds += 1
        return wrong, exhausted

    def checkpoint(self) -> dict[str, Any]:
        return {
            "v": FORMAT,
            "messages": [m.model_dump(mode="json") for m in self.messages],
            "budget": self.budget,
            "done": [outcome_record(o) for o in self.done],
            "seen": sorted(self.seen),
            "last_text": self.last_text,
            "finished": self.finished,
            "round_no": self.round_no,
            "tool_rounds": self.tool_rounds,
            "pending": [c.model_dump(mode="json") for c in self.pending],
            "pending_repairs": self.pending_repairs,
            # optional fields: a state without them reads the same
            **({"running": self.running} if self.running else {}),
            **({"decided": self.decided} if self.decided else {}),
            **({"kept": self.kept} if self.kept else {}),
            **({"artifacts": artifact_codec.encode(self.artifacts)} if self.artifacts else {}),
            **({"wanted_tools": True} if self.wanted_tools else {}),
            **({"unbacked": self.unbacked} if self.unbacked else {}),
            **({"gate": self.gate} if self.gate else {}),
            **({"settled": self.settled} if self.settled else {}),
        }

    @classmethod
    def restore(cls, data: dict[str, Any]) -> LoopState:
        if not isinstance(data, dict):
            raise ConfigError("the run's saved state is not a JSON object; it cannot be resumed")
        version = data.get("v", 1)  # states saved before the field existed are version 1
        if version != FORMAT:
            raise ConfigError(
                f"the run's saved state has format version {version!r}, and this FlowCall reads "
                f"version {FORMAT} only; resume it with the FlowCall version that saved it"
            )
        try:
            state = cls(
                messages=_with_origins(data["messages"]),
                budget=data["budget"],
                seen=set(data["seen"]),
                last_text=data["last_text"],
                finished=data["finished"],
                round_no=data["round_no"],
                tool_rounds=data["tool_rounds"],
                pending=[ToolCall.model_validate(c) for c in data["pending"]],
                pending_repairs=data["pending_repairs"],
                running=list(data.get("running", [])),
                decided=dict(data.get("decided", {})),
                done_records=data["done"],
                kept=data.get("kept", []),
                artifacts=artifact_codec.decode(data.get("artifacts")),
                wanted_tools=bool(data.get("wanted_tools")),
                unbacked=list(data.get("unbacked", [])),
                gate=data.get("gate"),
                settled=int(data.get("settled", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            raise ConfigError(
                f"the run's saved state is incomplete or malformed ({type(exc).__name__}: {exc}); "
                "it cannot be resumed"
            ) from exc
        _one_id_each(state.pending)
        return state


def _one_id_each(pending: list[ToolCall]) -> None:
    """A person decides each pending call by its id: two that share one (a state saved by an
    older FlowCall, or edited) would share a decision, so such a state is not resumed."""
    shared = repeated(c.id for c in pending)
    if shared:
        names = " and ".join(repr(c.name) for c in pending if c.id == shared[0])
        raise ConfigError(
            f"the run's saved state has calls {names} with one id, {shared[0][:40]!r}: a decision "
            "could not tell them apart, so it cannot be resumed; ask its question again"
        )


def _source(tool: Tool) -> str:
    """The namespace of a tool's version (weather/v1/get_weather: weather; an MCP server's name)."""
    return tool.version.split("/", 1)[0]


def _with_origins(records: list[dict[str, Any]]) -> list[Message]:
    """Saved messages; one saved without an origin is a note when it begins as FlowCall's notes do."""
    messages = [Message.model_validate(m) for m in records]
    return [
        m.model_copy(update={"origin": "note"})
        if m.origin is None and m.role == "user" and (m.content or "").startswith(_NOTE_PREFIXES)
        else m
        for m in messages
    ]


def no_result_reason(name: str, code: ErrorCode | str, message: str | None) -> str:
    """Why a call gave no result, for the run's outcome and the polish model."""
    message = (message or "").strip()
    if code == ErrorCode.APPROVAL_DENIED:
        return f"{name} was denied: {message}" if message else f"{name} was denied"
    verb = "failed" if code not in NOT_RUN else "was not run"
    return f"{name} {verb}: {code}" + (f" ({message[:300]})" if message else "")


UNREADABLE = "a tool call could not be read"


def unreadable_reason(problem: str) -> str:
    return f"{UNREADABLE}: {problem}"


def outcome_record(o: CallOutcome) -> dict[str, Any]:
    return {
        "call": o.call.model_dump(mode="json"),
        "result": o.result,
        "error_code": o.error_code and str(o.error_code),
        "error_message": o.error_message,
        "latency_ms": o.latency_ms,
    }


def restored_outcome(record: dict[str, Any], tools: dict[str, Tool]) -> CallOutcome:
    call = ToolCall.model_validate(record["call"])
    return CallOutcome(
        call,
        tools.get(call.name),
        result=record["result"],
        error_code=ErrorCode(record["error_code"]) if record["error_code"] else None,
        error_message=record["error_message"],
        latency_ms=record["latency_ms"],
    )
