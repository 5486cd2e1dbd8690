"""A model provider added from outside the package: an installed package (written at test time,
tests/extension/toy.py) offers the provider "parrot" through the entry point group
`flowcall.providers`, beside its tool source kind "toy", and the `flowcall` CLI, in a process of
its own with a database of its own, runs a flow on that provider calling that kind's tool, once
the package is granted. No file of flowcall/ names either."""

from __future__ import annotations

import json

import pytest

from tests.extension.toy import TOY_KIND, flowcall_cli, write_flow, write_toy_package

# a model that calls the first tool it is offered, then answers with what the tool gave it
PARROT = """
from flowcall.core.messages import ModelTurn, ToolCall
from flowcall.providers.base import Capabilities, ProviderInfo

LOADED = True  # its code runs only once imported


class Parrot:
    name = "parrot"

    def __init__(self, model):
        self.model = model
        self.capabilities = Capabilities(
            native_tools=True, tool_choice_modes=["auto", "required", "none", "named"]
        )

    def complete(self, request):
        results = [m.content for m in request.messages if m.role == "tool"]
        if request.tools and not results:
            call = ToolCall(id="call_parrot_1", name=request.tools[0].name, arguments={})
            return ModelTurn(tool_calls=[call], finish_reason="tool_calls")
        return ModelTurn(content=f"{self.model} repeats: {results[-1] if results else 'nothing'}",
                         finish_reason="stop")


INFO = ProviderInfo(
    name="parrot",
    label="Parrot",
    hosted=False,
    factory=lambda config: Parrot(config.model),
    description="calls the first tool, then repeats its result",
    suggested_models=("polly",),
)
"""

# a hosted provider: building it needs its key, which the environment may lack
REMOTE = """
import os

from flowcall.providers.base import NotConfigured, ProviderInfo


def build(config):
    if not os.environ.get("REMOTE_PARROT_KEY"):
        raise NotConfigured("provider remote-parrot needs REMOTE_PARROT_KEY; export it first")
    raise AssertionError("not reached in the test")


INFO = ProviderInfo(
    name="remote-parrot",
    label="Remote parrot",
    hosted=True,
    factory=build,
    api_key_variable="REMOTE_PARROT_KEY",
)
"""

FLOW = {
    "name": "parrot-dice",
    "decision": {"provider": "parrot", "model": "polly", "calling_way": "native"},
    "tools": ["dice/toy/roll"],
    "sources": {"toy": [{"name": "dice", "faces": 6}]},
}


@pytest.fixture
def cli(tmp_path):
    """`flowcall ...` in a subprocess with the toy package installed and a database of its own."""
    site = write_toy_package(
        tmp_path / "site",
        {
            "flowcall.tool_sources": {"toy": "toy_ext:KIND"},
            "flowcall.providers": {"parrot": "toy_parrot:INFO", "remote-parrot": "toy_remote:INFO"},
        },
        {"toy_ext": TOY_KIND, "toy_parrot": PARROT, "toy_remote": REMOTE},
    )
    return flowcall_cli(site, tmp_path)


def test_a_flow_runs_on_an_installed_packages_provider_once_the_package_is_granted(cli, tmp_path):
    flow = write_flow(tmp_path, FLOW)
    refused = cli("run", flow, "roll the die", "--json")
    assert refused.returncode != 0
    assert "use the model provider parrot of the installed package toy-ext 0.1" in refused.stderr
    assert "toy_parrot" in refused.stderr and "flowcall trust" in refused.stderr
    assert "repeats" not in refused.stdout  # nothing ran

    granted = cli("trust", flow, "--yes")
    assert granted.returncode == 0, granted.stderr
    assert "use the model provider parrot of the installed package toy-ext 0.1" in granted.stdout

    done = cli("run", flow, "roll the die", "--json")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert run["status"] == "succeeded", run["steps"]
    results = [s["result"] for s in run["steps"] if s["kind"] == "tool_call" and s["name"] == "roll"]
    assert results == [{"rolled": 6, "die": "dice"}]
    assert run["final_answer"].startswith("polly repeats:") and "rolled" in run["final_answer"]


def test_the_installed_provider_is_listed_with_the_built_in_ones(cli):
    listed = cli("providers")
    assert listed.returncode == 0, listed.stderr
    assert "parrot  Parrot (runs here, installed package)" in listed.stdout
    assert "dashscope  DashScope (Qwen) (hosted, built in)" in listed.stdout
    assert "DASHSCOPE_HTTP_BASE_URL" in listed.stdout and "models: polly" in listed.stdout


def test_a_changed_provider_module_needs_a_new_grant(cli, tmp_path):
    flow = write_flow(tmp_path, FLOW)
    assert cli("trust", flow, "--yes").returncode == 0
    module = tmp_path / "site" / "toy_parrot.py"
    module.write_text(module.read_text(encoding="utf-8") + "\nCHANGED = True\n", encoding="utf-8")
    again = cli("run", flow, "roll the die")
    assert again.returncode != 0 and "use the model provider parrot" in again.stderr
    assert "granted before, but its module file" in again.stderr and "toy_parrot.py changed" in again.stderr


def test_a_provider_nobody_installed_is_refused_with_what_to_do(cli, tmp_path):
    flow = write_flow(tmp_path, {"name": "ghost", "decision": {"provider": "ghost", "model": "x"}})
    done = cli("run", flow, "hello")
    assert done.returncode != 0
    assert "provider 'ghost' is not installed here; known: local, openai" in done.stderr, done.stderr
    assert "parrot" in done.stderr and "install the package that provides it" in done.stderr


def test_a_granted_hosted_provider_without_its_key_is_refused_before_a_run_is_recorded(
    cli, tmp_path, monkeypatch
):
    monkeypatch.delenv("REMOTE_PARROT_KEY", raising=False)
    flow = write_flow(
        tmp_path, {**FLOW, "name": "remote", "decision": {"provider": "remote-parrot", "model": "m"}}
    )
    assert cli("trust", flow, "--yes").returncode == 0
    done = cli("run", flow, "roll the die")
    assert done.returncode == 2 and "REMOTE_PARROT_KEY" in done.stderr, done.stderr
    listed = cli("runs", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []  # no failed run left behind


def test_a_base_url_a_shared_flow_gives_an_installed_provider_waits_for_its_own_grant(cli, tmp_path):
    decision = {**FLOW["decision"], "base_url": "https://models.example/v1"}
    flow = write_flow(tmp_path, {**FLOW, "name": "elsewhere", "decision": decision})
    refused = cli("run", flow, "roll the die")
    assert refused.returncode != 0
    assert "model server at https://models.example/v1 (decision model; provider parrot)" in refused.stderr
