"""Approval: some calls wait for a person, who approves, denies or edits them.

Which: destructive tools (annotation), every tool of an MCP server not marked trusted by a
person (a grant, flowcall/trust.py), whatever the server's own annotations say, and any
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
    if tool.source == "mcp":
        # An MCP server's annotations are hints it writes about itself: a server the person has
        # not trusted cannot talk its way out of approval by calling a tool read-only.
        return not tool.trusted
    return tool.annotations.destructive


def approve_all(call: ToolCall, tool: Tool) -> Decision:
    return Decision(action="approve", by="approve-all")


def deny_all(call: ToolCall, tool: Tool) -> Decision:
    return Decision(action="deny", reason="denied by policy", by="deny-all")
