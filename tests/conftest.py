"""Shared fixtures. Every test gets its own SQLite database, never the user's ~/.flowcall one."""

from __future__ import annotations

import os

import pytest

from flowcall import local_model


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
