"""Approval: some calls wait for a person, who approves, denies or edits them.

Which: destructive tools (annotation), every tool of an MCP server not marked trusted by a
person (a grant, flowcall/trust/consent.py), whatever the server's own annotations say, any
tool the flow lists in `needs_approval`, and an MCP or HTTP tool whose definition changed since
it was first accepted (`changed_tools`). A denied call goes back to the model as
APPROVAL_DENIED; an edited one runs with the person's arguments, checked like the model's.

Who answers is an Approver: the CLI asks on the terminal, the studio shows buttons. With no
one to ask, the run pauses: the engine saves its state in the database and the run can be
resumed later, also after a restart (`flowcall runs resume`).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Literal

from pydantic import BaseModel

from flowcall.core.errors import ErrorCode
from flowcall.core.messages import ToolCall
from flowcall.core.spec import Flow
from flowcall.core.steps import WAITING_PREFIX, StepKind, StepSink
from flowcall.engine.loop_state import LoopState
from flowcall.engine.recorder import Recorder
from flowcall.tools.base import Tool
from flowcall.tools.execute import CallOutcome
from flowcall.tools.review import check_pins, definition, fingerprint


class Decision(BaseModel):
    action: Literal["approve", "deny", "edit"]
    arguments: dict[str, Any] | None = None  # the person's arguments, for "edit"
    reason: str = ""
    by: str = "person"


# Asked once per call that needs approval; None means nobody can answer now: the run pauses.
Approver = Callable[[ToolCall, Tool], Decision | None]


def needs_approval(tool: Tool, flow: Flow, changed: frozenset[str] = frozenset()) -> bool:
    """`changed`: versions of tools whose definition differs from the one first accepted."""
    if tool.name in flow.needs_approval or tool.version in flow.needs_approval or tool.version in changed:
        return True
    if tool.source == "mcp":
        # An MCP server's annotations are hints it writes about itself: a server the person has
        # not trusted cannot talk its way out of approval by calling a tool read-only.
        return not tool.trusted
    return tool.annotations.destructive


def approve_all(call: ToolCall, tool: Tool) -> Decision:
    return Decision(action="approve", by="approve-all")


def deny_all(call: ToolCall, tool: Tool) -> Decision:
    return Decision(action="deny", reason="denied by policy", by="deny-all")


MAYBE_RAN_NOTE = (
    f"{WAITING_PREFIX}: this call was started before the run was interrupted and its result "
    "was never recorded, so it may have run already: approve to run it again, or deny to go on "
    "without it"
)
WAITING_NOTE = f"{WAITING_PREFIX} to approve, deny or edit"


def why_approval(tool: Tool, flow: Flow, changed: frozenset[str] = frozenset()) -> str:
    """Why `needs_approval` holds for this tool, in a sentence a person can act on."""
    if tool.name in flow.needs_approval or tool.version in flow.needs_approval:
        return "this flow asks a person to approve each call of this tool (its needs_approval list)"
    if tool.version in changed:
        return "this tool's definition changed since it was first accepted; approving accepts it as it is now"
    if tool.source == "mcp" and not tool.trusted:
        return (
            "its MCP server is not trusted in this flow, so even its read-only tools wait for a "
            "person; mark the server trusted on the Flows page to skip this"
        )
    return "the tool says it changes or deletes something (its destructive hint)"


def waiting_note(tool: Tool, flow: Flow, changed: frozenset[str], maybe_ran: bool) -> str:
    """The note of a call that waits for a person: why it waits."""
    return MAYBE_RAN_NOTE if maybe_ran else f"{WAITING_NOTE}: {why_approval(tool, flow, changed)}"


def safe_to_repeat(tool: Tool) -> bool:
    """May a call whose result was lost run again unasked? Only a read-only tool whose
    read-only hint comes from code this machine trusts (a plugin, a trusted server): an
    untrusted server could call anything read-only."""
    return tool.annotations.read_only and (tool.source == "python" or tool.trusted)


def as_decided(call: ToolCall, decision: Decision) -> ToolCall:
    """The call as it will run: an edited one with the person's arguments."""
    if decision.action != "edit":
        return call
    return call.model_copy(
        update={
            "arguments": decision.arguments,
            "raw_arguments": json.dumps(decision.arguments, ensure_ascii=False),
        }
    )


def decision_step(call: ToolCall, decision: Decision) -> dict[str, Any]:
    """The approval step's fields for a person's decision on `call`."""
    return dict(
        name=call.name,
        tool_call_id=call.id,
        arguments=call.arguments,
        result={"action": decision.action, "by": decision.by, "reason": decision.reason or None},
        note=f"{decision.action} by {decision.by}" + (f": {decision.reason}" if decision.reason else ""),
        error_code=str(ErrorCode.APPROVAL_DENIED) if decision.action == "deny" else None,
    )


def ask(
    call: ToolCall, tool: Tool, approver: Approver | None, earlier: dict[str, dict[str, Any]]
) -> Decision | None:
    """The person's decision on a call: made earlier in this round (a sub-flow paused the round
    after it, LoopState.decided), or asked now; None when nobody can answer now."""
    if call.id in earlier:
        return Decision.model_validate(earlier[call.id])
    return approver(call, tool) if approver is not None else None


def apply_decisions(
    calls: list[ToolCall],
    decisions: dict[str, Decision],
    tools: dict[str, Tool],
    rec: Recorder,
    state: LoopState,
) -> tuple[list[ToolCall], dict[str, CallOutcome]]:
    """The round's calls as they will run (edited ones with the person's arguments), each
    decision recorded as an approval step (once: not again for one made before a sub-flow
    paused the round), and the denied calls' outcomes by call id."""
    kept, settled = [], {}
    for call in calls:
        decision = decisions.get(call.id)
        if decision is not None:
            call = as_decided(call, decision)
            if call.id not in state.decided:
                rec.record(StepKind.APPROVAL, round=state.round_no, **decision_step(call, decision))
            if decision.action == "deny":
                settled[call.id] = denied(call, tools[call.name], decision)
        kept.append(call)
    return kept, settled


def denied(call: ToolCall, tool: Tool, decision: Decision) -> CallOutcome:
    """A denied call's outcome: the model reads why, and that it must not ask again."""
    return CallOutcome(
        call,
        tool,
        error_code=ErrorCode.APPROVAL_DENIED,
        error_message="a person denied this call"
        + (f": {decision.reason}" if decision.reason else "")
        + "; do not call it again, answer without it",
    )


def changed_tools(sink: StepSink, flow: Flow, tools: dict[str, Tool], rec: Recorder) -> frozenset[str]:
    """MCP and HTTP tools are pinned as first used; one whose definition changed since gets a
    warning step, and its calls wait for a person this run (approving one accepts the new
    definition). Descriptions with instructions aimed at the model get a warning step too."""
    if not hasattr(sink, "tool_pins") or all(t.source == "python" for t in tools.values()):
        return frozenset()  # plugins are never pinned: no read
    check = check_pins(list(tools.values()), sink.tool_pins(flow.name))
    for name, note, result in check.warnings:
        rec.record(StepKind.WARNING, name=name, note=note, result=result)
    for tool in check.first_used:
        sink.pin_tool(flow.name, tool.version, fingerprint(tool), definition(tool))
    return check.changed
