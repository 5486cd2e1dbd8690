"""Reading tool calls out of model text, in the shapes small models really write."""

from flowcall.core.tool_calls import parse_tool_calls


def test_qwen_tool_call_tags_several():
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "成都"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "北京"}}\n</tool_call>'
    )
    parsed = parse_tool_calls(text)
    assert parsed.found_in == "tag"
    assert [(n, a) for n, a, _ in parsed.calls] == [
        ("get_weather", {"location": "成都"}),
        ("get_weather", {"location": "北京"}),
    ]


def test_unclosed_tag_and_trailing_comma_are_repaired():
    parsed = parse_tool_calls('<tool_call>{"name": "f", "arguments": {"x": 1,}}')
    assert parsed.calls[0][:2] == ("f", {"x": 1})


def test_code_block_json_as_the_embedded_model_writes_it():
    text = (
        '```json\n{\n  "name": "get_weather",\n  "arguments": {\n    "location": "成都",\n'
        '    "extensions": "all"\n  }\n}\n```'
    )
    parsed = parse_tool_calls(text)
    assert parsed.found_in == "fence"
    assert parsed.calls[0][:2] == ("get_weather", {"location": "成都", "extensions": "all"})


def test_bare_json_list_and_openai_shape_and_string_arguments():
    text = (
        'Sure: [{"type": "function", "function": {"name": "a", "arguments": "{\\"k\\": 2}"}}, '
        '{"name": "b", "parameters": {}}]'
    )
    parsed = parse_tool_calls(text)
    assert [(n, a) for n, a, _ in parsed.calls] == [("a", {"k": 2}), ("b", {})]


def test_plain_answer_is_not_a_call():
    assert parse_tool_calls("明天成都有小雨,记得带伞。").calls == []
    assert parse_tool_calls('The JSON is {"city": "成都"}').calls == []


def test_unreadable_tag_is_reported():
    parsed = parse_tool_calls("<tool_call>\nget_weather please\n</tool_call>")
    assert parsed.calls == [] and "could not read" in parsed.errors[0]


def test_unparsable_string_arguments_keep_raw_text():
    parsed = parse_tool_calls('<tool_call>{"name": "f", "arguments": "not json"}</tool_call>')
    name, args, raw = parsed.calls[0]
    assert name == "f" and args is None and raw == "not json"


def test_call_cut_off_before_its_last_brace():
    text = '{"name": "create_task", "arguments": {"title": "修复登录bug", "priority": 1}'
    assert parse_tool_calls(text).calls[0][:2] == ("create_task", {"title": "修复登录bug", "priority": 1})
