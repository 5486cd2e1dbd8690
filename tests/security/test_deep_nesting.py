"""A file or schema from outside nested thousands of levels deep gets a clear error, never a
RecursionError traceback: flows, run files, OpenAPI documents, MCP inputSchemas, output schemas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flowcall.core.errors import ConfigError
from flowcall.core.nesting import DOCUMENT_DEPTH
from flowcall.core.spec import DecisionConfig, Flow, HTTPToolSource, MCPServerConfig
from flowcall.core.steps import MemorySink, RunStatus
from flowcall.engine.approval import Decision
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.tools.openapi_tools import load_document
from flowcall.tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "security" / "remote_ref_mcp_server.py")
LEVELS = 2000


def nested(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def deep_text(levels: int, inner: str = "1") -> str:
    """JSON text nested `levels` deep, written without recursion (json.dumps would recurse)."""
    return '{"a": ' * levels + inner + "}" * levels


def cli(*args: str, db: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", "--db", db, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.mark.parametrize("command", ["run", "flows import"])
def test_a_flow_nested_thousands_deep_is_refused_with_exit_2(attack, tmp_path, command):
    attack.tried(
        f"`flowcall {command}` of a flow whose polish output_schema nests {LEVELS} levels",
        expected="exit 2, one clear line naming the file and the limit, no traceback",
    )
    flow = {
        "name": "deep",
        "decision": {"provider": "local"},
        "polish": {"provider": "local", "output_schema": "@"},
    }
    text = json.dumps(flow).replace('"@"', deep_text(LEVELS))
    path = tmp_path / "deep.json"
    path.write_text(text, encoding="utf-8")
    args = ["run", str(path), "hi"] if command == "run" else ["flows", "import", str(path)]
    done = cli(*args, db=f"sqlite:///{tmp_path / 'd.db'}")
    attack.observed(f"exit {done.returncode}: {done.stderr.strip()[-200:]}")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"nests deeper than {DOCUMENT_DEPTH} levels" in done.stderr and "deep.json" in done.stderr


def test_a_run_file_nested_thousands_deep_is_refused_with_exit_2(attack, tmp_path):
    attack.tried(
        f"`flowcall runs import` of a run file whose question nests {LEVELS} levels",
        expected="exit 2, a clear error, nothing stored",
    )
    path = tmp_path / "run.json"
    path.write_text('{"format": "flowcall.run/v1", "run": ' + deep_text(LEVELS) + "}", encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'r.db'}"
    done = cli("runs", "import", str(path), db=db)
    attack.observed(f"exit {done.returncode}: {done.stderr.strip()[-200:]}")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "nests deeper than" in done.stderr
    assert cli("runs", "list", db=db).stdout.strip() in ("", "no runs")


def test_an_openapi_document_nested_thousands_deep_is_refused(attack, tmp_path):
    attack.tried(
        f"an OpenAPI document (JSON and YAML) nested {LEVELS} levels", expected="a ConfigError naming it"
    )
    for name, text in (
        ("deep.json", deep_text(LEVELS)),
        (
            "deep.yaml",
            "a:\n" + "".join(" " * (i + 1) + "a:\n" for i in range(LEVELS)) + " " * (LEVELS + 1) + "1\n",
        ),
    ):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match="nests deeper than") as refused:
            load_document(HTTPToolSource(name="deep", openapi=str(path)))
        attack.observed(f"{name}: {str(refused.value)[:120]}")


def test_an_mcp_tool_whose_input_schema_nests_thousands_deep_is_refused(attack, tmp_path):
    levels = 60  # anyOf in a list: 120 JSON levels, what the server's own JSON writer still sends
    attack.tried(
        f"an MCP server whose tool's inputSchema nests {2 * levels} levels",
        expected="the run fails naming the server and the tool; the tool never runs",
    )
    marker = tmp_path / "ran"
    server = MCPServerConfig(
        name="kb",
        command=[sys.executable, SERVER],
        call_timeout_s=20,
        env={"DEEP": str(levels), "MARKER": str(marker)},
    )
    flow = Flow(
        name="kb",
        tools=["kb/mcp/lookup"],
        max_rounds=1,
        mcp_servers=[server],
        decision=DecisionConfig(provider="scripted"),
    )
    provider = ScriptedProvider([[("lookup", {"term": "gold"})], "done"])
    run = Engine(ToolRegistry(), lambda cfg: provider, MemorySink()).run(
        flow, "look up gold", approver=lambda call, tool: Decision(action="approve", by="test")
    )
    attack.observed(f"run {run.status.value}: {(run.error or '')[:200]}; tool ran: {marker.exists()}")
    assert run.status == RunStatus.FAILED and not marker.exists()
    assert "MCP server 'kb', tool 'lookup', inputSchema nests deeper than" in (run.error or "")


def test_what_nests_within_the_limit_still_loads(tmp_path):
    from flowcall.core.spec import parse_flow

    flow = parse_flow(
        {
            "name": "ok",
            "decision": {"provider": "local"},
            "polish": {"provider": "local", "output_schema": nested(DOCUMENT_DEPTH // 2 - 4)},
        }
    )
    assert flow.polish is not None and flow.polish.output_schema is not None
