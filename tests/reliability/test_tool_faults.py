"""Tools that misbehave (flowcall/tools/execute.py): a run gets one outcome per call, whatever
the tool does, and a huge result is capped, with a note, in what the model reads and in what
the store keeps."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
import time

import pytest

from flowcall.core.errors import ErrorCode
from flowcall.core.messages import ToolCall
from flowcall.tools.base import RunContext, Tool
from flowcall.tools.execute import (
    MODEL_RESULT_CHARS,
    STORED_RESULT_CHARS,
    TRUNCATED,
    CallOutcome,
    cap_result,
    check_call,
    model_text,
    run_calls,
)
from flowcall.tools.python_plugins import build_tool

CTX = RunContext(run_id="test")


def _tool(func, name: str | None = None, timeout_s: float | None = None) -> Tool:
    name = name or func.__name__
    return build_tool(func, f"test/v1/{name}", name=name, timeout_s=timeout_s)


def _run(tool: Tool, arguments: dict | None = None, timeout_s: float = 5) -> CallOutcome:
    call = ToolCall(id="c1", name=tool.name, arguments=arguments or {})
    assert check_call(call, {tool.name: tool}) is None
    return run_calls([(call, tool)], CTX, timeout_s)[0]


def test_a_huge_result_is_cut_with_a_note_for_the_store_and_for_the_model() -> None:
    def rows() -> dict:
        """Many rows."""
        return {"rows": ["order 1234567, 3 items, 199.00 CNY"] * 200_000}

    outcome = _run(_tool(rows))
    whole = json.dumps(rows(), ensure_ascii=False)
    kept = outcome.result
    assert kept[TRUNCATED]["original_chars"] == len(whole) and kept["head"] == whole[:STORED_RESULT_CHARS]
    assert f"the tool returned {len(whole):,} characters of JSON" in kept[TRUNCATED]["note"]
    assert "cut" in kept[TRUNCATED]["note"]
    assert len(json.dumps(kept, ensure_ascii=False)) < STORED_RESULT_CHARS * 1.1
    seen = outcome.content_for_model()
    assert seen.startswith(whole[:MODEL_RESULT_CHARS]) and len(seen) < MODEL_RESULT_CHARS + 200
    assert (
        f"the tool returned {len(whole):,} characters; only the first {MODEL_RESULT_CHARS:,} are shown"
        in seen
    )


def test_a_stored_cut_result_reads_to_the_model_as_the_whole_one_did() -> None:
    """A re-run from a step feeds the stored (cut) result back: the model must read the same."""
    text = "天气" * 700_000
    assert model_text(cap_result(text)) == model_text(text)
    assert cap_result(cap_result(text)) == cap_result(text)
    small = {"weather": "晴"}
    assert cap_result(small) is small and model_text(small) == json.dumps(small, ensure_ascii=False)


def test_a_hung_tool_times_out_and_does_not_keep_the_process_alive(tmp_path) -> None:
    """The abandoned thread is a daemon: `flowcall run` ends after the run, not after the tool."""
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent("""
        import time
        from flowcall.core.messages import ToolCall
        from flowcall.tools.base import RunContext
        from flowcall.tools.execute import run_calls
        from flowcall.tools.python_plugins import build_tool

        def sleepy() -> str:
            \"\"\"Sleeps.\"\"\"
            time.sleep(3600)
            return "late"

        tool = build_tool(sleepy, "test/v1/sleepy")
        call = ToolCall(id="c", name="sleepy", arguments={})
        [outcome] = run_calls([(call, tool)], RunContext(run_id="r"), 0.5)
        print(outcome.error_code, outcome.error_message)
    """)
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "TOOL_TIMEOUT sleepy did not answer within 0.5 s", done.stderr
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("escape", [SystemExit(3), KeyboardInterrupt()])
def test_a_tool_that_raises_sys_exit_is_a_tool_error_not_the_end_of_the_process(escape) -> None:
    def quits() -> str:
        """Quits."""
        raise escape

    outcome = _run(_tool(quits))
    assert outcome.error_code == ErrorCode.TOOL_ERROR and type(escape).__name__ in outcome.error_message


def test_results_that_are_not_json_are_made_strict_json() -> None:
    cycle: list = []
    cycle.append(cycle)
    for value in (
        float("nan"),
        {"t": float("-inf")},
        {(1, 2): "tuple key", 3: "int key"},
        {1, 2},
        b"\x00bytes",
        cycle,
        object(),
    ):

        def odd() -> object:
            """Odd."""
            return value

        outcome = _run(_tool(odd))
        assert outcome.error_code is None, outcome.error_message
        json.dumps(outcome.result, allow_nan=False)  # strict JSON: PostgreSQL's json takes it
    assert _run(_tool(lambda: float("nan"), "nan")).result == "NaN"


def test_a_huge_error_message_is_cut() -> None:
    def fails() -> str:
        """Fails loudly."""
        raise ValueError("x" * 1_000_000)

    outcome = _run(_tool(fails))
    assert outcome.error_code == ErrorCode.TOOL_ERROR and len(outcome.error_message) < 5_000
    assert "cut by FlowCall: the message has" in outcome.error_message


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "strnig"},
        {"type": "object", "properties": []},
        {"type": "object", "required": 5},
        {"$ref": "#/nowhere"},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": 3}}}},
    ],
)
def test_a_tool_whose_schema_is_broken_gets_a_tool_error_not_a_crash(schema) -> None:
    tool = Tool(
        name="broken",
        version="srv/mcp/broken",
        description="",
        parameters=schema,
        func=lambda **kw: "ran",
        source="mcp",
    )
    call = ToolCall(id="c1", name="broken", arguments={"a": [1]})
    problem = check_call(call, {"broken": tool})
    if problem is not None:  # some broken schemas still validate this call
        assert problem.error_code in (ErrorCode.TOOL_ERROR, ErrorCode.INVALID_ARGUMENT)
        assert problem.error_message


def test_errors_at_paths_that_mix_names_and_indexes_are_sorted_without_a_crash() -> None:
    def tags(items: list[int], name: str) -> str:
        """Tags."""
        return "ok"

    tool = _tool(tags)
    problem = check_call(
        ToolCall(id="c", name="tags", arguments={"items": ["a", "b"], "name": 5}), {"tags": tool}
    )
    assert problem.error_code == ErrorCode.INVALID_ARGUMENT and "items/0" in problem.error_message


def test_nan_in_a_result_is_still_a_number_where_it_is_finite() -> None:
    def mixed() -> dict:
        """Mixed."""
        return {"a": 1.5, "b": math.inf}

    assert _run(_tool(mixed)).result == {"a": 1.5, "b": "Infinity"}
