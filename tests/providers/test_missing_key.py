"""A provider whose API key is not set: `flowcall run` exits 2 naming the variable to set,
before the run records anything (it is the person's to fix, not a failed run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEYS = (
    "OPENAI_API_KEY",
    "DASHSCOPE_API_KEY",
    "OPENAI_BASE_URL",
    "DASHSCOPE_BASE_URL",
    "DASHSCOPE_HTTP_BASE_URL",
)


def flowcall(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flowcall.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


@pytest.mark.parametrize(
    "decision, polish, extra_env, variable",
    [
        ("openai", None, {}, "OPENAI_API_KEY"),
        ("dashscope", None, {}, "DASHSCOPE_API_KEY"),
        # the polish model's key is checked before the decision model runs: no half-done run
        (
            "openai",
            "dashscope",
            {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
            "DASHSCOPE_API_KEY",
        ),
        # the compatible mode's base URL alone: the region meant is not the one the run would reach
        (
            "dashscope",
            None,
            {"DASHSCOPE_API_KEY": "sk-test", "DASHSCOPE_BASE_URL": "https://x.test/compatible-mode/v1"},
            "DASHSCOPE_HTTP_BASE_URL",
        ),
    ],
)
def test_a_missing_api_key_exits_2_naming_the_variable(tmp_path, decision, polish, extra_env, variable):
    flow = {
        "format": "flowcall.flow/v1",
        "name": f"needs-{variable.lower()}",
        "tools": ["time/v1/get_current_time"],
        "decision": {"provider": decision, "model": "some-model"},
    }
    if polish:
        flow["polish"] = {"provider": polish, "model": "some-model"}
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in KEYS} | extra_env

    done = flowcall(env, "run", str(path), "现在几点了?")

    assert done.returncode == 2, done.stderr
    assert variable in done.stderr and f"export {variable}=" in done.stderr
    assert "INTERNAL" not in done.stderr and "Traceback" not in done.stderr
    assert json.loads(flowcall(env, "runs", "list", "--json").stdout) == []  # nothing recorded
