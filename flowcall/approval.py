"""Approval: some calls wait for a person, who approves, denies or edits them.

Which: destructive tools (annotation), tools of MCP servers not marked trusted (MCP's
destructiveHint defaults to true, and an untrusted server's word is all there is), and any
tool the flow lists in `needs_approval`. A denied call goes back to the model as
APPROVAL_DENIED; an edited one runs with the person's arguments, checked like the model's.

Who answers is an Approver: the CLI asks on the terminal, the studio shows buttons. With no
one to ask, the run pauses: the engine saves its state in the database and the run can be
resumed later, also after a restart (`flowcall runs resume`).
"""

from __future__ import annotations

from typing import Any, Callable, Literal

from pydantic import BaseModel

from flowcall.messages import ToolCall
from flowcall.spec import Flow
from flowcall.tools.base import Tool


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
    if tool.source == "mcp" and tool.trusted:
        return False
    return tool.annotations.destructive


def approve_all(call: ToolCall, tool: Tool) -> Decision:
    return Decision(action="approve", by="approve-all")


def deny_all(call: ToolCall, tool: Tool) -> Decision:
    return Decision(action="deny", reason="denied by policy", by="deny-all")
