"""FlowCall as a user installs it: the wheel built from this tree, installed into a new virtualenv
in a folder away from the repository (pip's cache allowed), on a new FLOWCALL_HOME. The example
flows and their plugins come with the package: `flowcall run` knows them by name, and
`flowcall studio` opens on them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.e2e.studio_ui import settle, widget
from tests.local_servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.browser


def _check(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, (
        f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stderr[-3000:]}"
    )
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel installed in a new venv; its `flowcall` and an environment on a new home."""
    where = tmp_path_factory.mktemp("installed")
    assert ROOT not in where.parents
    _check(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(ROOT), "-w", str(where / "dist")],
        timeout=600,
    )
    (wheel,) = (where / "dist").glob("flowcall-*.whl")
    venv = where / "venv"
    _check([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], timeout=120)
    _check(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            str(wheel),
        ],
        timeout=1800,
    )
    home = where / "home"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("FLOWCALL_", "PYTHON", "VIRTUAL_ENV"))
    }
    env |= {"FLOWCALL_HOME": str(home), "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    return SimpleNamespace(flowcall=str(venv / "bin" / "flowcall"), env=env, cwd=where)


def _flowcall(installed, *args: str) -> subprocess.CompletedProcess:
    return _check([installed.flowcall, *args], env=installed.env, cwd=installed.cwd, timeout=300)


def test_flowcall_run_knows_the_example_flows_by_name(installed):
    listed = _flowcall(installed, "flows", "list").stdout
    assert {"commute-weather", "create-task", "current-time"} <= {
        line.split()[0] for line in listed.splitlines()
    }
    plugins = {tool["name"] for tool in json.loads(_flowcall(installed, "plugins", "list", "--json").stdout)}
    assert {"get_day_weather", "get_current_time", "add_task"} <= plugins
    # the example on the scripted model (no model file here): a new version of the saved flow
    flow = json.loads(_flowcall(installed, "flows", "export", "commute-weather").stdout)
    for part in ("decision", "polish"):
        flow[part] |= {"provider": "scripted", "model": "schema"}
    changed = installed.cwd / "commute_scripted.json"
    changed.write_text(json.dumps(flow, ensure_ascii=False), encoding="utf-8")
    assert "as version 2" in _flowcall(installed, "flows", "import", str(changed), "--new-version").stdout
    run = json.loads(
        _flowcall(
            installed,
            "run",
            "commute-weather",
            "Will it rain on my way to work tomorrow?",
            "--json",
            "--quiet",
        ).stdout
    )
    assert run["status"] == "succeeded", run.get("error")
    calls = [step["name"] for step in run["steps"] if step["kind"] == "tool_call"]
    assert calls and set(calls) <= {"get_day_weather", "get_weather"}


def test_flowcall_studio_opens_on_the_example_flows(installed, page, shots):
    port = free_port()
    argv = [installed.flowcall, "studio", "--port", str(port)]
    url = f"http://127.0.0.1:{port}"
    with serving(
        argv,
        f"{url}/_stcore/health",
        installed.cwd / "studio.log",
        within_s=120,
        name="flowcall studio",
        env=installed.env,
    ):
        page.goto(url)
        settle(page)
        widget(page, "stSelectbox", "Flow").locator("input").first.click()
        for name in ("commute-weather", "create-task", "current-time", "employee-lookup", "clean-data"):
            page.get_by_role("option", name=name, exact=True).wait_for(timeout=60_000)
        page.screenshot(path=str(shots / "installed-studio-flows.png"))
