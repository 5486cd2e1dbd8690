"""Validation errors as plain sentences (flowcall/core/plain_errors.py): real pydantic errors from
Flow and parse_flow, one per kind the flow's schema raises, each naming the field in words and
saying what to do; and no flow JSON, however random, gets pydantic's jargon back."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from flowcall.core.errors import ConfigError
from flowcall.core.plain_errors import plain_errors
from flowcall.core.spec import Flow, MCPServerConfig, parse_flow

JARGON = (
    "should match pattern",
    "Input should be",
    "type=",
    "https://errors.pydantic.dev",
    "Value error,",
    "Field required",
    "Extra inputs are not permitted",
    "should be",
    "validation error for",
)


def sentences(data: dict) -> list[str]:
    """plain_errors of validating `data` as a Flow, as a person reads them in the studio."""
    with pytest.raises(ValidationError) as caught:
        Flow.model_validate(data)
    return plain_errors(caught.value, data, model=Flow)


def refused(data: dict | str, source: str = "flow.json") -> str:
    with pytest.raises(ConfigError) as caught:
        parse_flow(data, source=source)
    return str(caught.value)


@pytest.mark.parametrize(
    "data, sentence",
    [
        # string_pattern_mismatch: the rule in words, and the characters that break it
        (
            {"name": "my/flow"},
            "Flow name: use only letters, digits, spaces, '-', '_' and '.'; 'my/flow' has '/'.",
        ),
        (
            {"name": "x", "mcp_servers": [{"name": "Git", "url": "http://127.0.0.1/mcp"}]},
            "MCP server 'Git' › name: use 1 to 40 lowercase letters, digits, '-' and '_', starting with a "
            "letter or digit; 'Git' has 'G'.",
        ),
        (
            {"name": "x", "mcp_servers": [{"name": "-git", "url": "http://127.0.0.1/mcp"}]},
            "MCP server '-git' › name: use 1 to 40 lowercase letters, digits, '-' and '_', starting with a "
            "letter or digit; '-git' starts with '-'.",
        ),
        (
            {"name": "x", "http_tools": [{"name": "shop", "openapi": "shop.json", "base_url": "ftp://shop"}]},
            "HTTP tools 'shop' › base URL: must start with http:// or https:// (it is 'ftp://shop').",
        ),
        # greater_than_equal / less_than_equal / greater_than: both ends of the range, and the value
        ({"name": "x", "max_rounds": 0}, "Max rounds: must be between 1 and 50 (it is 0)."),
        ({"name": "x", "max_rounds": 51}, "Max rounds: must be between 1 and 50 (it is 51)."),
        (
            {"name": "x", "decision": {"temperature": 3}},
            "Decision model › temperature: must be between 0 and 2 (it is 3).",
        ),
        (
            {"name": "x", "tool_timeout_s": 0},
            "Tool timeout in seconds: must be more than 0 and at most 600 (it is 0).",
        ),
        (
            {"name": "x", "polish": {"max_tokens": 0}},
            "Polish model › max tokens: must be between 1 and 32768 (it is 0).",
        ),
        # literal_error: the choices
        (
            {"name": "x", "decision": {"provider": "GPT 4"}},
            "Decision model › provider: name a provider: local, openai, dashscope, openai-compatible or "
            "an installed one (`flowcall providers` lists them), written in 1 to 40 lowercase letters, "
            "digits, '-' and '_'; 'GPT 4' has 'G', 'P', 'T' and ' '.",
        ),
        (
            {"name": "x", "decision": {"calling_way": "magic"}},
            "Decision model › calling way: pick one of auto, native, prompt, schema, router (it is 'magic').",
        ),
        (
            {"name": "x", "format": "flowcall.flow/v2"},
            "Format: must be flowcall.flow/v1 (it is 'flowcall.flow/v2').",
        ),
        # missing
        ({}, "Flow name: is required and missing; add it."),
        (
            {"name": "x", "tools": ["a"], "router_rules": [{"pattern": "x"}]},
            "Router rule 1 › tool: is required and missing; add it.",
        ),
        # string_too_short / string_too_long / too_short
        ({"name": ""}, "Flow name: must not be empty."),
        ({"name": "a" * 300}, "Flow name: can have at most 120 characters (it has 300)."),
        (
            {"name": "x", "http_tools": [{"name": "shop", "openapi": ""}]},
            "HTTP tools 'shop' › OpenAPI document: must not be empty.",
        ),
        (
            {"name": "x", "mcp_servers": [{"name": "git", "command": []}]},
            "MCP server 'git' › command: must not be empty; give the "
            'program and its arguments, e.g. ["uvx", "mcp-server-git"].',
        ),
        # *_type
        ({"name": 5}, "Flow name: must be text, in quotes (it is 5)."),
        ({"name": "x", "max_rounds": "many"}, "Max rounds: must be a whole number (it is 'many')."),
        ({"name": "x", "max_rounds": 1.5}, "Max rounds: must be a whole number (it is 1.5)."),
        (
            {"name": "x", "decision": {"temperature": "hot"}},
            "Decision model › temperature: must be a number (it is 'hot').",
        ),
        (
            {"name": "x", "parallel_tool_calls": "maybe"},
            "Parallel tool calls: must be true or false (it is 'maybe').",
        ),
        ({"name": "x", "tools": "get_weather"}, "Tools: must be a list, in [ ] (it is 'get_weather')."),
        ({"name": "x", "tools": ["a", 7]}, "Tools › item 2: must be text, in quotes (it is 7)."),
        (
            {"name": "x", "decision": "qwen"},
            "Decision model: must be an object with its settings, in { } (it is 'qwen').",
        ),
        (
            {"name": "x", "polish": {"output_schema": []}},
            "Polish model › output schema: must be an object, in { } (it is []).",
        ),
        (
            {"name": "x", "mcp_servers": [{"name": "git", "command": ["srv"], "env": {"TOKEN_FILE": 1}}]},
            "MCP server 'git' › environment › variable 'TOKEN_FILE': must be text, in quotes (it is 1).",
        ),
        # value_error: the validator's own sentence, under the field it checks
        (
            {"name": "x", "tools": ["a"], "router_rules": [{"pattern": "(", "tool": "a"}]},
            "Router rule 1 › pattern: pattern '(' is not a valid regular expression: missing ), "
            "unterminated subpattern at position 0.",
        ),
        (
            {"name": "x", "polish": {"output_schema": {"type": "strin"}}},
            "Polish model › output schema: output_schema is not a valid JSON Schema: 'strin' is not valid "
            "under any of the given schemas.",
        ),
        # ... and a model's own check, which names what it checks: said once, not twice
        (
            {"name": "x", "mcp_servers": [{"name": "git"}]},
            "MCP server 'git' needs exactly one of command (stdio) or url (streamable HTTP).",
        ),
        (
            {"name": "x", "tool_choice": "zz"},
            "tool_choice names 'zz', which is not among the attached "
            "tools []; attach it or use auto, required or none.",
        ),
    ],
)
def test_each_error_is_a_sentence_naming_the_field_and_what_to_do(data, sentence):
    assert sentences(data) == [sentence]


@pytest.mark.parametrize(
    "data, sentence",
    [
        (
            {"name": "x", "grants": ["all"]},
            "'grants' is not a flow setting; remove it (they are: format, name,",
        ),
        (
            {"name": "x", "max_round": 3},
            "'max_round' is not a flow setting; did you mean 'max_rounds'? Otherwise remove it.",
        ),
        (
            {"name": "x", "decision": {"temprature": 1}},
            "Decision model: 'temprature' is not one of its settings; "
            "did you mean 'temperature'? Otherwise remove it.",
        ),
        (
            {"name": "x", "mcp_servers": [{"name": "git", "command": ["srv"], "args": ["-v"]}]},
            "MCP server 'git': 'args' is not one of its settings; "
            "remove it (they are: name, command, url, env,",
        ),
    ],
)
def test_an_unknown_setting_is_named_with_the_one_meant_or_the_ones_there_are(data, sentence):
    [said] = sentences(data)
    assert said.startswith(sentence), said


def test_the_unknown_settings_of_one_object_are_one_sentence():
    assert sentences({"name": "x", "grants": 1, "max_round": 2, "tools": [], "nme": "y"}) == [
        "'grants', 'max_round' and 'nme' are not flow settings; fix the spelling ('max_round' → "
        "'max_rounds', 'nme' → 'name') or remove them."
    ]
    with pytest.raises(ValidationError) as caught:
        Flow.model_validate(data := {"name": "x", "decision": {"a": 1, "b": 2}})
    assert plain_errors(caught.value, data, paths=True, model=Flow) == [
        "Decision model: 'a' and 'b' are not its settings (decision.a, decision.b); remove them (they are: "
        "provider, model, base_url, system_prompt, temperature, max_tokens, calling_way)."
    ]


def test_a_foreign_format_is_shown_cut_and_escaped():
    message = refused({"name": "x", "format": "v9\x1b" + "\x1b[2J" * 50})
    assert "\x1b" not in message and "\\u001b" in message and len(message) < 200, message


def test_parse_flow_says_the_sentences_with_each_fields_json_path():
    message = refused(
        {
            "name": "my/flow",
            "max_rounds": 0,
            "decision": {"provider": "GPT"},
            "mcp_servers": [{"name": "git", "command": []}],
        }
    )
    assert message.startswith("flow.json is not a valid flow: Flow name (name): use only letters, digits")
    assert "Max rounds (max_rounds): must be between 1 and 50 (it is 0). " in message
    assert "Decision model › provider (decision.provider): name a provider: local, openai" in message
    assert "MCP server 'git' › command (mcp_servers[0].command): must not be empty" in message
    assert not message.endswith(".")  # the studio adds ". Nothing was changed." after it
    assert "\n" not in message  # the CLI's one line
    assert refused({"name": "x", "decision": {"temprature": 1}}).endswith(
        "Decision model: 'temprature' is not one of its settings (decision.temprature); did you mean "
        "'temperature'? Otherwise remove it"
    )


def test_json_invalid_says_where_the_json_breaks():
    with pytest.raises(ValidationError) as caught:
        Flow.model_validate_json('{"name": "x",}')
    [said] = plain_errors(caught.value, model=Flow)
    assert (
        said.startswith("The flow: is not valid JSON (") and "check its quotes, commas and brackets" in said
    )


def test_a_list_of_servers_checked_on_its_own_is_named_as_in_the_flow():
    """As the editor checks the MCP servers box: the items are the flow's mcp_servers."""
    data = [{"name": "git"}, {"name": "b", "command": []}]
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(list[MCPServerConfig]).validate_python(data)
    assert plain_errors(caught.value, data, at=("mcp_servers",), paths=True, model=Flow) == [
        "MCP server 'git' needs exactly one of command (stdio) or url (streamable HTTP).",
        "MCP server 'b' › command (mcp_servers[1].command): must not be empty; give the program and its "
        'arguments, e.g. ["uvx", "mcp-server-git"].',
    ]
    with pytest.raises(ValidationError) as caught:
        MCPServerConfig(name="x", url="ftp://x")
    assert plain_errors(caught.value, {"name": "x"}, at=("mcp_servers", 0), model=Flow) == [
        "MCP server 'x' › URL: must start with http:// or https:// (it is 'ftp://x')."
    ]


def test_a_huge_or_hostile_value_is_cut_and_its_control_characters_escaped():
    [said] = sentences({"name": "x", "decision": {"provider": "x/" * 5000}})
    assert len(said) < 300
    assert said.endswith("'x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/…' has 10000 characters.")
    [said] = sentences({"name": "x/" * 5000})
    assert said == "Flow name: can have at most 120 characters (it has 10000)."
    [said] = sentences({"name": "a\x1b[31mb/\u202ec\n"})
    assert "\x1b" not in said and "\u202e" not in said and "\n" not in said
    assert "'\\u001b', '[', '/', '\\u202e' and '\\n'" in said
    [said] = sentences({"name": "x", "decision": {"provider": {"deep": ["x" * 500]}}})
    assert said == "Decision model › provider: must be text, in quotes (it is an object)."


def test_many_errors_end_with_a_count():
    said = sentences({"name": "x", "tools": list(range(30))})
    assert len(said) == 9 and said[0] == "Tools › item 1: must be text, in quotes (it is 0)."
    assert said[-1] == "And 22 more problems like these."


def test_an_error_without_a_sentence_of_its_own_is_said_without_jargon():
    error = ValidationError.from_exception_data(
        "Flow",
        [
            {"type": "uuid_type", "loc": ("name",), "input": 5},
            {"type": "date_type", "loc": ("description",), "input": 5},
        ],
    )
    said = plain_errors(error, model=Flow)
    assert said[0].startswith("Flow name: ") and said[0].endswith("(it is 5).")
    assert said[1].startswith("Description: ") and not any(j in s for s in said for j in JARGON), said


# ------------------------------------------------------------------ any JSON at all

_leaf = st.none() | st.booleans() | st.integers(-100, 100) | st.floats(allow_nan=True) | st.text(max_size=12)
_json = st.recursive(
    _leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_MODEL_KEYS = [
    "provider",
    "model",
    "base_url",
    "system_prompt",
    "temperature",
    "max_tokens",
    "calling_way",
    "output_schema",
]
_SERVER_KEYS = ["name", "command", "url", "env", "trusted", "startup_timeout_s", "call_timeout_s"]
_HTTP_KEYS = ["name", "openapi", "base_url", "operations", "allow_hosts", "timeout_s", "max_response_bytes"]


def _object(keys: list[str]):
    return st.dictionaries(
        st.sampled_from(keys) | st.text(max_size=8),
        _json | st.sampled_from(["git", "local", "http://127.0.0.1/x", "auto", ["srv"], 0, 1, 3, -1, 1e9]),
        max_size=5,
    )


_VALUES = {
    "name": st.text(max_size=130) | _json,
    "decision": _object(_MODEL_KEYS) | _json,
    "polish": _object(_MODEL_KEYS) | _json,
    "mcp_servers": st.lists(_object(_SERVER_KEYS), max_size=2) | _json,
    "http_tools": st.lists(_object(_HTTP_KEYS), max_size=2) | _json,
    "router_rules": st.lists(_object(["pattern", "tool"]), max_size=2) | _json,
    "tools": st.lists(st.sampled_from(["a", "x/v1/a", "get_weather"]) | _json, max_size=3) | _json,
}
_TOP_KEYS = [
    "format",
    "name",
    "description",
    "decision",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_rounds",
    "retry_budget",
    "tool_timeout_s",
    "router_rules",
    "mcp_servers",
    "http_tools",
    "needs_approval",
    "polish",
]


@st.composite
def flow_like(draw) -> dict:
    keys = draw(st.lists(st.sampled_from(_TOP_KEYS) | st.text(max_size=10), max_size=7, unique=True))
    data = {"name": "x"} if draw(st.booleans()) else {}  # else most flows fail on the name alone
    return data | {key: draw(_VALUES.get(key, _json | st.integers(-5, 60))) for key in keys}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=flow_like())
def test_any_json_either_parses_or_is_refused_in_plain_words(data):
    try:
        parse_flow(data)
    except ConfigError as exc:
        message = str(exc)
        assert not any(j in message for j in JARGON), message
        assert "\n" not in message and message.strip()
    try:  # the same dict as a file's text (NaN and Infinity as Python's json writes them)
        parse_flow(json.dumps(data))
    except ConfigError as exc:
        assert not any(j in str(exc) for j in JARGON), str(exc)


def test_no_sentence_ends_in_two_stops_or_says_none():
    for data in (
        {"name": "x", "tools": ["a"], "router_rules": [{"pattern": "(", "tool": "a"}]},
        {"name": "x", "max_rounds": None},
        {"name": None},
    ):
        for said in sentences(data):
            assert not re.search(r"\.\.$", said) and "None" not in said, said
