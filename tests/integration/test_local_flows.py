"""Every example flow, end to end on the real embedded model (temperature 0, fixed seed).

Asserts the right tool ran with schema-valid arguments and the answer has the right shape,
not the exact prose: the model is small and its wording is not the point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from flowcall.service import FlowCall
from flowcall.spec import load_flow
from flowcall.steps import RunStatus, StepKind

pytestmark = pytest.mark.model
ROOT = Path(__file__).resolve().parents[2]
FLOWS = ROOT / "flows"


@pytest.fixture
def service(model_path) -> FlowCall:
    return FlowCall.open()


def run_flow(service: FlowCall, file: str, question: str):
    flow = load_flow(FLOWS / file)
    run = service.run(flow, question)
    assert run.status == RunStatus.SUCCEEDED, run.error
    executed = [s for s in run.steps if s.kind == StepKind.TOOL_CALL and s.error_code is None]
    assert executed, "no tool ran"
    tools = {t.name: t for t in service.registry.resolve(flow.tools)}
    for step in executed:  # what ran was valid against the tool's schema
        jsonschema.validate(step.arguments, tools[step.name].parameters)
    model_steps = [s for s in run.steps if s.kind == StepKind.MODEL_CALL]
    assert model_steps[0].rendered_prompt and "<|im_start|>" in model_steps[0].rendered_prompt
    assert all(s.tokens_in > 0 for s in model_steps)
    generated = [s for s in model_steps if not (s.response or {}).get("scores")]  # scoring steps generate nothing
    assert generated and all(s.tokens_out > 0 for s in generated)
    stored = service.store.get_run(run.id)  # and it was all recorded
    assert [s.seq for s in stored.steps] == [s.seq for s in run.steps]
    return run, executed


def test_commute_weather_card(service):
    flow = load_flow(FLOWS / "commute_weather.json")
    run, executed = run_flow(service, "commute_weather.json", "我明天要在成都上下班通勤,会下雨吗?")
    assert executed[0].name == "get_weather"
    assert "成都" in executed[0].arguments["location"] and executed[0].arguments["extensions"] == "all"
    jsonschema.validate(run.final_answer, flow.polish.output_schema)
    assert run.final_answer["location"].startswith("成都")


def test_create_task_is_stored(service):
    run, executed = run_flow(service, "create_task.json", "添加任务:写周报,优先级高,截止 2026-11-27")
    assert executed[0].name == "create_task"
    assert executed[0].arguments["due_date"] == "2026-11-27"
    tasks = service.store.list_tasks()
    assert len(tasks) == 1 and "周报" in tasks[0]["title"]


def test_current_time(service):
    run, executed = run_flow(service, "current_time.json", "现在几点了?")
    assert executed[0].name == "get_current_time"
    assert executed[0].result["time"][:2] in run.final_answer  # the hour the tool gave is in the answer


def test_employee_lookup(service):
    run, executed = run_flow(service, "employee_lookup.json", "张三今年多大了?")
    assert executed[0].name == "lookup_employee" and executed[0].arguments["name"] == "张三"
    assert executed[0].result["age"] == 36
    assert "36" in run.final_answer


def test_clean_data_keeps_the_table_in_the_context(service):
    run, executed = run_flow(service, "clean_data.json", "Clean the data in orders_sample.csv")
    assert [c.name for c in executed][:2] == ["read_csv", "drop_missing"]
    assert executed[0].result["rows"] == 12 and executed[1].result["rows"] == 6
    assert "6" in run.final_answer


def test_run_with_approve_asks_on_the_terminal(tmp_path):
    """`flowcall run --approve` on the real model: a flow that wants create_task approved; the
    person at the terminal edits the title."""
    flow = json.loads((FLOWS / "create_task.json").read_text(encoding="utf-8"))
    flow["needs_approval"] = ["create_task"]
    path = tmp_path / "approved_task.json"
    path.write_text(json.dumps(flow, ensure_ascii=False), encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'approve.db'}"
    done = subprocess.run([sys.executable, "-m", "flowcall.cli", "--db", db, "run", str(path),
                           "添加任务:写周报,优先级高,截止 2026-11-27", "--approve"],
                          input='e\n{"title": "写周报(已审)", "priority": 1}\n', capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "wants to run with" in done.stderr and "approval" in done.stderr
    service = FlowCall.open(db)
    assert [t["title"] for t in service.store.list_tasks()] == ["写周报(已审)"]
