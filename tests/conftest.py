"""Shared fixtures. Every test gets its own SQLite database, never the user's ~/.flowcall one."""

from __future__ import annotations

import os

import pytest

from flowcall.providers import local_model

# Every test process starts with an empty prompt cache: no states on disk from an earlier run or
# from the user's own (the tests of the disk tier give it a folder of their own).
os.environ["FLOWCALL_PROMPT_CACHE_DISK_MB"] = "0"


# Tests that run the embedded model (two threads of its own), drive a browser or start worker
# processes run one at a time after the rest (scripts/test.sh): two model processes on two
# cores are many times slower than one after the other.
SERIAL = ("model", "browser", "workers")


def pytest_collection_modifyitems(items):
    for item in items:
        if "model_path" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("model"):
            item.add_marker(pytest.mark.model)


@pytest.fixture(autouse=True)
def _model_only_where_marked(request, monkeypatch):
    """A test that loads the embedded model must say so (@pytest.mark.model), or it would run
    beside another model test; loading just the tokenizer (vocab_only) is fine anywhere."""
    if any(request.node.get_closest_marker(name) for name in SERIAL):
        return
    import llama_cpp

    real = llama_cpp.Llama

    def refuse(*args, **kwargs):
        if kwargs.get("vocab_only"):
            return real(*args, **kwargs)
        pytest.fail(
            f"{request.node.nodeid} loads the embedded model: mark it @pytest.mark.model", pytrace=False
        )

    monkeypatch.setattr(llama_cpp, "Llama", refuse)


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
