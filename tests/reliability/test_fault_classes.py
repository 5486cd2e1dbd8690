"""Fault classes, each through the real CLI (`flowcall run FLOW.json QUESTION --json` in a new
process): the run must end recorded (never `running`), with a clear error code and message in
its steps, and the process must end on its own without a traceback. Provider faults come from a
local server speaking OpenAI chat completions, reached through the real `openai-compatible`
provider. The same cases as benchmarks/reliability.py runs (the tool result here is 5 MB, not 50)."""

from __future__ import annotations

import pytest

import tests.support.reliability as reliability

CASES = [
    reliability.fault_provider_429,
    reliability.fault_provider_500,
    reliability.fault_provider_timeout,
    reliability.fault_provider_malformed_body,
    reliability.fault_provider_not_completion,
    reliability.fault_malformed_arguments,
    reliability.fault_mcp_crash,
    reliability.fault_hung_tool,
    lambda url: reliability.fault_huge_result(url, megabytes=5),
]


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=[
        "429",
        "500",
        "timeout",
        "malformed-json",
        "json-not-a-completion",
        "malformed-arguments",
        "mcp-crash",
        "hung-tool",
        "huge-result",
    ],
)
def test_a_fault_ends_as_a_recorded_run_with_a_clear_error(case, tmp_path) -> None:
    figure = case(f"sqlite:///{tmp_path / 'flowcall.db'}")
    assert figure.ok, figure.line()
