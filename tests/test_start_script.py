"""`bash scripts/start.sh`, the README's first command, as a newcomer runs it: the studio answers
while the prompt cache still warms in the background, and a model file set by FLOWCALL_MODEL_PATH
is said, not skipped silently. The set-up it runs first is idempotent (nothing to install here)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from flowcall.core import config
from flowcall.providers import warming
from tests.local_servers import free_port

ROOT = Path(__file__).resolve().parents[1]
WAIT_S = 300  # a bound for the idempotent set-up and the studio's start on a slow machine


def started(tmp_path: Path, **env: str) -> tuple[subprocess.Popen, str, Path]:
    """start.sh on a free port and a fresh database; its process, URL and output file."""
    port = free_port()
    out = tmp_path / "start.out"
    settings = {
        **os.environ,
        "FLOWCALL_PORT": str(port),
        "FLOWCALL_DATABASE_URL": f"sqlite:///{tmp_path / 'flowcall.db'}",
        **env,
    }
    with out.open("w") as sink:
        proc = subprocess.Popen(
            ["bash", str(ROOT / "scripts" / "start.sh")],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=settings,
            start_new_session=True,  # its group: the studio and anything it started
        )
    return proc, f"http://127.0.0.1:{port}", out


def answered(proc: subprocess.Popen, url: str, out: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, out.read_text()[-3000:]
        try:
            if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"the studio did not answer within {WAIT_S} s: {out.read_text()[-3000:]}")


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)


@pytest.mark.model
def test_the_studio_answers_while_the_prompt_cache_warms(tmp_path, model_path):
    # no disk cache: the warm-up reads every prompt, so it is surely still at work when the studio
    # answers (with a warm disk cache it could end first, and prove nothing)
    proc, url, out = started(tmp_path, FLOWCALL_PROMPT_CACHE_DISK_MB="0")
    try:
        answered(proc, url, out)
        log = config.home() / "warm-up.log"
        assert "read the fixed prompts" not in log.read_text()  # the studio answered first
        assert "Warming the embedded model's prompt cache in the background" in out.read_text()
        deadline = time.monotonic() + WAIT_S
        while not warming.in_progress():  # and the studio can tell that the warm-up is at work
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.5)
    finally:
        warm = warming.marker().read_text().strip() if warming.marker().exists() else ""
        stop(proc)
        if warm.isdigit():  # the warm-up runs apart (nohup): stop it too
            try:
                os.kill(int(warm), signal.SIGTERM)
            except ProcessLookupError:
                pass


def test_a_model_file_of_ones_own_is_said_and_nothing_is_warmed(tmp_path):
    model = config.model_path()  # any file will do: it is not read before a run
    proc, url, out = started(tmp_path, FLOWCALL_MODEL_PATH=str(model))
    try:
        answered(proc, url, out)
        said = out.read_text()
        assert "FLOWCALL_MODEL_PATH is set" in said and "not fetched or checked" in said
        assert "Warming" not in said
    finally:
        stop(proc)
