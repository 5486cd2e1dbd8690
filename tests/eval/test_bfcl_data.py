"""Loading BFCL cases: counts, type conversion, tool names, and schemas every consumer accepts."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from flowcall.core.errors import ConfigError
from flowcall.eval.bfcl_data import (
    ANY_TYPES,
    CATEGORIES,
    DATA_DIR,
    build_name_map,
    function_to_parameters,
    gorilla_to_json_schema,
    load_cases,
    sanitize_name,
)

SIZES = {"simple": 400, "multiple": 200, "parallel": 200, "parallel_multiple": 200, "irrelevance": 240}
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _unique_schemas(bfcl_cases) -> dict[str, str]:
    """Each distinct converted parameter schema once (as JSON), with a case id that has it."""
    seen: dict[str, str] = {}
    for cases in bfcl_cases.values():
        for case in cases:
            for tool in case.tools:
                seen.setdefault(json.dumps(tool.parameters, sort_keys=True), case.id)
    return seen


def test_vendored_data_is_complete_and_attributed():
    assert (DATA_DIR / "NOTICE.md").read_text().count("Apache-2.0") >= 1
    assert (DATA_DIR / "BFCL_DATA_README.md").is_file()
    for category, file_name in CATEGORIES.items():
        assert (DATA_DIR / file_name).is_file()
        assert category == "irrelevance" or (DATA_DIR / "possible_answer" / file_name).is_file()


def test_every_category_loads_with_answers(bfcl_cases, bfcl_summary):
    for category, cases in bfcl_cases.items():
        assert len(cases) == SIZES[category], category
        assert len({case.id for case in cases}) == len(cases)
        for case in cases:
            assert case.category == category
            assert case.question and case.question == case.messages[-1].content
            assert len(case.tools) == len(case.functions) == len(case.name_map)
            assert bool(case.ground_truth) == (category != "irrelevance")
    tools = sum(len(case.tools) for cases in bfcl_cases.values() for case in cases)
    bfcl_summary.append(
        f"loaded {sum(map(len, bfcl_cases.values()))} cases, {tools} tools: "
        + ", ".join(f"{c} {len(v)}" for c, v in bfcl_cases.items())
    )


def test_limit_keeps_the_first_cases():
    cases = load_cases("parallel", limit=3)
    assert [case.id for case in cases] == ["parallel_0", "parallel_1", "parallel_2"]
    assert load_cases("simple", limit=0) == []


def test_gorilla_types_become_json_schema():
    doc = {
        "type": "dict",
        "description": "outer",
        "optional": True,  # a Gorilla extra, not JSON Schema
        "properties": {
            "ratio": {"type": "float", "default": 0.5},
            "point": {"type": "tuple", "items": {"type": "float"}},
            "data": {"type": "any", "description": "anything"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "rows": {
                "type": "array",
                "items": {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            },
            "loose": {"type": "dict"},
        },
        "required": ["ratio"],
    }
    assert gorilla_to_json_schema(doc) == {
        "type": "object",
        "description": "outer",
        "properties": {
            "ratio": {"type": "number", "default": 0.5},
            "point": {"type": "array", "items": {"type": "number"}},
            "data": {"type": ANY_TYPES, "description": "anything"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "rows": {
                "type": "array",
                "items": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            },
            "loose": {"type": "object"},
        },
        "required": ["ratio"],
    }
    with pytest.raises(ValueError, match="unknown parameter type 'complex'"):
        gorilla_to_json_schema({"type": "complex"})


def test_the_root_is_a_plain_object():
    # irrelevance_111 has `"default": "location"` on its root, simple_python_128 `"optional": []`
    function = {
        "name": "f",
        "parameters": {
            "type": "dict",
            "properties": {"b": {"type": "boolean"}},
            "required": [],
            "default": "location",
            "optional": [],
        },
    }
    assert function_to_parameters(function) == {"type": "object", "properties": {"b": {"type": "boolean"}}}


def test_names_are_sanitised_and_unambiguous(bfcl_cases):
    assert sanitize_name("math.factorial") == "math_factorial"
    assert sanitize_name("a b/ç") == "a_b__"
    assert len(sanitize_name("x." * 40)) == 64
    assert build_name_map(["math.factorial", "math_factorial"]) == {
        "math_factorial_2": "math.factorial",
        "math_factorial": "math_factorial",
    }
    assert build_name_map(["a.b", "a-b", "c"]) == {"a_b": "a.b", "a-b": "a-b", "c": "c"}
    for cases in bfcl_cases.values():
        for case in cases:
            assert all(TOOL_NAME.match(tool.name) for tool in case.tools), case.id
            assert sorted(case.name_map.values()) == sorted(f["name"] for f in case.functions)
            assert [case.original_name(t.name) for t in case.tools] == [f["name"] for f in case.functions]
    parallel_multiple_0 = bfcl_cases["parallel_multiple"][0]
    assert parallel_multiple_0.name_map["math_toolkit_sum_of_multiples"] == "math_toolkit.sum_of_multiples"


def test_every_tool_schema_is_valid_json_schema(bfcl_cases):
    failures = []
    for schema, case_id in _unique_schemas(bfcl_cases).items():
        try:
            Draft202012Validator.check_schema(json.loads(schema))
        except SchemaError as exc:
            failures.append(f"{case_id}: {exc.message}")
    assert not failures, "\n".join(failures[:20])


def test_every_tool_schema_converts_to_a_llama_cpp_grammar(bfcl_cases, bfcl_summary):
    llama_cpp = pytest.importorskip("llama_cpp")
    failures = []
    schemas = _unique_schemas(bfcl_cases)
    for schema, case_id in schemas.items():
        try:
            llama_cpp.LlamaGrammar.from_json_schema(schema, verbose=False)
        except Exception as exc:  # the converter raises AssertionError, ValueError...
            failures.append(f"{case_id}: {exc!r}")
    bfcl_summary.append(
        f"tool schemas: {len(schemas)} distinct, all JSON Schema 2020-12 valid; "
        f"llama.cpp grammar accepted {len(schemas) - len(failures)}/{len(schemas)}"
    )
    assert not failures, "\n".join(failures[:20])


def test_missing_folder_names_the_path_and_what_is_expected(tmp_path):
    with pytest.raises(ConfigError) as error:
        load_cases("simple", data_dir=tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(error.value) and "BFCL_v4_simple_python.json" in str(error.value)


def test_incomplete_or_broken_folders_are_config_errors(tmp_path: Path):
    shutil.copy(DATA_DIR / CATEGORIES["simple"], tmp_path)
    with pytest.raises(ConfigError, match="possible_answer"):
        load_cases("simple", data_dir=tmp_path)
    (tmp_path / "possible_answer").mkdir()
    answers = tmp_path / "possible_answer" / CATEGORIES["simple"]
    answers.write_text('{"id": "simple_python_0", "ground_truth": []}\n')
    with pytest.raises(ConfigError, match="no ground_truth"):
        load_cases("simple", data_dir=tmp_path)
    (tmp_path / CATEGORIES["irrelevance"]).write_text('{"id": "x", "question": [[\n')
    with pytest.raises(ConfigError, match=r"BFCL_v4_irrelevance.json:1 is not valid JSON"):
        load_cases("irrelevance", data_dir=tmp_path)
    (tmp_path / CATEGORIES["irrelevance"]).write_text('{"id": "x", "question": [], "function": []}\n')
    with pytest.raises(ConfigError, match="'x' is not a BFCL question"):
        load_cases("irrelevance", data_dir=tmp_path)
    with pytest.raises(ConfigError, match="choose one of simple, multiple"):
        load_cases("live_simple")


def test_another_folder_in_bfcl_layout_loads(tmp_path: Path):
    shutil.copy(DATA_DIR / CATEGORIES["multiple"], tmp_path)
    (tmp_path / "possible_answer").mkdir()
    shutil.copy(DATA_DIR / "possible_answer" / CATEGORIES["multiple"], tmp_path / "possible_answer")
    cases = load_cases("multiple", data_dir=tmp_path, limit=2)
    assert [case.id for case in cases] == ["multiple_0", "multiple_1"]
