"""Settings from environment variables: a bad value names the variable and what it takes."""

from __future__ import annotations

import pytest

from flowcall import config
from flowcall.errors import ConfigError


def test_model_threads(monkeypatch):
    monkeypatch.delenv("FLOWCALL_THREADS", raising=False)
    assert config.model_threads() is None  # all cores
    monkeypatch.setenv("FLOWCALL_THREADS", "1")
    assert config.model_threads() == 1
    monkeypatch.setenv("FLOWCALL_THREADS", "two")
    with pytest.raises(ConfigError, match="FLOWCALL_THREADS must be a whole number"):
        config.model_threads()
