"""Hidden context (seed 003): the table stays in the run's context; the model sees summaries."""

from __future__ import annotations

import json

from flowcall.core.spec import DecisionConfig, Flow
from flowcall.core.steps import MemorySink, RunStatus, StepKind
from flowcall.engine.loop import Engine
from flowcall.providers.scripted import ScriptedProvider

TOOLS = ["data/v1/read_csv", "data/v1/drop_missing", "data/v1/describe_data"]


def run(registry, script):
    flow = Flow(name="clean", tools=TOOLS, max_rounds=4, decision=DecisionConfig(provider="scripted"))
    provider = ScriptedProvider(script)
    return Engine(registry, lambda cfg: provider, MemorySink()).run(flow, "clean orders_sample.csv"), provider


def test_the_context_is_not_in_any_schema(registry):
    for ref in TOOLS:
        assert "ctx" not in registry.get(ref).parameters.get("properties", {})


def test_read_clean_describe_share_one_dataframe_and_the_model_sees_summaries(registry):
    result, provider = run(
        registry,
        [
            [("read_csv", {"path": "orders_sample.csv"})],
            [("drop_missing", {})],
            [("describe_data", {})],
            "done",
        ],
    )
    assert result.status == RunStatus.SUCCEEDED, result.error
    loaded, cleaned, described = [s.result for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert loaded["rows"] == 12 and loaded["missing_per_column"] == {
        "city": 1,
        "quantity": 2,
        "unit_price": 1,
        "customer_rating": 2,
    }
    assert len(loaded["first_rows"]) == 3 and loaded["first_rows"][1]["customer_rating"] is None
    assert cleaned["rows"] == 6 and cleaned["rows_dropped"] == 6 and "missing_per_column" in cleaned
    assert described["rows"] == 6 and described["statistics"]["quantity"]["count"] == 6.0
    # what went back to the model is the summary, a few hundred characters, never the table
    tool_messages = [m for m in provider.requests[-1].messages if m.role == "tool"]
    assert all(len(m.content) < 1200 for m in tool_messages)
    assert json.loads(tool_messages[0].content)["artifact"] == "table"


def test_files_outside_the_data_folder_are_refused(registry):
    result, _ = run(
        registry, [[("read_csv", {"path": "../../etc/passwd"})], [("read_csv", {"path": "nope.csv"})], "x"]
    )
    errors = [s.error_message for s in result.steps if s.kind == StepKind.TOOL_CALL]
    assert "outside the data folder" in errors[0]
    assert "no file 'nope.csv'" in errors[1] and "orders_sample.csv" in errors[1]


def test_tools_on_no_table_and_unknown_columns_say_what_to_do(registry):
    result, _ = run(
        registry,
        [
            [("describe_data", {})],
            [("read_csv", {"path": "orders_sample.csv"})],
            [("drop_missing", {"columns": ["price"]})],
            "x",
        ],
    )
    errors = [s.error_message for s in result.steps if s.kind == StepKind.TOOL_CALL and s.error_code]
    assert "call read_csv first" in errors[0] and "no column ['price']" in errors[1]
