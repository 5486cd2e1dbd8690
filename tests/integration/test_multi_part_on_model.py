"""Every part of a request either done by a tool or said not done, on the real embedded model
(issue 46): an action asked of a real OpenAPI service, and a question with two needs.

Whatever the model decides, the run never shows a green success for what no tool did: the
loan either waits for a person's approval (its tool changes something), or the run is
answered_without_tools and no loan was made; the weather-and-time question either gets both
calls, or its answer says which part was not done.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowcall.core.spec import DecisionConfig, Flow, HTTPToolSource, PolishConfig
from flowcall.core.steps import ANSWERED_WITHOUT_TOOLS, PARTLY_DONE, RunStatus, StepKind
from flowcall.service.front import FlowCall
from tests.local_servers import free_port, serving

pytestmark = pytest.mark.model
SERVER = Path(__file__).resolve().parents[1] / "tools" / "library_server.py"


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """The library service on 127.0.0.1: (its base URL, the file every request is logged to)."""
    folder = tmp_path_factory.mktemp("library")
    port, log = free_port(), folder / "requests.log"
    base = f"http://127.0.0.1:{port}"
    with serving(
        [sys.executable, str(SERVER), str(port), str(log)],
        f"{base}/openapi.json",
        folder / "server.log",
        within_s=30,
        name="the library service",
    ):
        yield base, log


def test_a_loan_is_never_a_green_success_unless_a_tool_made_it(model_path, library):
    base, log = library
    flow = Flow(
        name="library",
        tools=["library/http/list_books", "library/http/create_loan"],
        http_tools=[
            HTTPToolSource(name="library", openapi=f"{base}/openapi.json", allow_hosts=["127.0.0.1"])
        ],
        decision=DecisionConfig(provider="local", calling_way="schema"),
        polish=PolishConfig(provider="local"),
    )
    service = FlowCall.open()
    service.grant(flow, by="test")
    run = service.run(flow, "Lend the book with id 5 to member bob.")
    posted = [line for line in log.read_text().splitlines() if line.startswith("POST")]
    assert not posted  # nobody approved the loan: it was not made
    if run.status == RunStatus.WAITING_APPROVAL:
        waiting = [s for s in run.steps if s.kind == StepKind.APPROVAL]
        assert waiting and waiting[-1].name == "create_loan"
    else:
        assert run.status == RunStatus.SUCCEEDED and run.outcome == ANSWERED_WITHOUT_TOOLS, (
            run.final_answer,
            run.outcome,
        )
        assert run.outcome_reasons  # says why: no tool fits, or the answer claims a loan no tool made


def test_weather_and_time_both_called_or_the_missing_part_said(model_path):
    flow = Flow(
        name="weather-and-time",
        tools=["weather/v1/get_weather", "time/v1/get_current_time"],
        decision=DecisionConfig(provider="local", calling_way="schema"),
        polish=PolishConfig(provider="local"),
    )
    run = FlowCall.open().run(flow, "What's the weather in Beijing today, and what time is it there?")
    assert run.status == RunStatus.SUCCEEDED, run.error
    called = {s.name for s in run.steps if s.kind == StepKind.TOOL_CALL and not s.error_code}
    if called >= {"get_weather", "get_current_time"}:
        assert run.outcome is None, run.outcome_reasons
    else:
        assert run.outcome in (PARTLY_DONE, ANSWERED_WITHOUT_TOOLS)
        missing = ({"get_weather", "get_current_time"} - called).pop()
        assert any(missing in reason for reason in run.outcome_reasons)
        assert f"Not done: {missing}" in run.final_answer or run.outcome == ANSWERED_WITHOUT_TOOLS
