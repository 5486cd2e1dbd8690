"""Settings from environment variables: a bad value names the variable and what it takes."""

from __future__ import annotations

import pytest

from flowcall.core import config
from flowcall.core.errors import ConfigError


def test_model_threads(monkeypatch):
    monkeypatch.delenv("FLOWCALL_THREADS", raising=False)
    assert config.model_threads() == config.physical_cores()
    monkeypatch.setenv("FLOWCALL_THREADS", "1")
    assert config.model_threads() == 1
    monkeypatch.setenv("FLOWCALL_THREADS", "two")
    with pytest.raises(ConfigError, match="FLOWCALL_THREADS must be a whole number"):
        config.model_threads()


def test_physical_cores_match_lscpu():
    """Cores as lscpu counts them (socket, core pairs), among the CPUs this process may use."""
    import os
    import shutil
    import subprocess

    if not shutil.which("lscpu"):
        pytest.fail("lscpu (util-linux) is on every Debian machine; without it this check has no reference")
    rows = subprocess.run(["lscpu", "-p=CPU,SOCKET,CORE"], capture_output=True, text=True, check=True).stdout
    usable = os.sched_getaffinity(0)
    cores = {
        tuple(r.split(",")[1:])
        for r in rows.splitlines()
        if r and not r.startswith("#") and int(r.split(",")[0]) in usable
    }
    assert config.physical_cores() == len(cores) >= 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1/"),
        ("HTTP://LocalHost:11434/v1", "http://localhost:11434/v1"),
        ("https://api.example.com/v1", "https://api.example.com:443/v1"),
        ("http://api.example.com/v1", "http://api.example.com:80/v1/"),
        (
            "https://user:pw@api.example.com/v1",
            "https://api.example.com/v1",
        ),  # userinfo does not change the server
    ],
)
def test_same_base_url(a, b):
    assert config.same_base_url(a, b) and config.same_base_url(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11435/v1"),  # another port
        ("http://api.example.com/v1", "https://api.example.com/v1"),  # another scheme
        ("https://api.example.com/v1", "https://api.example.com/v2"),  # another path
        ("https://api.example.com/V1", "https://api.example.com/v1"),  # paths are case-sensitive
        ("https://api.example.com/v1", "https://api.example.com.evil.net/v1"),
        (
            "https://api.example.com@evil.net/v1",
            "https://api.example.com/v1",
        ),  # userinfo spelling of the host
        (
            "https://api.example.com\\@evil.net/v1",
            "https://api.example.com/v1",
        ),  # parsers disagree: never same
        ("https://api.example.com:notaport/v1", "https://api.example.com/v1"),
        ("ftp://api.example.com/v1", "ftp://api.example.com/v1"),
        (None, "https://api.example.com/v1"),
        ("", ""),
    ],
)
def test_different_base_url(a, b):
    assert not config.same_base_url(a, b)


def test_configured_base_urls(monkeypatch):
    """Each provider's base URL variable is its ProviderInfo's; openai-compatible's is also named
    in config, for consent (below the providers): the two are one."""
    from flowcall.providers import provider_info

    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", " http://127.0.0.1:8080/v1 ")
    monkeypatch.setenv("OPENAI_BASE_URL", "")
    assert provider_info("openai-compatible").base_url_variable == config.COMPATIBLE_BASE_URL_VARIABLE
    assert config.compatible_base_url() == "http://127.0.0.1:8080/v1"
    assert provider_info("openai-compatible").configured_base_url() == "http://127.0.0.1:8080/v1"
    assert provider_info("openai").configured_base_url() is None
    assert provider_info("local").configured_base_url() is None
    monkeypatch.delenv("OPENAI_COMPATIBLE_BASE_URL")
    assert config.compatible_base_url() is None


def test_prompt_cache_size_defaults_to_a_gigabyte_and_refuses_what_is_not_a_size(monkeypatch):
    from flowcall.core import config
    from flowcall.core.errors import ConfigError

    monkeypatch.delenv("FLOWCALL_PROMPT_CACHE_MB", raising=False)
    assert config.prompt_cache_mb() == 1024
    monkeypatch.setenv("FLOWCALL_PROMPT_CACHE_MB", "0")
    assert config.prompt_cache_mb() == 0
    monkeypatch.setenv("FLOWCALL_PROMPT_CACHE_MB", "lots")
    with pytest.raises(ConfigError, match="FLOWCALL_PROMPT_CACHE_MB"):
        config.prompt_cache_mb()
