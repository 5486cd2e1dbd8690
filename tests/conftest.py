"""Shared fixtures. Every test gets its own SQLite database, never the user's ~/.flowcall one."""

from __future__ import annotations

import os

import pytest

from flowcall.providers import local_model

# Every test process starts with an empty prompt cache: no states on disk from an earlier run or
# from the user's own (the tests of the disk tier give it a folder of their own).
os.environ["FLOWCALL_PROMPT_CACHE_DISK_MB"] = "0"


@pytest.fixture(autouse=True)
def _isolated_database(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWCALL_DATABASE_URL", f"sqlite:///{tmp_path / 'flowcall.db'}")


@pytest.fixture(scope="session")
def model_path():
    """The embedded GGUF. Missing it is a set-up fault (scripts/test.sh fetches it), so in CI
    it fails; elsewhere it skips and says how to get it."""
    status = local_model.status()
    if not status["present"]:
        message = f"the embedded model is not at {status['path']}: run `flowcall model fetch`"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return status["path"]


@pytest.fixture(scope="module")
def http_url(tmp_path_factory):
    """FlowCall's own MCP test server (tests/tools/mcp_test_server.py) over streamable HTTP."""
    import sys
    from pathlib import Path

    from tests.local_servers import free_port, serving

    server = Path(__file__).resolve().parent / "tools" / "mcp_test_server.py"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    # a bare GET on the MCP endpoint is refused (it wants a session); any answer means it listens
    with serving(
        [sys.executable, str(server), "http", str(port)],
        url,
        tmp_path_factory.mktemp("mcp") / "server.log",
        within_s=30,
        name="the MCP test server",
        any_answer=True,
    ):
        yield url
