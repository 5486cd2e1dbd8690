"""ProviderInfo: each provider module declares its own, and every table of providers (names, hosted
ones, base-URL variables, suggested models) is read from them; a provider's name that no info has
is refused with what to do; reading them loads no SDK."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from flowcall import providers
from flowcall.core.errors import ConfigError
from flowcall.core.messages import ModelTurn
from flowcall.core.spec import ModelConfig, parse_flow
from flowcall.providers import (
    BUILT_IN_MODULES,
    needs_settings,
    provider_for,
    provider_info,
    provider_infos,
    provider_names,
)
from flowcall.providers.base import Capabilities, ProviderInfo
from flowcall.service import models
from flowcall.trust.consent import handed_over

ROOT = Path(__file__).resolve().parents[2]


class Echo:
    name = "echo"
    capabilities = Capabilities()

    def __init__(self, model: str):
        self.model = model

    def complete(self, request):
        return ModelTurn(content=f"{self.model}: {request.messages[-1].content}")


ECHO = ProviderInfo(
    name="echo",
    label="Echo",
    hosted=True,
    factory=lambda config: Echo(config.model),
    api_key_variable="ECHO_API_KEY",
    base_url_variable="ECHO_BASE_URL",
    suggested_models=("loud", "quiet"),
)


@pytest.fixture
def echo():
    providers.add_provider(ECHO)
    yield ECHO
    providers.remove_provider("echo")


def test_each_provider_module_declares_its_own_infos() -> None:
    declared = {
        module: [info.name for info in importlib.import_module(f"flowcall.providers.{module}").INFOS]
        for module in BUILT_IN_MODULES
    }
    assert declared == {
        "local": ["local"],
        "openai_compat": ["openai", "openai-compatible"],
        "dashscope_native": ["dashscope"],
        "scripted": ["scripted"],
    }
    assert list(provider_infos()) == [name for names in declared.values() for name in names]
    assert provider_names() == ["local", "openai", "openai-compatible", "dashscope"]  # not the stand-in
    hosted = [name for name, info in provider_infos().items() if info.hosted]
    assert hosted == ["openai", "openai-compatible", "dashscope"]


def test_the_variables_are_the_providers_own() -> None:
    assert provider_info("openai").variables()[:2] == ("OPENAI_API_KEY", "OPENAI_BASE_URL")
    assert provider_info("dashscope").variables()[:2] == ("DASHSCOPE_API_KEY", "DASHSCOPE_HTTP_BASE_URL")
    compatible = provider_info("openai-compatible")
    assert compatible.variables()[:2] == ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_COMPATIBLE_BASE_URL")
    assert compatible.flow_base_url and compatible.key_optional
    assert (
        provider_info("local").api_key_variable is None
        and "FLOWCALL_MODEL_PATH" in provider_info("local").variables()
    )


def test_every_key_variable_is_said_as_a_secret_when_handed_to_a_program() -> None:
    """consent (below the providers) does not read the infos: its wording for a `$NAME` an MCP
    server's env hands over is generic, and must say each provider's key is a secret."""
    for info in provider_infos().values():
        if info.api_key_variable:
            said = handed_over({"X": f"${info.api_key_variable}"})[0]
            assert "secret" in said or "API key" in said, said
    assert "secret" in handed_over({"X": f"${ECHO.api_key_variable}"})[0]


def test_the_configuration_guide_names_every_providers_variables() -> None:
    guide = (ROOT / "docs" / "guide" / "configuration.md").read_text(encoding="utf-8")
    for info in provider_infos().values():
        for variable in (info.api_key_variable, info.base_url_variable):
            if variable:
                assert f"`{variable}`" in guide, variable


def test_a_provider_added_at_run_time_is_offered_everywhere(echo, monkeypatch) -> None:
    assert "echo" in provider_names() and "echo" in [i.name for i in models.providers()]
    assert models.suggested_models("echo") == ["loud", "quiet"]
    assert needs_settings("echo")
    monkeypatch.setenv("ECHO_BASE_URL", "http://user:pw@127.0.0.1:9/v1")
    assert models.shown_base_url(echo) == "http://127.0.0.1:9/v1"  # shown without the password
    built = provider_for(ModelConfig(provider="echo", model="loud"))
    assert isinstance(built, Echo) and built.model == "loud"
    # its key goes only where its variable says: a flow may not name another server for it
    with pytest.raises(ConfigError, match=r"cannot set base_url for provider 'echo'.*\(or ECHO_BASE_URL\)"):
        provider_for(ModelConfig(provider="echo", model="loud", base_url="http://elsewhere.test/v1"))


def test_a_name_already_taken_cannot_be_added() -> None:
    with pytest.raises(ConfigError, match="already a provider named 'openai'"):
        providers.add_provider(ProviderInfo(name="openai", label="x", hosted=False, factory=Echo))


def test_a_provider_nobody_has_is_refused_with_the_known_ones_and_what_to_do() -> None:
    flow = parse_flow({"name": "elsewhere", "decision": {"provider": "acme-llm", "model": "m"}})
    assert flow.decision.provider == "acme-llm"  # valid in a flow: a package may provide it
    expected = (
        "provider 'acme-llm' is not installed here; known: local, openai, openai-compatible, dashscope; "
        "install the package that provides it"
    )
    with pytest.raises(ConfigError, match=expected):
        provider_for(flow.decision)
    with pytest.raises(ConfigError, match=expected):
        needs_settings("acme-llm")  # the service asks before a run is recorded


@pytest.mark.parametrize("name", ["Open AI", "UPPER", "-dash", "a" * 41, "x/y"])
def test_a_name_no_provider_could_have_is_refused_in_the_flow(name) -> None:
    with pytest.raises(ValidationError):
        ModelConfig(provider=name)
    with pytest.raises(ValueError):
        ProviderInfo(name=name, label="x", hosted=False, factory=Echo)


def test_reading_the_infos_and_a_local_flows_provider_loads_no_sdk() -> None:
    code = (
        "import sys\n"
        "from flowcall.providers import provider_infos, provider_info\n"
        "from flowcall.core.spec import ModelConfig\n"
        "provider_infos()\n"
        "provider_info('scripted').factory(ModelConfig(provider='scripted', model='schema'))\n"
        "print(sorted(m for m in ('openai', 'dashscope') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
