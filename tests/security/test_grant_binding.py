"""A grant binds what actually runs, not the text of the command line.

A person grants `["python3", "server.py"]` in one folder. The same text, run from another
folder, names another `server.py`; `python3 -m module` imports a `module.py` from the folder it
starts in before the installed one. Each test grants in one place and runs in another (or after
the script changed), with a server that writes a marker file when it starts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowcall.core.spec import parse_flow
from flowcall.core.steps import MemorySink
from flowcall.engine.approval import Decision
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.tools.registry import ToolRegistry
from flowcall.trust.consent import TrustRequired

SERVER = '''
import os, pathlib
pathlib.Path(os.environ["MARKER"]).write_text("{who} started")
from mcp.server.mcpserver import MCPServer
server = MCPServer("s")

@server.tool()
def ping() -> str:
    """Ping."""
    return "{who}"

server.run("stdio")
'''


def flow_running(argv: list[str], marker: Path):
    return parse_flow(
        {
            "name": "s",
            "tools": ["s/mcp/ping"],
            "max_rounds": 1,
            "decision": {"provider": "scripted"},
            "mcp_servers": [{"name": "s", "command": argv, "env": {"MARKER": str(marker)}}],
        }
    )


@pytest.fixture
def service(tmp_path):
    return FlowCall.open(f"sqlite:///{tmp_path / 'grants.db'}")


def test_a_grant_made_in_one_folder_does_not_start_another_folders_script(
    attack, tmp_path, service, monkeypatch
):
    attack.tried(
        "grant [python, server.py] in folder A; the same flow run from folder B, which holds its own "
        "server.py",
        expected="B needs a grant of its own, naming the script; B's server never starts",
    )
    marker = tmp_path / "started"
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "server.py").write_text(SERVER.format(who=folder))
    flow = flow_running([sys.executable, "server.py"], marker)
    monkeypatch.chdir(tmp_path / "a")
    service.grant(flow, by="test")
    service.require_trust(flow)  # granted here
    monkeypatch.chdir(tmp_path / "b")
    with pytest.raises(TrustRequired) as refused:
        service.require_trust(flow)
    attack.observed(f"{str(refused.value)[:300]}; marker: {marker.exists()}")
    assert str(tmp_path / "b" / "server.py") in str(refused.value) and not marker.exists()
    assert "granted before, but it now names" in str(refused.value)


def test_a_changed_script_needs_a_new_grant_that_says_what_changed(attack, tmp_path, service, monkeypatch):
    attack.tried(
        "grant [python, server.py], then the script's content changes",
        expected="a new grant is needed; the message says the file is not the one granted",
    )
    marker = tmp_path / "started"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server.py").write_text(SERVER.format(who="granted"))
    flow = flow_running([sys.executable, "server.py"], marker)
    service.grant(flow, by="test")
    (tmp_path / "server.py").write_text(SERVER.format(who="swapped"))
    with pytest.raises(TrustRequired) as refused:
        service.require_trust(flow)
    attack.observed(str(refused.value)[:300])
    assert f"server.py in {tmp_path} is not the file granted: its content changed" in str(refused.value)


def test_a_program_found_elsewhere_on_path_needs_a_new_grant(attack, tmp_path, service, monkeypatch):
    attack.tried(
        "grant [mytool]; then PATH finds another mytool first",
        expected="a new grant is needed, naming where mytool now resolves",
    )
    marker = tmp_path / "started"
    for folder in ("good", "evil"):
        (tmp_path / folder).mkdir()
        tool = tmp_path / folder / "mytool"
        tool.write_text(f"#!/bin/sh\necho {folder}\n")
        tool.chmod(0o755)
    flow = flow_running(["mytool"], marker)
    monkeypatch.setenv("PATH", f"{tmp_path / 'good'}:/usr/bin:/bin")
    service.grant(flow, by="test")
    monkeypatch.setenv("PATH", f"{tmp_path / 'evil'}:{tmp_path / 'good'}:/usr/bin:/bin")
    with pytest.raises(TrustRequired) as refused:
        service.require_trust(flow)
    attack.observed(str(refused.value)[:300])
    assert f"mytool now resolves to {tmp_path / 'evil' / 'mytool'}" in str(refused.value)


def test_python_dash_m_does_not_import_a_module_from_the_callers_folder(attack, tmp_path, monkeypatch):
    attack.tried(
        "a granted [python, -m, fc_probe_mod] run from a folder holding fc_probe_mod.py",
        expected="the server starts in an empty folder: the caller's module is never imported",
    )
    marker = tmp_path / "started"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fc_probe_mod.py").write_text(SERVER.format(who="shadow"))
    flow = flow_running([sys.executable, "-m", "fc_probe_mod"], marker)
    provider = ScriptedProvider([[("ping", {})], "done"])
    run = Engine(ToolRegistry(), lambda cfg: provider, MemorySink()).run(
        flow, "ping", approver=lambda call, tool: Decision(action="approve", by="test")
    )
    attack.observed(
        f"run {run.status.value}: {(run.error or '')[:150]}; shadow module ran: {marker.exists()}"
    )
    assert not marker.exists()


def test_an_openapi_file_granted_in_one_folder_is_not_another_folders(attack, tmp_path, service, monkeypatch):
    attack.tried(
        "grant an OpenAPI source 'api.json' (a relative path) in folder A; run from folder B with its own "
        "api.json",
        expected="B's document needs its own grant",
    )
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "api.json").write_text(
            '{"openapi": "3.0.3", "info": {"title": "%s", "version": "1"}, "paths": {}}' % folder
        )
    flow = parse_flow(
        {
            "name": "h",
            "tools": ["shop/http/buy"],
            "decision": {"provider": "scripted"},
            "http_tools": [{"name": "shop", "openapi": "api.json", "base_url": "https://shop.example"}],
        }
    )
    monkeypatch.chdir(tmp_path / "a")
    service.grant(flow, by="test")
    service.require_trust(flow)
    monkeypatch.chdir(tmp_path / "b")
    with pytest.raises(TrustRequired) as refused:
        service.require_trust(flow)
    attack.observed(str(refused.value)[:300])
    assert str(tmp_path / "b" / "api.json") in str(refused.value)
