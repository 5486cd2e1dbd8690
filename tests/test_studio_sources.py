"""The MCP server and HTTP tool source forms (flowcall/studio/sources.py) with streamlit.testing's
AppTest: the real store (a per-test SQLite file), real grants, and FlowCall's own test MCP server
over stdio, started through a wrapper that writes a line to a marker file each time it starts, so
a test can see that nothing started before a grant."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.core.spec import HTTPToolSource, MCPServerConfig, parse_flow
from flowcall.service.front import FlowCall
from flowcall.studio.sources import source_tools
from tests.test_studio import shown, texts
from tests.tools.test_mcp_client import SERVER

TOOLS = ["add", "shout", "save_note", "fail", "hang", "crash"]  # tests/tools/mcp_test_server.py's, in order
WRAPPER = """import os, runpy, sys
with open(os.environ["MARKER"], "a", encoding="utf-8") as handle:
    handle.write("started\\n")
sys.argv = [{server!r}, "stdio"]
runpy.run_path({server!r}, run_name="__main__")
"""


def page(kind: str, initial: dict | None) -> None:
    import streamlit as st

    from flowcall.studio.sources import http_source_form, mcp_server_form

    form = mcp_server_form if kind == "mcp" else http_source_form
    st.session_state["out"] = form(initial, "src")


def form(kind: str = "mcp", initial: dict | None = None) -> AppTest:
    app = AppTest.from_function(page, args=(kind, initial), default_timeout=60)
    app.run()
    assert not app.exception, app.exception
    return app


def out(app: AppTest) -> tuple[dict | None, str | None]:
    assert not app.exception, app.exception
    return app.session_state["out"]


def add_row(app: AppTest, field: str, *values: str) -> None:
    """Add a row to `field` and type `values` into it (a NAME and a value for env)."""
    before = {w.key for w in app.text_input}
    app.button(key=f"src:b:{field}:add").click().run()
    new = [w for w in app.text_input if w.key not in before]
    assert len(new) == len(values), [w.key for w in new]
    for widget, value in zip(new, values):
        widget.input(value)
    app.run()


def fill_stdio(app: AppTest, name: str, program: str, args: list[str], env: dict[str, str]) -> None:
    app.text_input(key="src:f:name").input(name)
    app.text_input(key="src:f:program").input(program)
    app.run()
    for arg in args:
        add_row(app, "args", arg)
    for variable, value in env.items():
        add_row(app, "env", variable, value)


@pytest.fixture
def started(tmp_path) -> tuple[dict, Path]:
    """The test server as a flow's server dict, and its marker file (one line per start)."""
    wrapper = tmp_path / "started_server.py"
    wrapper.write_text(WRAPPER.format(server=SERVER), encoding="utf-8")
    marker = tmp_path / "started.txt"
    server = {
        "name": "own",
        "command": [sys.executable, str(wrapper)],
        "env": {"MARKER": str(marker), "API_TOKEN": "$FLOWCALL_TEST_TOKEN"},
    }
    return server, marker


def starts(marker: Path) -> int:
    return len(marker.read_text(encoding="utf-8").splitlines()) if marker.exists() else 0


# ------------------------------------------------------------------ the MCP server form


def test_a_stdio_server_with_arguments_and_an_env_reference_is_a_valid_server():
    app = form()
    assert out(app) == (
        None,
        "Name: give it a name, e.g. time: lowercase letters, digits, - and _ (its tools are "
        "attached as <name>/mcp/<tool>).",
    )
    assert app.button(key="src:b:list").disabled  # nothing to list until the form is valid
    fill_stdio(
        app,
        "github",
        "npx",
        ["-y", "@modelcontextprotocol/server-github"],
        {"GITHUB_PERSONAL_ACCESS_TOKEN": "$GITHUB_TOKEN", "LOG_LEVEL": "debug"},
    )
    value, problem = out(app)
    assert problem is None and not app.error
    assert value == {
        "name": "github",
        "command": ["npx", "-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "$GITHUB_TOKEN", "LOG_LEVEL": "debug"},
        "trusted": False,
        "startup_timeout_s": 30.0,
        "call_timeout_s": 30.0,
    }
    assert MCPServerConfig.model_validate(value).model_dump(mode="json", exclude_none=True) == value
    # what the flows editor saves: the flow's own check takes it as it is
    parse_flow({"name": "f", "mcp_servers": [value], "tools": ["github/mcp/search"]})

    app.button(key=f"src:b:args:{app.session_state['src:rows:args'][0]}:remove").click().run()  # remove "-y"
    app.checkbox(key="src:f:trusted").check().run()
    value, _ = out(app)
    assert value["command"] == ["npx", "@modelcontextprotocol/server-github"] and value["trusted"] is True


def test_a_literal_secret_is_named_in_a_plain_sentence():
    app = form()
    fill_stdio(app, "github", "npx", [], {"TOKEN": "hunter2"})
    assert out(app) == (
        None,
        "Env TOKEN: write a reference like $TOKEN, not the secret itself, and set TOKEN in the "
        "environment FlowCall runs in (a flow file is shared, so it never holds a key).",
    )
    assert shown(app.error[0].value) == out(app)[1]
    assert app.button(key="src:b:list").disabled

    app.text_input(key=[w.key for w in app.text_input if w.key.endswith(":value")][0]).input(
        "$GITHUB_TOKEN"
    ).run()
    assert out(app)[1] is None
    add_row(
        app, "args", "--key=sk-proj-" + "a1B2c3D4e5" * 3
    )  # a key in the format of an API key, in an argument
    assert out(app) == (
        None,
        "Argument 1: it holds a value in the format of an API key, token or private key. A "
        "flow file is shared and must never hold a secret: remove it, and hand a server a "
        "secret only through an env row with a reference like $GITHUB_TOKEN.",
    )


def test_every_field_problem_names_the_field_and_what_to_do():
    app = form()
    app.text_input(key="src:f:name").input("My Server").run()
    assert out(app)[1] == (
        "Command: give the program to start, e.g. uvx or python; its arguments go in the rows below it."
    )
    app.text_input(key="src:f:program").input("uvx").run()
    assert out(app)[1] == (
        "Name: use lowercase letters, digits, - and _, starting with a letter or digit (at most "
        "40), e.g. time."
    )
    app.text_input(key="src:f:name").input("time").run()
    add_row(app, "env", "", "value")
    assert out(app)[1] == "Env row 1: give the variable a name, or clear the row."
    app.radio(key="src:f:transport").set_value("URL").run()
    app.text_input(key="src:f:url").input("ftp://example.com/mcp").run()
    assert out(app)[1] == "URL: write a streamable HTTP address starting with http:// or https://."
    app.text_input(key="src:f:url").input("https://user:pw@example.com/mcp").run()
    assert out(app)[1].startswith("URL: it holds a URL with a password in it (user:password@host).")
    app.text_input(key="src:f:url").input("https://example.com/mcp").run()
    app.number_input(key="src:f:startup_timeout_s").set_value(0.0).run()
    assert out(app)[1] == "Startup timeout: must be more than 0."
    app.number_input(key="src:f:startup_timeout_s").set_value(10.0).run()
    assert out(app) == (
        {
            "name": "time",
            "url": "https://example.com/mcp",
            "env": {},
            "trusted": False,
            "startup_timeout_s": 10.0,
            "call_timeout_s": 30.0,
        },
        None,
    )
    app.radio(key="src:f:transport").set_value("stdio command").run()  # switching back keeps what was typed
    assert out(app)[1] == "Env row 1: give the variable a name, or clear the row."
    assert app.text_input(key="src:f:program").value == "uvx"


def test_a_saved_server_fills_the_form_and_comes_back_unchanged():
    saved = {
        "name": "time",
        "command": ["uvx", "mcp-server-time", "--local-timezone=Asia/Shanghai"],
        "env": {"TZ_TOKEN": "$TZ_TOKEN"},
        "trusted": True,
        "startup_timeout_s": 12.5,
        "call_timeout_s": 60.0,
    }
    app = form(initial=saved)
    assert out(app) == (saved, None)
    assert [w.value for w in app.text_input][:3] == ["time", "uvx", "mcp-server-time"]
    url_server = {
        "name": "remote",
        "url": "https://mcp.example.com/mcp",
        "env": {},
        "trusted": False,
        "startup_timeout_s": 30.0,
        "call_timeout_s": 30.0,
    }
    assert out(form(initial=url_server)) == (url_server, None)


def test_the_json_expander_follows_the_form_and_applying_it_replaces_the_form():
    app = form()
    fill_stdio(app, "github", "npx", ["server-github"], {"GITHUB_TOKEN": "$GITHUB_TOKEN"})
    value, _ = out(app)
    assert json.loads(app.text_area(key="src:json").value) == value  # the form and the JSON agree

    edited = {
        **value,
        "name": "gh",
        "command": ["uvx", "gh-mcp", "--read-only"],
        "env": {"GH_HOST": "github.com"},
        "call_timeout_s": 90,
    }
    app.text_area(key="src:json").input(json.dumps(edited))
    app.button(key="src:b:json").click().run()
    value, problem = out(app)
    assert problem is None and value == {**edited, "call_timeout_s": 90.0}
    assert (
        app.text_input(key="src:f:name").value == "gh" and app.text_input(key="src:f:program").value == "uvx"
    )
    assert sorted(w.value for w in app.text_input if w.key.startswith("src:f:args:")) == [
        "--read-only",
        "gh-mcp",
    ]
    assert app.number_input(key="src:f:call_timeout_s").value == 90.0
    assert json.loads(app.text_area(key="src:json").value) == value

    # bad JSON: a clear error, the form unchanged, the text kept as typed
    app.text_area(key="src:json").input('{"name": "gh", "command": ["uvx"')
    app.button(key="src:b:json").click().run()
    error = shown(app.expander[0].error[0].value)
    assert error.startswith("Nothing was applied: the JSON is not valid (line 1, column 33)")
    assert "Your text is kept" in error
    assert out(app) == (value, None)
    assert app.text_area(key="src:json").value == '{"name": "gh", "command": ["uvx"'

    # valid JSON that is no valid server: the same sentence as the form's, nothing applied
    app.text_area(key="src:json").input(json.dumps({**edited, "env": {"GH_TOKEN": "ghp_" + "x1" * 18}}))
    app.button(key="src:b:json").click().run()
    assert shown(app.expander[0].error[0].value).startswith(
        "Nothing was applied: Env GH_TOKEN: write a reference like $GH_TOKEN, not the secret itself"
    )
    app.text_area(key="src:json").input(json.dumps({**edited, "headers": {}}))
    app.button(key="src:b:json").click().run()
    assert "headers: is not a field FlowCall knows: remove it." in shown(app.expander[0].error[0].value)
    assert out(app) == (value, None)

    # the URL transport, from JSON
    app.text_area(key="src:json").input(json.dumps({"name": "remote", "url": "https://mcp.example.com/mcp"}))
    app.button(key="src:b:json").click().run()
    assert (
        out(app)[0]["url"] == "https://mcp.example.com/mcp"
        and app.radio(key="src:f:transport").value == "URL"
    )


# ------------------------------------------------------------------ consent before anything starts


def test_listing_an_ungranted_server_shows_the_consent_panel_and_starts_nothing(started):
    server, marker = started
    app = form(initial=server)
    assert out(app)[1] is None
    app.button(key="src:b:list").click().run()
    shown_text = texts(app)
    assert "nobody on this machine has granted it. Nothing has been started or sent" in shown_text
    assert f"start the program {json.dumps(server['command'])}" in shown_text  # the command as written ...
    resolved = [str(Path(sys.executable).absolute()), server["command"][1]]
    assert f"(here: {json.dumps(resolved)}" in shown_text  # ... and as it resolves here
    assert (
        "this gives the secret in FLOWCALL_TEST_TOKEN to that program" in shown_text
    )  # the secrets it is handed
    assert not app.dataframe and starts(marker) == 0

    tools, reason = source_tools(FlowCall.open(), server)  # the palette: nothing ungranted starts either
    assert tools == [] and reason.startswith(
        "Nothing was started or loaded: nobody on this machine has granted"
    )
    app.run()  # the panel stays until the person decides
    assert app.button(key="src:b:grant") and starts(marker) == 0

    app.button(key="src:b:cancel").click().run()
    assert "Cancelled: nothing was granted, started or sent." in texts(app)
    assert not app.dataframe and starts(marker) == 0 and FlowCall.open().store.list_grants() == []


def test_after_the_grant_the_servers_real_tools_are_listed_and_one_is_tried(started):
    server, marker = started
    server["trusted"] = True
    app = form(initial=server)
    app.button(key="src:b:list").click().run()
    assert "run an MCP server's tools without asking" not in texts(app)  # not asked here: see below
    app.button(key="src:b:grant").click().run()
    assert starts(marker) == 1  # started once, to list
    listing = app.dataframe[0].value
    assert list(listing["tool"]) == TOOLS and list(listing["reference"]) == [f"own/mcp/{t}" for t in TOOLS]
    assert listing.loc[0, "description"] == "Add two integers." and bool(listing.loc[0, "read-only"])
    grants = FlowCall.open().store.list_grants()
    assert [g["kind"] for g in grants] == ["mcp_command"] and grants[0]["granted_by"] == "studio"
    # the same grant a flow's run asks for: a flow attaching this server needs only `trusted` granted now
    flow = parse_flow({"name": "uses-own", "mcp_servers": [out(app)[0]], "tools": ["own/mcp/add"]})
    assert [(item.kind, ok) for item, ok in FlowCall.open().trust_status(flow)] == [
        ("mcp_command", True),
        ("mcp_trusted", False),
    ]

    # the palette lists the granted server's tools
    tools, reason = source_tools(FlowCall.open(), server)
    assert reason is None and [t["ref"] for t in tools] == [f"own/mcp/{t}" for t in TOOLS]
    assert tools[0] == {
        "ref": "own/mcp/add",
        "name": "add",
        "description": "Add two integers.",
        "annotations": {"read_only": True, "destructive": False, "open_world": True},
        "kind": "mcp",
        "parameters": tools[0]["parameters"],
    }
    assert set(tools[0]["parameters"]["required"]) == {"a", "b"}
    assert starts(marker) == 2

    # arguments that do not fit the schema: named, nothing started
    assert json.loads(app.text_area(key="src:f:arguments:add").value) == {"a": 0, "b": 0}
    app.text_area(key="src:f:arguments:add").input('{"a": "two", "b": 40}')
    app.button(key="src:b:try").click().run()
    assert shown(app.error[0].value) == "Arguments: a: 'two' is not of type 'integer'. Nothing was started."
    assert starts(marker) == 2

    app.text_area(key="src:f:arguments:add").input('{"a": 2, "b": 40}')
    app.button(key="src:b:try").click().run()
    assert not app.error and json.loads(app.json[-1].value) == {"sum": 42}
    assert starts(marker) == 3

    # a text result is shown as code, never as Markdown
    app.selectbox(key="src:f:try_tool").select("shout").run()
    app.text_area(key="src:f:arguments:shout").input('{"text": "**hi** ![x](http://example.com/x.png)"}')
    app.button(key="src:b:try").click().run()
    assert app.code[-1].value == "**HI** ![X](HTTP://EXAMPLE.COM/X.PNG)"

    # a revoked grant: Try a tool asks again and starts nothing
    FlowCall.open().store.revoke(grants[0]["key"])
    app.button(key="src:b:try").click().run()
    assert "nobody on this machine has granted it" in texts(app) and starts(marker) == 4


def test_a_changed_script_needs_a_new_grant(started):
    server, marker = started
    app = form(initial=server)
    app.button(key="src:b:list").click().run()
    app.button(key="src:b:grant").click().run()
    assert starts(marker) == 1
    wrapper = Path(server["command"][1])
    wrapper.write_text(wrapper.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    tools, reason = source_tools(FlowCall.open(), server)
    assert tools == [] and "started_server.py" in reason and "its content changed" in reason
    app.button(key="src:b:list").click().run()
    assert "its content changed" in texts(app) and starts(marker) == 1


def test_a_grant_covers_only_what_the_person_read(started):
    server, marker = started
    app = form(initial=server)
    app.button(key="src:b:list").click().run()  # the panel, as read
    wrapper = Path(server["command"][1])
    wrapper.write_text(
        wrapper.read_text(encoding="utf-8") + "# changed after the panel was drawn\n", encoding="utf-8"
    )
    app.button(key="src:b:grant").click().run()
    assert "What it would start changed since this panel was drawn" in texts(app)
    assert FlowCall.open().store.list_grants() == [] and starts(marker) == 0
    app.button(key="src:b:grant").click().run()  # read again: now it is granted and listed
    assert len(FlowCall.open().store.list_grants()) == 1 and starts(marker) == 1 and app.dataframe


# ------------------------------------------------------------------ the HTTP tool source form

OPENAPI = {
    "openapi": "3.0.0",
    "info": {"title": "things", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9/api"}],
    "paths": {
        "/things/{id}": {
            "get": {
                "operationId": "getThing",
                "summary": "One thing.",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            },
            "delete": {"operationId": "deleteThing", "summary": "Delete a thing."},
        }
    },
}


def test_an_http_source_with_an_allowed_host_validates_and_lists_after_the_grant(tmp_path):
    document = tmp_path / "things.json"
    document.write_text(json.dumps(OPENAPI), encoding="utf-8")
    app = form("http")
    app.text_input(key="src:f:name").input("things")
    app.text_input(key="src:f:openapi").input(str(document))
    app.run()
    add_row(app, "allow_hosts", "http://127.0.0.1:9")
    assert out(app)[1] == (
        "Allowed host 1: write a host name or address alone, e.g. 127.0.0.1 or api.internal, not a URL."
    )
    app.text_input(key=[w.key for w in app.text_input if w.key.startswith("src:f:allow_hosts:")][0]).input(
        "127.0.0.1"
    ).run()
    value, problem = out(app)
    assert problem is None
    assert value == {
        "name": "things",
        "openapi": str(document),
        "allow_hosts": ["127.0.0.1"],
        "timeout_s": 15.0,
        "max_response_bytes": 1_000_000,
    }
    assert HTTPToolSource.model_validate(value).model_dump(mode="json", exclude_none=True) == value
    assert json.loads(app.text_area(key="src:json").value) == value

    tools, reason = source_tools(FlowCall.open(), value)
    assert tools == [] and "load the OpenAPI document" in reason
    app.button(key="src:b:list").click().run()
    assert 'let HTTP tools reach "127.0.0.1"' in texts(app) and not app.dataframe
    app.button(key="src:b:grant").click().run()
    assert list(app.dataframe[0].value["reference"]) == ["things/http/getThing", "things/http/deleteThing"]
    tools, reason = source_tools(FlowCall.open(), value)
    assert reason is None and [(t["ref"], t["kind"], t["annotations"]["destructive"]) for t in tools] == [
        ("things/http/getThing", "http", False),
        ("things/http/deleteThing", "http", True),
    ]

    add_row(app, "operations", "getThing")
    assert out(app)[0]["operations"] == ["getThing"]


# ------------------------------------------------------------------ outside text stays text


def test_the_module_shows_no_outside_text_unescaped(monkeypatch):
    """The security suite's scan of the pages (every outside value reaches Markdown through md()),
    run over this module."""
    from tests.security import test_studio_markdown as scan

    monkeypatch.setattr(scan, "FILES", [scan.ROOT / "flowcall" / "studio" / "sources.py"])
    assert scan.unescaped() == []


def test_an_http_source_sends_header_rows_and_a_literal_key_is_a_plain_sentence():
    app = form("http")
    app.text_input(key="src:f:name").input("things")
    app.text_input(key="src:f:openapi").input("https://api.example.com/openapi.json")
    app.run()
    add_row(app, "headers", "Authorization", "Bearer hunter2hunter2")
    assert out(app) == (
        None,
        "Header Authorization: write a reference like $AUTHORIZATION (or 'Bearer "
        "$AUTHORIZATION'), not the secret itself, and set AUTHORIZATION in the environment "
        "FlowCall runs in (a flow file is shared, so it never holds a key).",
    )
    app.text_input(key=[w.key for w in app.text_input if w.key.endswith(":value")][0]).input(
        "Bearer $THINGS_TOKEN"
    ).run()
    add_row(app, "headers", "X-Client", "flowcall")
    value, problem = out(app)
    assert problem is None
    assert value["headers"] == {"Authorization": "Bearer $THINGS_TOKEN", "X-Client": "flowcall"}
    assert HTTPToolSource.model_validate(value).headers == value["headers"]


def test_a_service_on_this_machine_is_granted_in_one_consent(tmp_path):
    """An OpenAPI document served on 127.0.0.1: the consent panel offers to allow the host for
    this source, so one Grant loads it (the guard refused it after a first grant, and the
    allowed host then needed a second)."""
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    (tmp_path / "openapi.json").write_text(json.dumps(OPENAPI), encoding="utf-8")

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        app = form("http")
        app.text_input(key="src:f:name").input("things")
        app.text_input(key="src:f:openapi").input(f"http://127.0.0.1:{server.server_port}/openapi.json")
        app.run()
        app.button(key="src:b:list").click().run()
        offer = [c for c in app.checkbox if c.key == "src:b:allow_internal"]
        assert offer and offer[0].value is True and "127.0.0.1" in shown(offer[0].label)
        app.button(key="src:b:grant").click().run()
        assert not app.exception, app.exception
        assert list(app.dataframe[0].value["reference"]) == [
            "things/http/getThing",
            "things/http/deleteThing",
        ]
        assert out(app)[0]["allow_hosts"] == ["127.0.0.1"]  # the form shows what was granted
        assert not [b for b in app.button if b.key == "src:b:grant"]  # no second panel
    finally:
        server.shutdown()
