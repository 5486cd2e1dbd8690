"""`flowcall datasets ...` and `flowcall experiments ...` as a user runs them: a real process, a
real database, and the schema-driven model (`provider: scripted, model: schema`), no model file."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.test_cli import flowcall

DATASET = [
    {"id": "call", "question": "张三多大?", "expect_calls": [{"name": "hr/v1/lookup_employee"}]},
    {"id": "quiet", "question": "hi", "expect_no_call": True},
    {"id": "answer", "question": "x", "answer_regex": "^(Results|No tool results)", "max_latency_s": 120},
]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _flow(path: Path, name: str, tool_choice: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "name": name,
                "tools": ["hr/v1/lookup_employee"],
                "tool_choice": tool_choice,
                "decision": {"provider": "scripted", "model": "schema"},
            }
        ),
        encoding="utf-8",
    )
    return path


def test_datasets_import_list_show_export_and_versions(tmp_path: Path):
    source = _write(tmp_path / "people.jsonl", DATASET)
    assert (
        flowcall("datasets", "import", str(source), "--name", "people").stdout
        == "imported people as version 1 (3 items)\n"
    )
    exported = flowcall("datasets", "export", "people").stdout
    as_written = [{**row, **({"max_latency_s": 120.0} if "max_latency_s" in row else {})} for row in DATASET]
    assert [json.loads(line) for line in exported.splitlines()] == as_written
    again = _write(tmp_path / "again.jsonl", [json.loads(line) for line in exported.splitlines()])
    assert (
        "already has exactly these 3 items; no new version"
        in flowcall("datasets", "import", str(again), "--name", "people").stdout
    )
    _write(tmp_path / "changed.jsonl", DATASET[:2])
    assert (
        "as version 2 (2 items)"
        in flowcall("datasets", "import", str(tmp_path / "changed.jsonl"), "--name", "people").stdout
    )
    listed = flowcall("datasets", "list").stdout
    assert listed.startswith("people") and "v2" in listed and "2 items" in listed
    shown = flowcall("datasets", "show", "people", "--version", "1").stdout
    assert "dataset people v1 · 3 items" in shown and "[quiet] hi" in shown and "expects: no call" in shown
    assert (
        "calls hr/v1/lookup_employee()" in shown
        and "answer matches /^(Results|No tool results)/; ≤ 120 s" in shown
    )
    assert flowcall("datasets", "export", "people", "--version", "1").stdout == exported
    csv_file = tmp_path / "people.csv"
    flowcall("datasets", "export", "people", "--version", "1", "--format", "csv", "-o", str(csv_file))
    assert (
        "imported from-csv as version 1"
        in flowcall("datasets", "import", str(csv_file), "--name", "from-csv").stdout
    )
    assert flowcall("datasets", "export", "from-csv").stdout == exported


def test_a_bad_dataset_file_lists_every_problem_and_stores_nothing(tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"question": "ok"}\n{"question": ""}\n{"question": "q", "answer_regex": "(a"}\nnot json\n',
        encoding="utf-8",
    )
    done = flowcall("datasets", "import", str(bad), "--name", "bad", check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: {bad} cannot be imported (3 problems; nothing was stored):")
    for expected in ("line 2, field question:", "line 3, field answer_regex:", "line 4: not valid JSON"):
        assert expected in done.stderr
    assert flowcall("datasets", "list").stdout == ""
    missing = flowcall("datasets", "show", "bad", check=False)
    assert missing.returncode == 2 and "no dataset named 'bad'" in missing.stderr


def test_experiments_run_show_list_and_compare(tmp_path: Path):
    flowcall("datasets", "import", str(_write(tmp_path / "people.jsonl", DATASET)), "--name", "people")
    calling = _flow(tmp_path / "calling.json", "lookup-calls", "auto")
    quiet = _flow(tmp_path / "quiet.json", "lookup-quiet", "none")
    first = flowcall("experiments", "run", str(calling), "people")
    assert first.stdout.startswith(
        f"experiment 1  finished  flow lookup-calls v1 ({calling})  dataset people v1  scripted/schema [auto]"
    )
    assert "passed 2 of 3 runs (66.7%)" in first.stdout and "expect_no_call       0/1" in first.stdout
    assert "latency p50" in first.stdout and "p95" in first.stdout
    assert "100%" in first.stderr and "3/3" in first.stderr  # the progress bar, on stderr
    second = flowcall("experiments", "run", str(quiet), "people", "--repeat", "2")
    assert "passed 4 of 6 runs" in second.stdout and "×2" in second.stdout

    listed = flowcall("experiments", "list").stdout.splitlines()
    assert listed[0].split()[0] == "2" and "4/6 passed (67%)" in listed[0] and listed[1].split()[0] == "1"
    shown = flowcall("experiments", "show", "1").stdout
    assert (
        "FAIL  #2 quiet" in shown
        and "expect_no_call: called lookup_employee" in shown
        and "pass  #1 call" in shown
    )
    as_json = json.loads(flowcall("experiments", "show", "1", "--json").stdout)
    assert as_json["summary"]["passed"] == 2 and len(as_json["items"]) == 3
    assert [v["expectation"] for v in as_json["items"][0]["verdicts"]] == ["succeeded", "expect_calls"]
    run = json.loads(flowcall("runs", "show", as_json["items"][0]["run_id"], "--json").stdout)
    assert run["status"] == "succeeded" and any(s["kind"] == "tool_call" for s in run["steps"])

    compared = flowcall("experiments", "compare", "1", "2").stdout.splitlines()
    assert compared[0] == "experiment 1 → 2: 1 pass→fail, 1 fail→pass, 1 unchanged"
    assert "flow: lookup-calls v1 → lookup-quiet v1" in compared[1]
    broke = compared.index("pass→fail  #1 call")
    fixed = compared.index("fail→pass  #2 quiet")
    assert broke < fixed and compared[broke + 1] == "    before: passed"
    assert "no call of hr/v1/lookup_employee" in compared[broke + 2]
    command = compared[broke + 3].strip()
    assert command.startswith("flowcall runs diff ")
    diff = flowcall(*shlex.split(command)[1:]).stdout
    assert "tool calls" in diff or "only in the left run" in diff


def test_experiments_refuse_what_does_not_exist(tmp_path: Path):
    calling = _flow(tmp_path / "calling.json", "lookup-calls", "auto")
    done = flowcall("experiments", "run", str(calling), "nope", check=False)
    assert done.returncode == 2 and "no dataset named 'nope'" in done.stderr
    assert flowcall("experiments", "list").stdout == ""  # nothing was recorded
    assert flowcall("runs", "list").stdout == ""
    shown = flowcall("experiments", "show", "7", check=False)
    assert shown.returncode == 2 and "no experiment 7" in shown.stderr


@pytest.mark.parametrize("split, first", [("odd", "simple_python_1"), ("all", "simple_python_0")])
def test_a_bfcl_category_imports_as_a_dataset(split, first):
    done = flowcall("datasets", "import-bfcl", "simple", "--split", split, "--limit", "3", "--name", "bfcl")
    assert done.stdout == "imported bfcl as version 1 (3 items)\n"
    items = json.loads(flowcall("datasets", "show", "bfcl", "--json").stdout)
    assert items[0]["id"] == first and items[0]["tools"][0]["parameters"]["type"] == "object"
    assert all(item["expect_calls"] for item in items)
    assert "its own 1 tool(s), decision only" in flowcall("datasets", "show", "bfcl").stdout
