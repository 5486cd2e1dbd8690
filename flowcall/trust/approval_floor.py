"""Approvals a flow from the HTTP API cannot take away.

A flow's `needs_approval` is a person's decision: each call of those tools waits for someone.
A key that may import flows could otherwise export a saved flow, take a tool out of its
`needs_approval` and import it (stored as NAME-imported, or under any name) to run the tool
without anyone asking; or run an older version of a flow, from before a person added the
approval. So a flow imported through the API must ask for approval of every tool it attaches
that a saved flow asks approval for, and an older version runs through the API only if it asks
for all that the latest asks for. Tools are matched by their bare name, so
renaming the tool's MCP server or source changes nothing. Whether a server is `trusted` needs
a person's grant anyway (consent.py)."""

from __future__ import annotations

from typing import Iterable

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow


class ApprovalsLowered(ConfigError):
    """A flow from the API calls, without asking, a tool a saved flow asks a person about."""


def bare_name(ref: str) -> str:
    """The tool's name in a reference (`task/v1/add_task`, `srv/mcp/add_task`: add_task)."""
    return ref.split("/", 2)[2] if ref.count("/") >= 2 else ref


def asks_for(flow: Flow, ref: str) -> bool:
    """Does each call of the tool `ref` attached to `flow` wait for a person by its list? (as
    engine/approval.py reads it: the tool's name or its reference)"""
    return ref in flow.needs_approval or bare_name(ref) in flow.needs_approval


def _guarded(saved: Iterable[Flow]) -> dict[str, str]:
    """Each tool name a saved flow asks approval for -> the first such flow's name."""
    guarded: dict[str, str] = {}
    for flow in saved:
        for ref in flow.tools:
            if asks_for(flow, ref):
                guarded.setdefault(bare_name(ref), flow.name)
    return guarded


def check_approvals_kept(flow: Flow, saved: Iterable[Flow], *, advice: str = "") -> None:
    """ApprovalsLowered, naming each tool and the saved flow that asks for it, unless `flow`
    asks approval for every tool it attaches that one of `saved` asks approval for. `advice`:
    what to do instead (default: add the tools to its needs_approval)."""
    guarded = _guarded(saved)
    missing = [ref for ref in flow.tools if bare_name(ref) in guarded and not asks_for(flow, ref)]
    if not missing:
        return
    calls = "; ".join(
        f"{ref} (flow {guarded[bare_name(ref)]!r} asks a person for each call of it)" for ref in missing
    )
    names = ", ".join(repr(bare_name(ref)) for ref in missing)
    raise ApprovalsLowered(
        f"flow {flow.name!r} would call {calls} without asking anyone. Through the API a flow keeps "
        f"the approvals set on this machine: {advice or f'add {names} to its needs_approval'}"
    )
