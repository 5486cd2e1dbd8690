"""The calling ways on the real embedded model: deciding whether to call, and calling right."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowcall.core.spec import DecisionConfig, Flow, RouterRule
from flowcall.core.steps import RunStatus, StepKind
from flowcall.service.front import FlowCall

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]


def flow(way: str, **kw) -> Flow:
    return Flow(
        name=f"weather-{way}",
        tools=["weather/v1/get_weather", "time/v1/get_current_time"],
        max_rounds=1,
        decision=DecisionConfig(calling_way=way, max_tokens=200),
        **kw,
    )


@pytest.mark.parametrize("way", ["schema"])
def test_calls_when_a_tool_fits_and_keeps_quiet_when_none_does(model_path, way):
    service = FlowCall.open()
    run = service.run(flow(way), "北京现在的天气怎么样?")
    assert run.status == RunStatus.SUCCEEDED, run.error
    call = next(s for s in run.steps if s.kind == StepKind.TOOL_CALL)
    assert call.name == "get_weather" and call.error_code is None and "北京" in call.arguments["location"]
    assert any(s.note and s.note.startswith("checked whether") for s in run.steps)  # it asked before calling
    quiet = service.run(flow(way), "Write a haiku about autumn leaves.")
    assert quiet.status == RunStatus.SUCCEEDED
    assert not [s for s in quiet.steps if s.kind == StepKind.TOOL_CALL]
    assert isinstance(quiet.final_answer, str) and quiet.final_answer


def test_parallel_calls_are_written_one_by_one(model_path):
    run = FlowCall.open().run(
        flow("schema"), "What's the weather in Beijing, Shanghai and Guangzhou right now?"
    )
    assert run.status == RunStatus.SUCCEEDED, run.error
    calls = [s for s in run.steps if s.kind == StepKind.TOOL_CALL]
    assert [c.name for c in calls] == ["get_weather"] * 3 and all(c.error_code is None for c in calls)
    # the grammar admits any string, and the 0.5B model sometimes opens one with a space
    assert {c.arguments["location"].strip() for c in calls} == {"Beijing", "Shanghai", "Guangzhou"}
    notes = [s.note for s in run.steps if s.kind == StepKind.MODEL_CALL]
    assert "another call after call 3?" in notes and "call 4" not in notes  # it stopped by itself


def test_router_rule_on_the_real_model(model_path):
    f = flow("router", router_rules=[RouterRule(pattern="天气|下雨|weather", tool="get_weather")])
    run = FlowCall.open().run(f, "明天成都会下雨吗?")
    call = next(s for s in run.steps if s.kind == StepKind.TOOL_CALL)
    assert call.name == "get_weather" and call.error_code is None
    assert "rule: get_weather" in run.steps[0].note


def test_eval_cli_one_case_per_category(model_path):
    # two categories, one that calls and one that must not: the parallel ones cost a minute more
    # here and run the same code (benchmarks and `flowcall eval bfcl` cover them in full)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flowcall.cli.main",
            "eval",
            "bfcl",
            "--limit",
            "1",
            "--way",
            "schema",
            "--category",
            "simple",
            "--category",
            "irrelevance",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {s["category"] for s in report["summary"]} == {"simple", "irrelevance"}
    for row in report["summary"]:
        assert row["schema_valid_share"] in (None, 1.0)  # the grammar admits only schema-valid calls
        assert row["median_tokens_in"] > 0
    assert len(report["cases"]) == 2
    assert report["model"] == Path(model_path).stem  # the model that answered, not a default name


def test_eval_cli_asks_for_the_model_of_a_remote_provider():
    done = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "eval", "bfcl", "--provider", "openai", "--limit", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2 and "--model is required with --provider openai" in done.stderr
