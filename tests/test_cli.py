"""`flowcall` end to end, as a user runs it: a real process, a real database, the real model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def flowcall(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def test_plugins_list():
    out = flowcall("plugins", "list").stdout
    for version in (
        "weather/v1/get_weather",
        "time/v1/get_current_time",
        "task/v1/create_task",
        "hr/v1/lookup_employee",
    ):
        assert version in out
    tools = json.loads(flowcall("plugins", "list", "--json").stdout)
    assert any(t["name"] == "get_weather" and "location" in t["parameters"]["properties"] for t in tools)


def test_flows_import_export_versions(tmp_path):
    assert "as version 1" in flowcall("flows", "import", "flows/employee_lookup.json").stdout
    assert "as version 1" in flowcall("flows", "import", "flows/employee_lookup.json").stdout  # unchanged
    exported = json.loads(flowcall("flows", "export", "employee-lookup").stdout)
    original = json.loads((ROOT / "flows" / "employee_lookup.json").read_text())
    assert (
        exported["tools"] == original["tools"]
        and exported["decision"]["system_prompt"] == original["decision"]["system_prompt"]
    )
    exported["max_rounds"] = 3
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(exported, ensure_ascii=False))
    assert (
        "imported employee-lookup-imported as version 1" in flowcall("flows", "import", str(changed)).stdout
    )
    assert "as version 2" in flowcall("flows", "import", str(changed), "--new-version").stdout
    assert (
        json.loads(flowcall("flows", "export", "employee-lookup", "--version", "1").stdout)["max_rounds"] == 1
    )
    assert "employee-lookup" in flowcall("flows", "list").stdout


@pytest.mark.parametrize(
    "content, expected",
    [
        ("{not json", "not valid JSON"),
        ('{"name": "x", "max_rounds": 0}', "max_rounds"),
        ('{"name": "x", "decision": {"api_key": "sk-123"}}', "secret"),
        ('{"name": "x", "tools": ["nope/v1/nope"]}', "no tool 'nope/v1/nope'"),
    ],
)
def test_bad_flow_files_get_one_clear_line_and_exit_2(tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    done = flowcall("flows", "import", str(bad), check=False)
    assert done.returncode == 2
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "x" not in flowcall("flows", "list").stdout  # nothing was saved


def test_unknown_run_id_exits_2():
    done = flowcall("runs", "show", "does-not-exist", check=False)
    assert done.returncode == 2 and done.stderr.startswith("error:")


@pytest.mark.model
def test_run_then_inspect(model_path):
    done = flowcall("run", "flows/employee_lookup.json", "张三今年多大了?")
    assert "36" in done.stdout
    assert "[1] model_call" in done.stderr and "lookup_employee" in done.stderr  # live progress
    run_id = done.stderr.strip().splitlines()[-1].split()[1]
    listed = flowcall("runs", "list").stdout
    assert run_id in listed and "succeeded" in listed
    shown = json.loads(flowcall("runs", "show", run_id[:8], "--json").stdout)
    assert shown["id"] == run_id and shown["status"] == "succeeded"
    tool = next(s for s in shown["steps"] if s["kind"] == "tool_call")
    assert tool["arguments"] == {"name": "张三"} and tool["result"]["age"] == 36
    text = flowcall("runs", "show", run_id).stdout
    assert "lookup_employee" in text and "answer:" in text
    as_json = json.loads(flowcall("run", "flows/employee_lookup.json", "张三今年多大了?", "--json").stdout)
    assert as_json["status"] == "succeeded" and len(as_json["steps"]) >= 3


def test_replay_reproduces_a_run_without_the_model(tmp_path):
    """A recorded run (made here with the scripted model) replays identically through the CLI;
    when a tool's answer changes, the replay says so and exits 1."""
    from flowcall.core.spec import DecisionConfig, Flow, PolishConfig
    from flowcall.providers.scripted import ScriptedProvider
    from flowcall.service.front import FlowCall

    service = FlowCall.open()
    service.provider_factory = lambda cfg: ScriptedProvider(
        ["张三 36 岁。"]
        if isinstance(cfg, PolishConfig)
        else [[("lookup_employee", {"name": "张三"})], "done"]
    )
    flow = Flow(
        name="who",
        tools=["hr/v1/lookup_employee"],
        decision=DecisionConfig(provider="scripted"),
        polish=PolishConfig(provider="scripted"),
    )
    run = service.run(flow, "张三多大?")
    done = flowcall("runs", "replay", run.id[:8])
    assert "identical" in done.stdout and "lookup_employee" in done.stderr
    data = tmp_path / "data"
    data.mkdir()
    (data / "staff.csv").write_text(
        (ROOT / "plugins" / "data" / "staff.csv").read_text(encoding="utf-8").replace(",36,", ",37,"),
        encoding="utf-8",
    )
    changed = subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "runs", "replay", run.id],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "FLOWCALL_DATA_DIR": str(data)},
    )
    assert changed.returncode == 1 and "result or error differs" in changed.stdout


@pytest.mark.model
def test_runs_rerun_diff_export_import_on_the_model(model_path, tmp_path):
    first = json.loads(flowcall("run", "flows/employee_lookup.json", "张三今年多大了?", "--json").stdout)
    tool_step = next(s for s in first["steps"] if s["kind"] == "tool_call")
    again = json.loads(
        flowcall(
            "runs",
            "rerun",
            first["id"][:8],
            "--from-step",
            str(tool_step["seq"]),
            "--arguments",
            '{"name": "李四"}',
            "--json",
        ).stdout
    )
    assert again["status"] == "succeeded" and "reused" in again["steps"][0]["note"]
    assert [s["arguments"] for s in again["steps"] if s["kind"] == "tool_call"] == [{"name": "李四"}]
    listed = flowcall("runs", "list", "--question", "张三", "--model", "qwen2.5").stdout
    assert first["id"] in listed and again["id"] in listed
    assert flowcall("runs", "list", "--question", "王五").stdout == ""
    diff = flowcall("runs", "diff", first["id"], again["id"]).stdout
    assert "argument name: 张三 → 李四" in diff
    bad = flowcall(
        "runs",
        "rerun",
        first["id"],
        "--from-step",
        str(tool_step["seq"]),
        "--arguments",
        "{oops",
        check=False,
    )
    assert bad.returncode == 2 and "--arguments is not valid JSON" in bad.stderr
    exported = tmp_path / "run.json"
    flowcall("runs", "export", first["id"], "-o", str(exported))
    out = flowcall("runs", "import", str(exported)).stdout
    assert out.startswith("imported run ") and first["id"] not in out  # same database: a copy, new id
    (tmp_path / "bad.json").write_text('{"format": "flowcall.flow/v1"}')
    refused = flowcall("runs", "import", str(tmp_path / "bad.json"), check=False)
    assert refused.returncode == 2 and "not a FlowCall run export" in refused.stderr
