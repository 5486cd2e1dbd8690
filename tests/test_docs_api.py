"""The HTTP API's examples in the README and in docs/guide/api.md work as written: each block is
run against a real `flowcall serve` on a real database, with the flows they name saved (on the
deterministic schema-driven model) and the key in FLOWCALL_API_KEY, as the docs tell a reader."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.api.server import SCHEMA_MODEL, Server, api_server

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "guide" / "api.md"]
FLOWS = {
    "current-time": {"name": "current-time", "tools": ["time/v1/get_current_time"], "decision": SCHEMA_MODEL},
    "create-task": {
        "name": "create-task",
        "tools": ["task/v1/add_task"],
        "decision": SCHEMA_MODEL,
        "needs_approval": ["task/v1/add_task"],
    },
    "commute-weather": {
        "name": "commute-weather",
        "tools": ["weather/v1/get_weather"],
        "decision": SCHEMA_MODEL,
    },
}


def blocks(path: Path, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def api_blocks(path: Path, language: str) -> list[str]:
    """The blocks that talk to the API (or set it up), in the order a reader meets them."""
    return [
        b for b in blocks(path, language) if "8000" in b or "flowcall keys" in b or "FLOWCALL_API_KEY" in b
    ]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with api_server(tmp_path_factory.mktemp("docs-api"), flows=FLOWS) as running:
        yield running


def run(server: Server, argv: list[str], script: str) -> str:
    env = {
        **os.environ,
        "FLOWCALL_API_KEY": server.keys["all"],
        "FLOWCALL_DATABASE_URL": server.app.store.engine.url.render_as_string(hide_password=False),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    done = subprocess.run(
        [*argv, script.replace("127.0.0.1:8000", f"127.0.0.1:{server.port}")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_the_python_examples_run_as_written(server: Server, path: Path) -> None:
    examples = api_blocks(path, "python")
    assert examples, f"{path.name} shows no OpenAI SDK example"
    for example in examples:
        assert run(server, [sys.executable, "-c"], example).startswith("Results: get_current_time -> ")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_the_shell_examples_run_as_written(server: Server, path: Path) -> None:
    """The blocks run in one shell, in order (the approval example uses the run the block before it
    started); `flowcall serve` is the one line left out (the test's server is already up), and so
    is the line where the reader pastes the key the block before printed."""
    for name in ("my-app", "reports"):  # each document's reader starts afresh
        if any(k.name == name and k.active for k in server.app.list_keys()):
            server.app.revoke_key(name)
    lines = []
    for block in api_blocks(path, "bash"):
        lines += [
            line
            for line in block.splitlines()
            if not line.startswith("flowcall serve") and "fc_..." not in line
        ]
    script = "\n".join(lines)
    out = run(server, ["bash", "-euo", "pipefail", "-c"], script).replace(" ", "")
    assert '"status":"succeeded","question":"WhattimeisitinTokyo?"' in out
    assert '"answer":"Results:get_current_time->' in out
    if '"stream": true' in script:  # the streamed run: its steps, then the run
        assert out.count("event:step") == 3 and out.count("event:run") == 1
    if "resume" in script:  # the approval example: waiting first, then approved and done
        waiting, approved = out.index('"status":"waiting_approval"'), out.rindex('"status":"succeeded"')
        assert waiting < approved and '"answer":"Results:add_task->' in out[approved:]
    assert {k.name for k in server.app.list_keys() if k.active} >= {"my-app"}


AWKWARD = {
    name: {"name": name, "tools": [], "decision": SCHEMA_MODEL} for name in ("报告 v1.2", "a..b", "a -b")
}


@pytest.fixture(scope="module")
def awkward_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with api_server(tmp_path_factory.mktemp("snippets"), flows=AWKWARD) as running:
        yield running


@pytest.mark.parametrize("flow", list(AWKWARD))
def test_the_api_pages_snippets_work_when_pasted(awkward_server: Server, flow: str) -> None:
    """The studio's API page shows these for a flow (flowcall/studio/api_snippets.py); with the key put
    in for the placeholder, each one reaches the flow, whatever its name holds."""
    from flowcall.studio import api_snippets

    base, key, question = awkward_server.base, awkward_server.keys["all"], "what's up? 「你好」 $HOME `id`"
    with_key = lambda text: text.replace(api_snippets.KEY_PLACEHOLDER, key)  # noqa: E731
    expected = f"No tool results. Last message: {question}"
    run_reply = json.loads(
        run(awkward_server, ["bash", "-c"], with_key(api_snippets.curl_run(base, flow, question)))
    )
    assert run_reply["flow"] == flow and run_reply["answer"] == expected
    chat_reply = json.loads(
        run(awkward_server, ["bash", "-c"], with_key(api_snippets.curl_chat(base, flow, question)))
    )
    assert chat_reply["model"] == flow and chat_reply["choices"][0]["message"]["content"] == expected
    printed = run(
        awkward_server, [sys.executable, "-c"], with_key(api_snippets.openai_python(base, flow, question))
    )
    assert printed.rstrip("\n") == expected


SLOW = {"provider": "openai-compatible", "model": "fake"}  # the fake model server, 1.5 s a call


def approval_section(path: Path) -> str:
    """The shell blocks of the guide's "When a call waits for a person", in order."""
    text = path.read_text(encoding="utf-8")
    section = text.split("## When a call waits for a person", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, flags=re.S))


def test_the_approval_example_waits_for_the_run_on_a_slow_model(tmp_path: Path) -> None:
    """The server answers before the run waits (a model call takes longer than `--wait`): the
    guide's example still waits for the call to wait, approves it, and waits for the answer."""
    from flowcall.testing.fake_server import FakeModelServer

    flows = {"create-task": {**FLOWS["create-task"], "decision": SLOW}}
    with FakeModelServer(delay_s=1.5) as model:
        env = {"OPENAI_COMPATIBLE_BASE_URL": model.base_url, "NO_PROXY": "127.0.0.1,localhost"}
        with api_server(tmp_path, "--wait", "1", env=env, flows=flows) as slow:
            out = run(slow, ["bash", "-euo", "pipefail", "-c"], approval_section(DOCS[1])).replace(" ", "")
            runs = [slow.app.store.get_run(r.id) for r in slow.app.store.list_runs("create-task", limit=10)]
    waiting, approved = out.index('"status":"waiting_approval"'), out.rindex('"status":"succeeded"')
    assert waiting < approved and '"answer":"answer:' in out[approved:]
    assert len(runs) == 1 and runs[0].status == "succeeded"
    assert [s.name for s in runs[0].steps if s.kind == "tool_call"] == ["add_task"]
