"""A lossless editor: a flow survives its JSON (export, import, the store) and the Flows page's
editor unchanged. Property tests on the pure functions (hypothesis, for the example flows and
generated ones); the editor itself with streamlit's AppTest, once per example flow."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from flowcall.core.spec import Flow, load_flow, parse_flow
from flowcall.service.front import FlowCall

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "flows").glob("*.json"))
# no example database between runs (nothing to replay), no deadline (the first validation is slow)
PROPERTY = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


def assert_round_trips(flow: Flow) -> None:
    """Export and import (to_json / parse_flow), and the store's dump (model_dump / model_validate)."""
    imported = parse_flow(flow.to_json(), source="the export")
    assert imported == flow and imported.content_hash() == flow.content_hash()
    assert imported.to_json() == flow.to_json()  # a loaded flow dumps as it was stored
    stored = Flow.model_validate(flow.model_dump(mode="json"))
    assert stored == flow and stored.content_hash() == flow.content_hash()


# ------------------------------------------------------------------ generated flows

# Free text without ASCII digits: the secret check (rightly) refuses long random letter-and-digit
# runs, which hypothesis would otherwise write into prompts now and then.
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="0123456789"), max_size=60)
NAME = st.text(st.sampled_from(list("abcxyzABC_-. 天气") + ["d"]), min_size=1, max_size=40).filter(
    lambda s: bool(re.fullmatch(r"[\w\-]([\w\-. ]*[\w\-])?", s))  # Flow.name: no space or dot at an end
)
VERSIONS = [
    "weather/v1/get_weather",
    "data/v1/read_csv",
    "time/mcp/get_current_time",
    "shop/http/getItem",
    "lookup_employee",
]
SCHEMAS = st.recursive(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean", "null"])},
        optional={
            "description": TEXT,
            "default": st.none() | st.booleans() | TEXT,
            "enum": st.lists(st.none() | st.integers() | TEXT, min_size=1, max_size=3),
        },
    ),
    lambda inner: st.fixed_dictionaries(
        {
            "type": st.just("object"),
            "properties": st.dictionaries(st.from_regex(r"[a-z_]{1,10}", fullmatch=True), inner, max_size=3),
        },
        optional={"required": st.just([]), "additionalProperties": st.booleans()},
    ),
    max_leaves=6,
)


def model_config(with_schema: bool) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, Any] = {
        "provider": st.sampled_from(["local", "openai", "dashscope", "openai-compatible", "scripted"]),
        "model": st.sampled_from(["qwen2.5-coder-0.5b-instruct", "gpt-4o-mini", "qwen-plus"]),
        "base_url": st.sampled_from([None, "http://127.0.0.1:11434/v1"]),
        "system_prompt": TEXT | st.just("Today is {{today}}; tomorrow {{tomorrow}}."),
        "temperature": st.floats(0.0, 2.0, allow_nan=False),
        "max_tokens": st.integers(1, 32768),
    }
    if with_schema:
        fields["output_schema"] = st.none() | SCHEMAS
    else:
        fields["calling_way"] = st.sampled_from(["auto", "native", "prompt", "schema", "router"])
    return st.fixed_dictionaries({}, optional=fields)


@st.composite
def flow_data(draw: st.DrawFn) -> dict[str, Any]:
    """Flow JSON as a person or the studio writes it: any field may be left out, and a tool may
    be named by its version or its bare name."""
    tools = draw(st.lists(st.sampled_from(VERSIONS), unique=True, max_size=4))
    named = (
        st.sampled_from(tools).flatmap(lambda ref: st.sampled_from([ref, ref.rsplit("/", 1)[-1]]))
        if tools
        else st.nothing()
    )
    data: dict[str, Any] = {"name": draw(NAME), "tools": tools}
    optional = {
        "description": TEXT,
        "decision": model_config(with_schema=False),
        "tool_choice": st.sampled_from(["auto", "required", "none"]) | named,
        "parallel_tool_calls": st.booleans(),
        "max_rounds": st.integers(1, 50),
        "retry_budget": st.integers(0, 10),
        "tool_timeout_s": st.floats(0.01, 600, allow_nan=False),
        "router_rules": st.lists(
            st.fixed_dictionaries(
                {"pattern": st.sampled_from(["天气|weather", "^csv", r"\d+"]), "tool": named}
            ),
            max_size=3,
        )
        if tools
        else st.just([]),
        "mcp_servers": st.lists(
            st.fixed_dictionaries(
                {"name": st.just("time")},
                optional={
                    "env": st.lists(
                        st.sampled_from(
                            [
                                ("TZ", "$TZ"),
                                ("TZ", "UTC"),
                                ("LANG", "en_US.UTF-8"),
                                ("GITHUB_TOKEN", "$GITHUB_TOKEN"),
                            ]
                        ),
                        max_size=3,
                    ).map(dict),
                    "trusted": st.booleans(),
                    "startup_timeout_s": st.floats(0.5, 300),
                    "call_timeout_s": st.floats(0.5, 600),
                },
            ).flatmap(
                lambda server: st.sampled_from(
                    [
                        {**server, "command": ["mcp-server-time", "--local-timezone=UTC"]},
                        {**server, "url": "http://127.0.0.1:8765/mcp"},
                    ]
                )
            ),
            max_size=1,
        ),
        "http_tools": st.lists(
            st.fixed_dictionaries(
                {"name": st.just("shop"), "openapi": st.just("https://api.example.com/openapi.json")},
                optional={
                    "base_url": st.none() | st.just("https://api.example.com/v2"),
                    "operations": st.none()
                    | st.lists(st.sampled_from(["getItem", "listItems"]), unique=True),
                    "allow_hosts": st.lists(st.sampled_from(["127.0.0.1", "intranet.local"]), unique=True),
                    "timeout_s": st.floats(0.5, 300),
                    "max_response_bytes": st.integers(1, 50_000_000),
                },
            ),
            max_size=1,
        ),
        "needs_approval": st.lists(named, unique=True, max_size=3) if tools else st.just([]),
        "polish": st.none() | model_config(with_schema=True),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            data[key] = draw(strategy)
    return data


@PROPERTY
@given(flow_data())
def test_generated_flows_round_trip(data: dict[str, Any]) -> None:
    flow = parse_flow(json.dumps(data, ensure_ascii=False))
    assert_round_trips(flow)


@PROPERTY
@given(flow_data())
def test_a_tool_named_either_way_loads_to_one_form(data: dict[str, Any]) -> None:
    """tool_choice and router rules hold the bare name the engine matches, however written."""
    flow = parse_flow(data)
    for name in [flow.tool_choice, *(rule.tool for rule in flow.router_rules)]:
        assert "/" not in name
    assert flow.needs_approval == data.get("needs_approval", [])  # kept as written: both forms match


# ------------------------------------------------------------------ the example flows


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_flows_round_trip(path: Path) -> None:
    assert_round_trips(load_flow(path))


@PROPERTY
@given(st.sampled_from(EXAMPLES), st.data())
def test_example_flows_with_changes_round_trip(path: Path, data: st.DataObject) -> None:
    """An example flow with some of its fields replaced by generated values."""
    example = json.loads(path.read_text(encoding="utf-8"))
    changes = data.draw(flow_data())
    keys = data.draw(st.sets(st.sampled_from(sorted(changes))))
    refs = {"tool_choice", "router_rules", "needs_approval"}  # they must name attached tools
    if "tools" in keys:  # new tools bring their own references
        mixed = {k: v for k, v in example.items() if k not in refs}
        keys |= refs & set(changes)
    else:
        mixed, keys = dict(example), keys - refs
    mixed.update({k: changes[k] for k in keys})
    assert_round_trips(parse_flow(mixed))


# ------------------------------------------------------------------ the editor (Flows page)


def flows_page() -> AppTest:
    """The studio as a person opens it (app.py seeds the example flows), on the Flows page."""
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    app.run()
    app.switch_page("pages/flows.py")
    app.run()
    assert not app.exception, app.exception
    return app


def by_label(elements, label: str):
    found = [e for e in elements if e.label == label]
    assert found, f"no widget labelled {label!r}"
    return found[0]


def save_unchanged(name: str) -> tuple[Flow, Flow, list[str]]:
    """Open `name` in the form view, press Save without touching anything: (before, after, notices)."""
    store = FlowCall.open().store
    app = flows_page()
    before = store.get_flow(name)[0]
    by_label(app.selectbox, "Flow").select(name).run()
    app.get("button_group")[0].set_value("Form").run()  # every setting's widget drawn, each writing the draft
    by_label(app.button, "Save").click().run()
    assert not app.exception, app.exception
    assert not app.error, [e.value for e in app.error]
    after, _, version = store.get_flow(name)
    assert version == 1 and len(store.flow_versions(name)) == 1, "saving an unchanged flow made a new version"
    assert after.layout is not None  # saving keeps where the canvas drew each node, out of the flow itself
    return before, after.model_copy(update={"layout": before.layout}), [e.value for e in app.success]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_editor_saves_an_unchanged_example_flow_unchanged(path: Path) -> None:
    name = load_flow(path).name
    before, after, notices = save_unchanged(name)
    assert after == before and after.content_hash() == before.content_hash()
    assert any("unchanged" in n for n in notices), notices


def test_the_editor_keeps_every_field_it_does_not_show() -> None:
    """A flow with router rules, approvals by version and by name, MCP servers, HTTP tools, a
    polish schema and non-default limits: saved unchanged, it stays the same flow."""
    rich = parse_flow(
        {
            "name": "rich",
            "description": "every field set",
            "decision": {
                "provider": "openai-compatible",
                "model": "qwen-plus",
                "base_url": "http://127.0.0.1:11434/v1",
                "system_prompt": "Today is {{today}}.",
                "temperature": 0.3,
                "max_tokens": 321,
                "calling_way": "router",
            },
            "tools": [
                "weather/v1/get_weather",
                "data/v1/read_csv",
                "time/mcp/get_current_time",
                "shop/http/getItem",
            ],
            "tool_choice": "data/v1/read_csv",
            "parallel_tool_calls": False,
            "max_rounds": 7,
            "retry_budget": 5,
            "tool_timeout_s": 12.5,
            "router_rules": [
                {"pattern": "天气|weather", "tool": "weather/v1/get_weather"},
                {"pattern": "csv", "tool": "read_csv"},
            ],
            "mcp_servers": [
                {"name": "time", "command": ["mcp-server-time"], "env": {"TZ": "$TZ"}, "call_timeout_s": 9}
            ],
            "http_tools": [
                {
                    "name": "shop",
                    "openapi": "https://api.example.com/openapi.json",
                    "operations": ["getItem"],
                    "allow_hosts": ["127.0.0.1"],
                    "timeout_s": 4,
                    "max_response_bytes": 2048,
                }
            ],
            "needs_approval": ["weather/v1/get_weather", "read_csv"],
            "polish": {
                "provider": "local",
                "system_prompt": "Be brief.",
                "max_tokens": 77,
                "temperature": 0.1,
                "output_schema": {
                    "type": "object",
                    "properties": {"city": {"type": ["string", "null"], "default": None}},
                    "required": ["city"],
                },
            },
        }
    )
    flows_page()  # seeds the examples first: the studio seeds only an empty database
    FlowCall.open().store.save_flow(rich)
    before, after, notices = save_unchanged("rich")
    assert before == rich and after == rich and after.content_hash() == rich.content_hash()
    assert any("unchanged" in n for n in notices), notices
