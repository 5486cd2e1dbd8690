"""Tool schemas as forms, on the real plugins' schemas and a pydantic-model parameter."""

from __future__ import annotations

import pytest

from flowcall.core import config
from flowcall.studio.schema_form import FormField, collect, form_fields
from flowcall.tools.python_plugins import build_tool
from flowcall.tools.registry import ToolRegistry
from tests.plugins.test_pydantic_params import place_order


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    return ToolRegistry.from_plugin_dirs(config.plugin_dirs())


def _form(tool) -> tuple[dict[str, FormField], dict]:
    return {f.name: f for f in form_fields(tool.parameters)}, tool.parameters


def test_weather_fields_text_and_enum_in_schema_order(registry):
    fields = form_fields(registry.get("get_weather").parameters)
    assert [(f.name, f.kind, f.required) for f in fields] == [
        ("location", "text", True),
        ("extensions", "enum", False),
    ]
    assert fields[1].options == ["base", "all"] and fields[1].default == "base"
    assert "城市" in fields[0].description and fields[0].label() == "location *"


def test_integer_enum_and_optional_date(registry):
    fields, _ = _form(registry.get("create_task"))
    assert fields["priority"].kind == "enum" and fields["priority"].options == [1, 2, 3]
    assert fields["priority"].default == 2
    assert (
        fields["due_date"].kind == "text" and not fields["due_date"].required
    )  # `date | None` is edited as text


def test_optional_array_is_json(registry):
    (columns,) = form_fields(registry.get("drop_missing").parameters)
    assert columns.kind == "json" and not columns.required and columns.initial_text() == ""


def test_collect_leaves_out_empty_optional_fields_and_keeps_enum_values(registry):
    tool = registry.get("create_task")
    fields = form_fields(tool.parameters)
    arguments, errors = collect(fields, {"title": "写周报", "priority": 1, "due_date": "  "}, tool.parameters)
    assert errors == [] and arguments == {"title": "写周报", "priority": 1}


def test_collect_names_a_missing_required_field_once(registry):
    tool = registry.get("get_weather")
    arguments, errors = collect(
        form_fields(tool.parameters), {"location": "", "extensions": "all"}, tool.parameters
    )
    assert arguments == {"extensions": "all"}
    assert errors == ["location is required: fill it in"]


def test_collect_reports_schema_errors_with_the_field_and_the_fix(registry):
    tool = registry.get("create_task")
    _, errors = collect(form_fields(tool.parameters), {"title": "x", "priority": 7}, tool.parameters)
    assert len(errors) == 1 and errors[0].startswith("priority: 7 is not one of [1, 2, 3]")
    assert "pick one of the allowed values" in errors[0]


def test_json_fields_are_parsed_and_bad_json_is_named(registry):
    tool = registry.get("drop_missing")
    fields = form_fields(tool.parameters)
    assert collect(fields, {"columns": '["price", "qty"]'}, tool.parameters) == (
        {"columns": ["price", "qty"]},
        [],
    )
    arguments, errors = collect(fields, {"columns": "[price]"}, tool.parameters)
    assert arguments == {} and len(errors) == 1
    assert (
        errors[0].startswith("columns: not valid JSON (line 1, column 2") and "write it as JSON" in errors[0]
    )
    _, errors = collect(fields, {"columns": '{"a": 1}'}, tool.parameters)
    assert errors and errors[0].startswith("columns: {'a': 1} is not valid")


def test_pydantic_model_parameter_is_one_json_field_checked_deep_inside():
    tool = build_tool(place_order, "shop/v1/place_order")
    fields = form_fields(tool.parameters)
    assert [(f.name, f.kind, f.required) for f in fields] == [
        ("order", "json", True),
        ("note", "text", False),
    ]
    assert fields[0].description == "what to send where"  # kept next to the $ref
    good = '{"item": "伞", "quantity": 2, "ship_to": {"city": "成都"}}'
    arguments, errors = collect(fields, {"order": good, "note": ""}, tool.parameters)
    assert errors == [] and arguments == {"order": {"item": "伞", "quantity": 2, "ship_to": {"city": "成都"}}}
    _, errors = collect(fields, {"order": '{"item": "伞", "quantity": 0, "ship_to": {}}'}, tool.parameters)
    assert errors == [
        "order.quantity: 0 is less than the minimum of 1; enter a larger value",
        "order.ship_to: 'city' is a required property; add it",
    ]
    _, errors = collect(fields, {"order": ""}, tool.parameters)
    assert errors == ["order is required: fill it in"]


SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number"},
        "loud": {"type": "boolean", "default": True},
        "mode": {"$ref": "#/$defs/Mode"},
        "fixed": {"const": "x"},
        "tags": {"type": ["array", "null"], "items": {"type": "string"}},
        "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["count"],
    "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}},
}


def test_kinds_limits_refs_and_unions():
    fields = {f.name: f for f in form_fields(SCHEMA)}
    assert {n: f.kind for n, f in fields.items()} == {
        "count": "integer",
        "ratio": "number",
        "loud": "boolean",
        "mode": "enum",
        "fixed": "enum",
        "tags": "json",
        "either": "json",
    }
    assert (fields["count"].minimum, fields["count"].maximum) == (1, 10)
    assert fields["mode"].options == ["a", "b"] and fields["fixed"].options == ["x"]
    assert fields["loud"].default is True


def test_numbers_are_coerced_and_checked():
    fields = form_fields(SCHEMA)
    arguments, errors = collect(fields, {"count": 3.0, "ratio": "0.5", "loud": False, "either": "7"}, SCHEMA)
    assert errors == [] and arguments == {"count": 3, "ratio": 0.5, "loud": False, "either": 7}
    assert isinstance(arguments["count"], int)
    _, errors = collect(fields, {"count": 2.5, "ratio": "abc"}, SCHEMA)
    assert errors == [
        "count: 2.5 is not a whole number; enter one without decimals",
        "ratio: 'abc' is not a number; enter a number such as 1.5",
    ]
    _, errors = collect(fields, {"count": 11}, SCHEMA)
    assert errors == ["count: 11 is greater than the maximum of 10; enter a smaller value"]
