"""A model profile as recorded: what the capability probe (probe.py) measured of one model.

A base type, like a run's steps: the store keeps profiles (store/profiles.py), the profiled
providers apply them to what the wire format allows (providers/profiled.py), the probe makes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from flowcall.core.steps import utcnow

# Named as the Capabilities fields they measure, so a profile updates them one to one.
CheckName = Literal["native_tools", "json_schema_output", "parallel_tool_calls"]


class Check(BaseModel):
    name: CheckName
    passed: bool
    detail: str
    latency_ms: float = 0.0
    # False when the provider failed for a reason outside the model (rate limit, quota, key,
    # server error, timeout): such a check does not change the model's capabilities
    conclusive: bool = True

    @property
    def outcome(self) -> str:
        return "pass" if self.passed else "fail" if self.conclusive else "inconclusive"


class ModelProfile(BaseModel):
    """What one model was measured to do, keyed by provider, model and base_url."""

    provider: str
    model: str
    base_url: str | None = None
    checks: list[Check] = Field(default_factory=list)
    probed_at: datetime = Field(default_factory=utcnow)

    def capabilities_update(self) -> dict[str, bool]:
        """The Capabilities fields to override with measured values (conclusive checks only)."""
        return {check.name: check.passed for check in self.checks if check.conclusive}

    def ways_reason(self) -> str | None:
        """Why `auto` starts where it does for this model, from what the probe found."""
        found = {check.name: check for check in self.checks if check.conclusive}
        if not found:
            return None
        day = f"{self.probed_at:%Y-%m-%d}"
        native, schema = found.get("native_tools"), found.get("json_schema_output")
        if native and native.passed:
            return f"the probe of {day} found this model writes valid native tool calls"
        why = (
            f"the probe of {day} found no valid native tool call ({native.detail[:80]})"
            if native
            else f"the probe of {day} did not reach its tool-call check"
        )
        if schema:
            return why + (
                ", and JSON-schema output works" if schema.passed else ", nor valid JSON-schema output"
            )
        return why

    def learned_anything(self) -> bool:
        """False when no check reached the model (say the server is down): not worth storing,
        since it would replace an earlier profile with nothing."""
        return any(check.conclusive for check in self.checks)
