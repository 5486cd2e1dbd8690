"""The tool source kinds: the built-in ones, those installed packages add (entry point group
`flowcall.tool_sources`), and a run's sources loaded through them (run_registry)."""

from __future__ import annotations

import sys

import pytest

from flowcall.core.errors import ConfigError, ErrorCode, FlowCallError
from flowcall.core.spec import Flow
from flowcall.store import open_store
from flowcall.tools import sources
from flowcall.tools.registry import ToolRegistry
from flowcall.tools.trial import source_tools, try_source_tool
from tests.extension.toy import TOY_KIND, write_toy_kind, write_toy_package

# a kind that keeps what it was handed, so a test sees which sources were loaded and with what
RECORDING_KIND = (
    TOY_KIND.replace('"toy"', '"rec"')
    .replace("/toy/", "/rec/")
    .replace(
        "    def load(self, config, context):\n",
        "    def load(self, config, context):\n"
        "        LOADED.append((config.name, dict(context.services)))\n",
    )
    + "\nLOADED = []\n"
)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(write_toy_kind(tmp_path / "site")))
    yield
    sys.modules.pop("toy_ext", None)


@pytest.fixture
def recording(tmp_path, monkeypatch):
    site = write_toy_package(
        tmp_path / "rec",
        {"flowcall.tool_sources": {"rec": "rec_ext:KIND"}},
        {"rec_ext": RECORDING_KIND},
        name="rec_ext",
    )
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("rec_ext", None)


def dice(*names: str, attached: tuple[str, ...] = ()) -> Flow:
    return Flow(
        name="dice",
        sources={"toy": [{"name": n, "faces": 6} for n in names]},
        tools=[f"{n}/toy/roll" for n in attached],
    )


def test_the_built_in_kinds_come_first_and_an_installed_packages_kind_joins_them(toy):
    kinds = sources.kinds()
    assert list(kinds)[:2] == ["mcp", "http"] and "toy" in kinds
    assert sources.installed_kinds()["toy"].package == "toy-ext"
    assert "mcp" not in sources.installed_kinds()


def test_without_the_package_its_kind_is_unknown_and_said_so():
    with pytest.raises(ConfigError) as refused:
        sources.validate_sources(dice("red", attached=("red",)))
    assert (
        "flow 'dice' uses the tool source kind 'toy', which no installed package provides here; "
        "install it or remove the source" in str(refused.value)
    )


def test_a_source_is_checked_by_its_kinds_config_model(toy):
    bad = Flow(name="dice", sources={"toy": [{"name": "red", "faces": 1}]})
    with pytest.raises(ConfigError, match=r"Toy dice 'red' \(toy\) is not valid: faces: .*greater than"):
        sources.validate_sources(bad)


def test_only_attached_sources_load_and_every_kind_gets_the_services(recording):
    flow = Flow(
        name="rec",
        sources={"rec": [{"name": "used"}, {"name": "listed"}]},
        tools=["used/rec/roll"],
    )
    with sources.run_registry(ToolRegistry(), flow, services={"run_flow": "a runner"}) as registry:
        assert registry.get("used/rec/roll").invoke({}, None) == {"rolled": 6, "die": "used"}
    assert sys.modules["rec_ext"].LOADED == [("used", {"run_flow": "a runner"})]


def test_an_installed_kind_loads_in_a_run_only_once_its_package_is_granted(toy, tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'grants.db'}")
    flow = dice("red", "blue", attached=("red",))
    [item] = sources.trust_items(flow)  # the package, once, though two sources use the kind
    assert item.kind == "package_source" and item.subject["source_kind"] == "toy"
    assert item.subject["package"] == "toy-ext" and item.subject["sha256"]
    with pytest.raises(FlowCallError) as refused:
        with sources.run_registry(ToolRegistry(), flow, store):
            pass
    assert refused.value.code == ErrorCode.TOOL_ERROR
    assert "Toy dice 'red' was not loaded" in str(refused.value) and "flowcall trust" in str(refused.value)
    store.grant([item], by="test")
    assert sources.ungranted(flow, store) == []
    with sources.run_registry(ToolRegistry(), flow, store) as registry:
        assert [t.version for t in registry.all()] == ["red/toy/roll"]


def test_a_kinds_own_failure_fails_the_run_naming_the_source(tmp_path, monkeypatch):
    broken = TOY_KIND.replace(
        "        def roll() -> dict:",
        "        raise RuntimeError('no dice today')\n\n        def roll() -> dict:",
    )
    monkeypatch.syspath_prepend(
        str(
            write_toy_package(
                tmp_path / "b", {"flowcall.tool_sources": {"toy": "toy_ext:KIND"}}, {"toy_ext": broken}
            )
        )
    )
    try:
        with pytest.raises(
            FlowCallError, match="the Toy dice 'red' could not be loaded: RuntimeError\\('no dice today'\\)"
        ):
            with sources.run_registry(ToolRegistry(), dice("red", attached=("red",))):
                pass
    finally:
        sys.modules.pop("toy_ext", None)


def test_an_entry_point_that_is_no_kind_is_named(tmp_path, monkeypatch):
    site = write_toy_package(
        tmp_path / "n",
        {"flowcall.tool_sources": {"junk": "junk_ext:THING"}},
        {"junk_ext": "THING = 3\n"},
        name="junk_ext",
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        with pytest.raises(
            ConfigError,
            match=r"'junk' \(junk_ext:THING\) of the package junk-ext does not name a tool source",
        ):
            sources.kinds()
    finally:
        sys.modules.pop("junk_ext", None)


def test_a_source_of_any_kind_is_listed_and_tried_the_same_way(toy):
    red = sources.kind_of("toy").config_model.model_validate({"name": "red", "faces": 20})
    assert [t.version for t in source_tools("toy", red)] == ["red/toy/roll"]
    tried = try_source_tool("toy", red, "roll", {})
    assert tried.ok and tried.result == {"rolled": 20, "die": "red"}


def test_a_source_joins_a_flow_where_its_kind_lists_them(toy):
    red = sources.kind_of("toy").config_model.model_validate({"name": "red", "faces": 20})
    flow = sources.with_source(dice("red"), "toy", red, ["red/toy/roll"])
    assert flow.sources == {"toy": [{"name": "red", "faces": 20}]} and flow.tools == ["red/toy/roll"]
    probe = sources.probe_flow(
        "mcp",
        Flow.model_validate({"name": "x", "mcp_servers": [{"name": "t", "url": "http://h/mcp"}]}).mcp_servers[
            0
        ],
    )
    assert [s.name for s in probe.mcp_servers] == ["t"] and probe.tools == ["t/mcp/*"]
