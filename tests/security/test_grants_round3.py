"""A grant binds the bytes that run, and the check is made again when a server starts.

Each attack grants a stdio MCP server as it is, then changes what its command would run: a
script without a `.py` suffix, a `.pyz` or `.pyc`, the program PATH finds, the script a `sh -c`
string names, a `sitecustomize.py` or `-m` module on the server's PYTHONPATH. The change is made
after the consent check passed and before the server starts (while the run builds its model),
so a check that is not made again at start would let it through. The changed code writes a
marker file when it runs; the code that was granted never does.

Two more: the tools of an installed package (a `flowcall.plugins` entry point) are listed in
consent and need a grant, and a server's environment that reads FlowCall's own settings is said
to give away a secret.
"""

from __future__ import annotations

import os
import py_compile
import sys
import zipapp
from pathlib import Path
from typing import Callable

import pytest

from flowcall.core.spec import parse_flow
from flowcall.core.steps import Run, RunStatus
from flowcall.engine.approval import approve_all
from flowcall.providers.scripted import ScriptedProvider
from flowcall.service.front import FlowCall
from flowcall.tools.sources import trust_items
from flowcall.trust.consent import TrustRequired, describe

GRANTED = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("s")


@server.tool()
def ping() -> str:
    """Ping."""
    return "pong"


server.run("stdio")
'''
# what the attacker puts in its place: the same server, which first leaves the marker
CHANGED = (
    'import os, pathlib\npathlib.Path(os.environ["MARKER"]).write_text("the changed code ran")\n' + GRANTED
)
PYTHON = sys.executable


def flow_running(argv: list[str], marker: Path, env: dict[str, str] | None = None):
    return parse_flow(
        {
            "name": "s",
            "tools": ["s/mcp/ping"],
            "max_rounds": 2,
            "decision": {"provider": "scripted"},
            "mcp_servers": [{"name": "s", "command": argv, "env": {"MARKER": str(marker), **(env or {})}}],
        }
    )


def grant_then_run(tmp_path: Path, flow, change: Callable[[], None]) -> Run:
    """Grant the flow, then run it for real; `change` runs after the consent check passed and
    before the server starts (the run's model is built in between)."""
    store = FlowCall.open(f"sqlite:///{tmp_path / 'grants.db'}").store
    changed: list[bool] = []

    def provider_for(config):
        if not changed:
            change()
            changed.append(True)
        return ScriptedProvider([[("ping", {})], "done"])

    service = FlowCall(store=store, provider_factory=provider_for)
    service.grant(flow, by="test")
    return service.run(flow, "ping", approver=approve_all)


def said(run: Run, marker: Path) -> str:
    return f"run {run.status.value}: {(run.error or '')[:300]}; changed code ran: {marker.exists()}"


def refused(run: Run, marker: Path, *words: str) -> bool:
    return (
        run.status == RunStatus.FAILED and not marker.exists() and all(w in (run.error or "") for w in words)
    )


# --- file arguments of any suffix ------------------------------------------------------------------


def test_a_script_without_a_suffix_changed_after_the_grant_is_refused_at_start(attack, tmp_path):
    attack.tried(
        "grant [python3, /abs/server] (a script with no suffix), then its content changes",
        expected="the server is not started; the error says server's content changed",
    )
    marker, script = tmp_path / "marker", tmp_path / "server"
    script.write_text(GRANTED)
    run = grant_then_run(
        tmp_path, flow_running([PYTHON, str(script)], marker), lambda: script.write_text(CHANGED)
    )
    attack.observed(said(run, marker))
    assert refused(run, marker, f"server in {tmp_path} is not the file granted: its content changed")


def _pyz(target: Path, source: str) -> None:
    folder = target.parent / f"{target.stem}-src"
    folder.mkdir(exist_ok=True)
    (folder / "__main__.py").write_text(source)
    zipapp.create_archive(folder, target)


def test_a_pyz_changed_after_the_grant_is_refused_at_start(attack, tmp_path):
    attack.tried(
        "grant [python3, /abs/server.pyz] (a zip application), then the archive changes",
        expected="the server is not started; the error names server.pyz",
    )
    marker, archive = tmp_path / "marker", tmp_path / "server.pyz"
    _pyz(archive, GRANTED)
    run = grant_then_run(
        tmp_path, flow_running([PYTHON, str(archive)], marker), lambda: _pyz(archive, CHANGED)
    )
    attack.observed(said(run, marker))
    assert refused(run, marker, "server.pyz", "its content changed")


def _pyc(target: Path, source: str) -> None:
    (target.parent / "src.py").write_text(source)
    py_compile.compile(str(target.parent / "src.py"), cfile=str(target), doraise=True)


def test_a_pyc_changed_after_the_grant_is_refused_at_start(attack, tmp_path):
    attack.tried(
        "grant [python3, /abs/server.pyc] (compiled bytecode), then the bytecode changes",
        expected="the server is not started; the error names server.pyc",
    )
    marker, compiled = tmp_path / "marker", tmp_path / "server.pyc"
    _pyc(compiled, GRANTED)
    run = grant_then_run(
        tmp_path, flow_running([PYTHON, str(compiled)], marker), lambda: _pyc(compiled, CHANGED)
    )
    attack.observed(said(run, marker))
    assert refused(run, marker, "server.pyc", "its content changed")


# --- the program itself ----------------------------------------------------------------------------


def _launcher(path: Path, script: Path, leave_marker: Path | None = None) -> None:
    mark = f"echo ran > {leave_marker}\n" if leave_marker else ""
    path.write_text(f"#!/bin/sh\n{mark}exec {PYTHON} {script}\n")
    path.chmod(0o755)


def test_a_program_that_appears_earlier_on_path_after_the_check_is_refused_at_start(
    attack, tmp_path, monkeypatch
):
    attack.tried(
        "grant [mytool] found in folder good/; after the consent check, mytool appears in folder "
        "evil/, which PATH searches first",
        expected="the server is not started; the error says where mytool now resolves",
    )
    marker, script = tmp_path / "marker", tmp_path / "server.py"
    script.write_text(GRANTED)
    for folder in ("good", "evil"):
        (tmp_path / folder).mkdir()
    _launcher(tmp_path / "good" / "mytool", script)
    monkeypatch.setenv("PATH", f"{tmp_path / 'evil'}:{tmp_path / 'good'}:/usr/bin:/bin")
    run = grant_then_run(
        tmp_path,
        flow_running(["mytool"], marker),
        lambda: _launcher(tmp_path / "evil" / "mytool", script, leave_marker=marker),
    )
    attack.observed(said(run, marker))
    assert refused(run, marker, f"mytool now resolves to {tmp_path / 'evil' / 'mytool'}")


def test_a_program_whose_own_content_changes_after_the_grant_is_refused_at_start(attack, tmp_path):
    attack.tried(
        "grant [/abs/mytool] (a launcher with no suffix, run as the program), then its content changes",
        expected="the server is not started; the error says mytool's content changed",
    )
    marker, script, tool = tmp_path / "marker", tmp_path / "server.py", tmp_path / "mytool"
    script.write_text(GRANTED)
    _launcher(tool, script)
    run = grant_then_run(
        tmp_path, flow_running([str(tool)], marker), lambda: _launcher(tool, script, leave_marker=marker)
    )
    attack.observed(said(run, marker))
    assert refused(run, marker, f"mytool in {tmp_path} is not the file granted: its content changed")


# --- what a shell string and the environment name --------------------------------------------------


def test_the_script_a_sh_dash_c_string_names_is_bound(attack, tmp_path):
    attack.tried(
        'grant ["sh", "-c", "exec python3 /abs/inner.py"], then inner.py changes',
        expected="the server is not started; the error says inner.py's content changed",
    )
    marker, inner = tmp_path / "marker", tmp_path / "inner.py"
    inner.write_text(GRANTED)
    flow = flow_running(["sh", "-c", f"exec {PYTHON} {inner}"], marker)
    run = grant_then_run(tmp_path, flow, lambda: inner.write_text(CHANGED))
    attack.observed(said(run, marker))
    assert refused(run, marker, f"inner.py in {tmp_path} is not the file granted: its content changed")


def test_a_sitecustomize_added_to_the_servers_pythonpath_after_the_grant_is_refused(attack, tmp_path):
    attack.tried(
        "grant [python3, /abs/server.py] with env PYTHONPATH=/abs/lib (empty); then "
        "lib/sitecustomize.py appears, which Python imports at every start",
        expected="the server is not started; the error names sitecustomize.py as new",
    )
    marker, script, lib = tmp_path / "marker", tmp_path / "server.py", tmp_path / "lib"
    script.write_text(GRANTED)
    lib.mkdir()
    flow = flow_running([PYTHON, str(script)], marker, {"PYTHONPATH": str(lib)})
    sitecustomize = 'import os, pathlib\npathlib.Path(os.environ["MARKER"]).write_text("sitecustomize ran")\n'
    run = grant_then_run(tmp_path, flow, lambda: (lib / "sitecustomize.py").write_text(sitecustomize))
    attack.observed(said(run, marker))
    assert refused(run, marker, "sitecustomize.py", str(lib))


def test_the_dash_m_module_on_the_servers_pythonpath_is_bound(attack, tmp_path):
    attack.tried(
        "grant [python3, -m, fc_round3_server] with env PYTHONPATH=/abs/lib, then "
        "lib/fc_round3_server.py changes",
        expected="the server is not started; the error says fc_round3_server.py's content changed",
    )
    marker, lib = tmp_path / "marker", tmp_path / "lib"
    lib.mkdir()
    module = lib / "fc_round3_server.py"
    module.write_text(GRANTED)
    flow = flow_running([PYTHON, "-m", "fc_round3_server"], marker, {"PYTHONPATH": str(lib)})
    run = grant_then_run(tmp_path, flow, lambda: module.write_text(CHANGED))
    attack.observed(said(run, marker))
    assert refused(run, marker, f"fc_round3_server.py in {lib} is not the file granted: its content changed")


def test_code_loading_variables_are_said_in_consent_and_a_folder_of_libraries_is_refused(attack, tmp_path):
    attack.tried(
        "a shared flow's server env sets PYTHONPATH (said?), LD_PRELOAD=/abs/x.so (bound?) and "
        "LD_LIBRARY_PATH=/abs/libs (a folder of code nothing can bind)",
        expected="consent says each makes the program load code; the LD_LIBRARY_PATH server cannot start",
    )
    marker, script = tmp_path / "marker", tmp_path / "server.py"
    script.write_text(GRANTED)
    (tmp_path / "x.so").write_bytes(b"\x7fELF not really")
    (tmp_path / "libs").mkdir()
    loads = flow_running(
        [PYTHON, str(script)], marker, {"PYTHONPATH": str(tmp_path), "LD_PRELOAD": str(tmp_path / "x.so")}
    )
    [item] = trust_items(loads)
    folder = flow_running([PYTHON, str(script)], marker, {"LD_LIBRARY_PATH": str(tmp_path / "libs")})
    run = grant_then_run(tmp_path, folder, lambda: None)
    attack.observed(f"consent: {item.summary[-300:]}; {said(run, marker)}")
    assert "makes the program load code" in item.summary and str(tmp_path / "x.so") in item.subject["files"]
    assert refused(run, marker, "LD_LIBRARY_PATH")


@pytest.mark.parametrize("kind", ["no suffix", "pyz", "sh -c", "-m on PYTHONPATH", "program on PATH"])
def test_an_unchanged_granted_server_still_starts(tmp_path, monkeypatch, kind):
    """The binding lets through what was granted: each form above runs when nothing changed."""
    marker, lib = tmp_path / "marker", tmp_path / "lib"
    lib.mkdir()
    (lib / "fc_round3_ok.py").write_text(GRANTED)
    (tmp_path / "server").write_text(GRANTED)
    _pyz(tmp_path / "server.pyz", GRANTED)
    _launcher(lib / "mytool", tmp_path / "server")
    monkeypatch.setenv("PATH", f"{lib}:/usr/bin:/bin")
    argv, env = {
        "no suffix": ([PYTHON, str(tmp_path / "server")], {}),
        "pyz": ([PYTHON, str(tmp_path / "server.pyz")], {}),
        "sh -c": (["sh", "-c", f"exec {PYTHON} {tmp_path / 'server'}"], {}),
        "-m on PYTHONPATH": ([PYTHON, "-m", "fc_round3_ok"], {"PYTHONPATH": str(lib)}),
        "program on PATH": (["mytool"], {}),
    }[kind]
    run = grant_then_run(tmp_path, flow_running(argv, marker, env), lambda: None)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert not marker.exists()


# --- tools of installed packages -------------------------------------------------------------------

STOCK = '''
import os, pathlib
from flowcall.tools.python_plugins import tool


@tool("acme3/v1/wipe_stock")
def wipe_stock(sku: str) -> str:
    """Set a SKU's stock to zero."""
    pathlib.Path(os.environ["FC_ROUND3_MARKER"]).write_text("wiped " + sku)
    return "wiped"
'''


@pytest.fixture
def installed_package(tmp_path, monkeypatch):
    """A package installed the way pip leaves one: a module on sys.path, and a dist-info folder
    whose entry_points.txt names it in the `flowcall.plugins` group."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "acme3_tools.py").write_text(STOCK)
    info = site / "acme3_tools-2.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme3-tools\nVersion: 2.5\n")
    (info / "entry_points.txt").write_text("[flowcall.plugins]\nacme3 = acme3_tools\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("FC_ROUND3_MARKER", str(tmp_path / "marker"))
    yield site
    sys.modules.pop("acme3_tools", None)


def test_a_shared_flow_using_an_installed_packages_tool_needs_a_grant_naming_the_package(
    attack, tmp_path, installed_package
):
    attack.tried(
        "a shared flow attaches acme3/v1/wipe_stock, a tool of the installed package acme3-tools "
        "(a flowcall.plugins entry point), and runs",
        expected="refused until granted; consent names the package, its version and its module file",
    )
    marker = tmp_path / "marker"
    flow = parse_flow(
        {
            "name": "shop",
            "tools": ["acme3/v1/wipe_stock"],
            "max_rounds": 2,
            "decision": {"provider": "scripted"},
        }
    )
    store = FlowCall.open(f"sqlite:///{tmp_path / 'grants.db'}").store
    service = FlowCall(
        store=store, provider_factory=lambda c: ScriptedProvider([[("wipe_stock", {"sku": "A"})], "ok"])
    )
    with pytest.raises(TrustRequired) as stopped:
        service.run(flow, "go", approver=approve_all)
    listed = describe(item for item, _ in service.trust_status(flow))
    attack.observed(f"{str(stopped.value)[:300]}; tool ran: {marker.exists()}")
    assert not marker.exists()
    module = str(installed_package / "acme3_tools.py")
    assert any("acme3-tools 2.5" in line and module in line and "wipe_stock" in line for line in listed), (
        listed
    )
    service.grant(flow, by="test")
    assert service.run(flow, "go", approver=approve_all).status == RunStatus.SUCCEEDED and marker.exists()


def test_a_changed_installed_package_module_needs_a_new_grant(attack, tmp_path, installed_package):
    attack.tried(
        "grant a flow's use of an installed package's tool; the package's module file then changes",
        expected="the next load of the package needs a new grant",
    )
    flow = parse_flow(
        {"name": "shop", "tools": ["acme3/v1/wipe_stock"], "decision": {"provider": "scripted"}}
    )
    url = f"sqlite:///{tmp_path / 'grants.db'}"
    FlowCall.open(url).grant(flow, by="test")
    (installed_package / "acme3_tools.py").write_text(STOCK + "\n# changed\n")
    sys.modules.pop("acme3_tools", None)
    later = FlowCall.open(url)
    with pytest.raises(TrustRequired) as stopped:
        later.require_trust(flow)
    attack.observed(str(stopped.value)[:300])
    assert "acme3-tools 2.5" in str(stopped.value) and "granted before, but its module file" in str(
        stopped.value
    )


# --- FlowCall's own settings are secrets -----------------------------------------------------------


def test_a_server_env_reading_flowcall_api_settings_is_flagged_as_a_secret(attack, tmp_path):
    attack.tried(
        'a shared flow\'s server env {"CFG": "$FLOWCALL_API_SETTINGS", "X": "$FLOWCALL_NEW_THING"}',
        expected="consent says it gives away FlowCall's settings with a password, not 'the value of'",
    )
    flow = flow_running(
        ["sh", "-c", "true"], tmp_path / "m", {"CFG": "$FLOWCALL_API_SETTINGS", "X": "$FLOWCALL_NEW_THING"}
    )
    [item] = trust_items(flow)
    attack.observed(item.summary[-300:])
    assert "the value of FLOWCALL_API_SETTINGS" not in item.summary
    assert "password" in item.summary and "(FLOWCALL_API_SETTINGS)" in item.summary
    assert "the value of FLOWCALL_NEW_THING" not in item.summary and "FLOWCALL_NEW_THING" in item.summary


def test_flowcall_settings_that_hold_no_secret_are_not_flagged(tmp_path):
    flow = flow_running(["sh", "-c", "true"], tmp_path / "m", {"H": "$FLOWCALL_HOME"})
    [item] = trust_items(flow)
    assert "the value of FLOWCALL_HOME from this machine" in item.summary


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWCALL_HOME", str(tmp_path / "home"))
    os.makedirs(tmp_path / "home", exist_ok=True)


# --- the studio's "list tools" and "try" start a server as a run does ------------------------------


def test_the_studios_list_and_try_check_the_grant_again_at_the_start(attack, tmp_path):
    attack.tried(
        "the studio's consent panel grants [python3, /abs/server.py] (a trusted server of a flow), "
        "then the script changes before 'list tools' or 'try' starts it",
        expected="neither starts the changed script; an unchanged one lists and tries its tool",
    )
    from flowcall.core.spec import MCPServerConfig
    from flowcall.service.front import server_tools, try_server_tool
    from flowcall.studio.sources import ungranted

    marker, script = tmp_path / "marker", tmp_path / "server.py"
    script.write_text(GRANTED)
    service = FlowCall.open(f"sqlite:///{tmp_path / 'studio.db'}")
    server = MCPServerConfig(
        name="s", command=[PYTHON, str(script)], env={"MARKER": str(marker)}, trusted=True
    )
    service.store.grant(ungranted(service, "mcp", server), by="studio")  # what the panel's Grant does
    untrusted = server.model_copy(update={"trusted": False})  # as the studio starts it
    listed = [t.name for t in server_tools(untrusted, service.store)]
    tried = try_server_tool(untrusted, "ping", {}, service.store)
    script.write_text(CHANGED)
    problems = []
    for start in (
        lambda: server_tools(untrusted, service.store),
        lambda: try_server_tool(untrusted, "ping", {}, service.store),
    ):
        try:
            start()
            problems.append("started")
        except Exception as exc:  # noqa: BLE001 - the refusal, whatever its class, names the change
            problems.append(str(exc))
    attack.observed(
        f"before: {listed}, {tried.error_code}; after the change: {[p[:120] for p in problems]}; "
        f"ran: {marker.exists()}"
    )
    assert listed == ["ping"] and tried.error_code is None
    assert not marker.exists() and all("its content changed" in p for p in problems), problems
