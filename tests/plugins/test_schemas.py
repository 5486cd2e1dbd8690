"""What the model sees: names, versions, descriptions and JSON Schemas of the built-in tools."""

from __future__ import annotations

import json

from flowcall.tools.registry import ToolRegistry

EXPECTED = {
    "time/v1/get_current_time": (True, False),
    "weather/v1/get_weather": (True, False),
    "weather/v1/get_day_weather": (True, False),
    "task/v1/create_task": (False, False),
    "task/v1/add_task": (False, False),
    "task/v1/list_tasks": (True, False),
    "hr/v1/lookup_employee": (True, False),
    "data/v1/read_csv": (True, False),
    "data/v1/drop_missing": (False, False),
    "data/v1/describe_data": (True, False),
}
# seed 003's hidden context; the task tools take it for the run's database
WITH_CONTEXT = {
    "data/v1/read_csv",
    "data/v1/drop_missing",
    "data/v1/describe_data",
    "task/v1/create_task",
    "task/v1/add_task",
    "task/v1/list_tasks",
}


def test_registry_loads_every_plugin(registry: ToolRegistry) -> None:
    assert {t.version for t in registry.all()} == set(EXPECTED)
    for tool in registry.all():
        assert tool.source == "python"
        assert (tool.annotations.read_only, tool.annotations.destructive) == EXPECTED[tool.version]
        assert (tool.context_param is not None) == (tool.version in WITH_CONTEXT)
        assert registry.get(tool.name) is tool  # every bare name is unambiguous


def test_every_tool_is_described_and_every_parameter_too(registry: ToolRegistry) -> None:
    for tool in registry.all():
        assert tool.description and len(tool.description) < 200, tool.version
        assert "Args" not in tool.description
        schema = tool.parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.version}: {name} has no description"
            assert "title" not in prop
        text = json.dumps(schema)
        assert "RunContext" not in text and "context" not in schema["properties"]
        tool.spec()  # a valid neutral ToolSpec


def test_weather_schema_matches_seed_001(registry: ToolRegistry) -> None:
    schema = registry.get("get_weather").parameters
    assert schema["required"] == ["location"]
    location, extensions = schema["properties"]["location"], schema["properties"]["extensions"]
    assert location["type"] == "string" and "成都" in location["description"]
    assert extensions["enum"] == ["base", "all"] and extensions["default"] == "base"
    for word in ("base", "all", "现在", "实时", "明天", "后天", "未来几天"):
        assert word in extensions["description"]


def test_task_schema_matches_seed_000(registry: ToolRegistry) -> None:
    schema = registry.get("create_task").parameters
    assert schema["required"] == ["title"]
    props = schema["properties"]
    assert props["title"]["type"] == "string"
    assert props["priority"]["type"] == "integer" and props["priority"]["enum"] == [1, 2, 3]
    assert "1 = 高" in props["priority"]["description"]
    assert {"format": "date", "type": "string"} in props["due_date"]["anyOf"]
    assert "YYYY-MM-DD" in props["due_date"]["description"]
    assert registry.get("list_tasks").parameters["properties"] == {}


def test_clock_and_staff_schemas(registry: ToolRegistry) -> None:
    clock = registry.get("get_current_time").parameters
    assert "required" not in clock
    assert clock["properties"]["timezone"]["default"] == "Asia/Shanghai"
    staff = registry.get("lookup_employee").parameters
    assert staff["required"] == ["name"] and "张三" in staff["properties"]["name"]["description"]


def test_loading_twice_gives_the_same_tools(registry: ToolRegistry) -> None:
    from flowcall.core.config import plugin_dirs

    again = ToolRegistry.from_plugin_dirs(plugin_dirs()[:1])
    assert [t.version for t in again.all()] == [t.version for t in registry.all()]
