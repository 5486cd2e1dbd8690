"""hypothesis-generated inputs (benchmarks/reliability.py's fuzz part, fewer examples): each bad
input is refused with a ConfigError/FlowCallError, never another exception, and a refused import
leaves every table's row count as it was."""

from __future__ import annotations

import pytest

import tests.support.reliability as reliability

# The store tests' databases: db_url is an empty SQLite file, then a PostgreSQL database.
from tests.store.conftest import db_url, pg_database  # noqa: F401

EXAMPLES = 40


def _holds(figure: reliability.FuzzFigure) -> None:
    assert figure.examples > 0
    assert figure.crashes == 0 and figure.partial_writes == 0, "\n".join([figure.line(), *figure.failures])


def test_flow_import(db_url: str) -> None:  # noqa: F811
    _holds(reliability.fuzz_flow_import(db_url, EXAMPLES))


def test_run_import(db_url: str) -> None:  # noqa: F811
    _holds(reliability.fuzz_run_import(db_url, EXAMPLES))


def test_tool_calls_through_the_engine_into_the_store(db_url: str) -> None:  # noqa: F811
    _holds(reliability.fuzz_tool_calls(db_url, EXAMPLES))


def test_openapi_documents() -> None:
    _holds(reliability.fuzz_openapi(EXAMPLES * 2))


def test_mcp_tool_lists() -> None:
    _holds(reliability.fuzz_mcp_schemas(EXAMPLES * 2))


@pytest.mark.parametrize("name", ["p" * 300, "a\x00b", ""])
def test_a_call_to_an_unknown_tool_with_an_awkward_name_is_recorded(db_url: str, name: str) -> None:  # noqa: F811
    """A model may write any name; the UNKNOWN_TOOL step must be stored on both databases."""
    from flowcall.core.spec import DecisionConfig, Flow
    from flowcall.engine.loop import Engine
    from flowcall.providers.scripted import ScriptedProvider
    from flowcall.store import Store
    from flowcall.tools.registry import ToolRegistry

    store = Store.open(db_url)
    try:
        flow = Flow(
            name="awkward",
            tools=["fuzz/v1/probe"],
            max_rounds=1,
            retry_budget=0,
            decision=DecisionConfig(provider="scripted", calling_way="native"),
        )
        registry = ToolRegistry([reliability._probe_tool()])
        run = Engine(registry, lambda cfg: ScriptedProvider([[(name, {"city": "x"})], "done"]), store).run(
            flow, "q"
        )
        stored = store.get_run(run.id)
        assert len(stored.steps) == len(run.steps) and stored.status == run.status != "running"
        assert any(s.error_code == "UNKNOWN_TOOL" for s in stored.steps), [s.error_code for s in stored.steps]
    finally:
        store.close()


# Inputs the fuzzer found that crashed (each a defect until fixed), kept as plain cases.

OPENAPI_CRASHERS = [
    {"paths": [None, True]},  # paths not a mapping
    {"paths": {"/a": True, "/b": None, "/c": [1]}},  # path items not mappings
    {"paths": {"/a": {"get": {"operationId": ["x"]}}}},  # operationId not a string
    {"paths": {"/a": {"get": {"parameters": [{"in": "query", "schema": {"type": "string"}}]}}}},  # no name
    {"paths": {"/a": {"get": {"parameters": [{"name": None, "in": "path"}]}}}},  # name null
    {
        "paths": {"/a": {"get": {"parameters": [{"name": "q", "in": "query", "schema": [{"": 1}]}]}}}
    },  # schema a list
    {"paths": {"/a": {"get": {"parameters": [{"name": {"x": 1}, "in": "query"}]}}}},  # name a mapping
    {"paths": {"/a": {"post": {"requestBody": [], "parameters": 5}}}},
    {"paths": {"/a": {"parameters": [[]], "get": {}}}},
    {"servers": [{"url": {"type": 1}}], "paths": {"/a": {"get": {}}}},  # servers[0].url not a string
    {"paths": {"/a": {"get": {"summary": {"not": "text"}}}}},
]


@pytest.mark.parametrize("document", OPENAPI_CRASHERS)
def test_an_openapi_document_the_fuzzer_found_gets_tools_or_a_clear_error(tmp_path, document) -> None:
    import json

    from flowcall.core.errors import ConfigError
    from flowcall.core.spec import HTTPToolSource
    from flowcall.tools.openapi_tools import tools_from_openapi

    path = tmp_path / "api.json"
    path.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "t", "version": "1"},
                "servers": [{"url": "http://127.0.0.1:9"}],
                **document,
            }
        )
    )
    try:
        tools = tools_from_openapi(HTTPToolSource(name="api", openapi=str(path)))
    except ConfigError as exc:
        assert str(exc)
        return
    for tool in tools:
        reliability._tool_is_usable(tool, {})
        assert isinstance(tool.description, str)


@pytest.mark.parametrize(
    "schema",
    [{"properties": 5}, {"type": "object", "properties": ["a"]}, {"$ref": {"x": 1}, "properties": None}],
)
def test_an_mcp_tool_with_a_broken_input_schema_is_usable_or_refused(schema) -> None:
    import mcp_types

    from flowcall.core.spec import MCPServerConfig
    from flowcall.tools.mcp_client import tools_of

    class Listing:
        server = MCPServerConfig(name="srv", command=["true"])

        def list_tools(self) -> list:
            return [mcp_types.Tool(name="odd", description="<IMPORTANT>", inputSchema=schema)]

    for tool in tools_of(Listing()):  # type: ignore[arg-type]
        reliability._tool_is_usable(tool, {"a": 1})


def _import_case(export: dict, change: str) -> dict:
    import copy

    data = copy.deepcopy(export)
    run = data["run"]
    if change == "long id":
        run["id"] = "y" * 40
        for step in run["steps"]:
            step["run_id"] = run["id"]
    elif change == "step of another run":
        run["steps"][-1]["run_id"] = "another-run"
    elif change == "seq twice":
        run["steps"][-1]["seq"] = run["steps"][0]["seq"]
    elif change == "seq beyond integer":
        run["steps"][-1]["seq"] = 2**40
    elif change == "tokens beyond integer":
        run["steps"][0]["tokens_in"] = 10**12
    elif change == "new flow, seq twice":  # the flow would be adopted before the steps fail
        data["flow"]["name"] = "never-seen-before"
        run["steps"][-1]["seq"] = run["steps"][0]["seq"]
    return data


@pytest.mark.parametrize(
    "change",
    [
        "long id",
        "step of another run",
        "seq twice",
        "seq beyond integer",
        "tokens beyond integer",
        "new flow, seq twice",
    ],
)
def test_a_run_file_that_cannot_be_stored_is_refused_and_changes_nothing(db_url: str, change: str) -> None:  # noqa: F811
    from flowcall.core.errors import ConfigError
    from flowcall.service.front import FlowCall

    service = FlowCall.open(db_url)
    try:
        data = _import_case(reliability.sample_export(service), change)
        before = reliability.table_counts(service.store)
        with pytest.raises(ConfigError):
            service.import_run(data, source="run.json")
        assert reliability.table_counts(service.store) == before
    finally:
        service.store.close()


def test_mcp_tools_whose_names_read_alike_get_distinct_names() -> None:
    """ "工具" and "数据" both become "__" (only ASCII letters, digits, _ and - are kept), "a.b" and
    "a_b" both "a_b": the run's registry then refused the whole server ("two tools claim ...")."""
    import mcp_types

    from flowcall.core.spec import MCPServerConfig
    from flowcall.tools.mcp_client import tools_of
    from flowcall.tools.registry import ToolRegistry

    class Listing:
        server = MCPServerConfig(name="srv", command=["true"])

        def list_tools(self) -> list:
            return [
                mcp_types.Tool(name=name, inputSchema={"type": "object"})
                for name in ("工具", "数据", "a.b", "a_b", "", "add")
            ]

    tools = tools_of(Listing())  # type: ignore[arg-type]
    names = [tool.name for tool in tools]
    assert len(set(names)) == 6 and all(name.strip("_") for name in names) and "add" in names, names
    ToolRegistry().extended(tools)
