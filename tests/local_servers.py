"""Start a real server as a subprocess on 127.0.0.1 for a test module, and stop it after."""

from __future__ import annotations

import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(
    argv: list[str],
    probe_url: str,
    log_path: Path,
    *,
    within_s: float,
    name: str,
    any_answer: bool = False,
    env: dict[str, str] | None = None,
) -> Iterator[subprocess.Popen]:
    """Run `argv` until the block ends (the block gets the process); ready once `probe_url`
    answers 200 (or anything, with `any_answer`). The log is a file, not a pipe: a pipe nobody
    reads fills up and blocks."""
    log = log_path.open("w+")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"{name} exited: {log.read()[-2000:]}")
            try:
                if httpx.get(probe_url, timeout=2).status_code == 200 or any_answer:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        else:
            pytest.fail(f"{name} did not come up within {within_s:g} s")
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
