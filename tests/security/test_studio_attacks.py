"""Attacks on the studio: text from models, tools, MCP servers, flow and run files that tries to
load images or make links, a typed command that would start a program, DOT that breaks out of
the diagram, an editor that drops what it does not show, a consent that is skipped, and an
import that replaces a saved flow. Each runs the real studio (app.py) with streamlit's AppTest."""

from __future__ import annotations

import json
import re
import shlex
import sys
import textwrap
import tomllib
from pathlib import Path
from xml.etree import ElementTree

import pytest

from flowcall.core.spec import Flow, parse_flow
from flowcall.service.front import FlowCall
from flowcall.studio import flowgraph
from tests.support.studio import followed
from tests.test_studio import ROOT, page, shown, widget
from tests.tools.test_mcp_client import SERVER

IMAGE = "![x](http://127.0.0.1:9/x.png)"
LINK = "[link](http://evil.example)"
PAYLOAD = (
    f"{IMAGE} {LINK} <http://evil.example/auto> http://evil.example/bare www.evil.example "
    "[js](javascript:alert(1))"
)
# the element kinds whose value Streamlit renders as Markdown (labels and help texts always are)
MARKDOWN_VALUES = {
    "markdown",
    "caption",
    "success",
    "error",
    "warning",
    "info",
    "toast",
    "title",
    "header",
    "subheader",
    "metric",
}
ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")  # a backslash-escaped punctuation character renders as itself


def walk(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)


def markdown_bodies(app) -> list[str]:
    """Every piece of Markdown the page sent to the browser: bodies, labels, help texts, metrics."""
    bodies = []
    for node in walk(app._tree):
        for attribute in ("label", "help", *(("value",) if node.type in MARKDOWN_VALUES else ())):
            value = getattr(node, attribute, None)
            if isinstance(value, str) and value:
                bodies.append(value)
    return bodies


def active_syntax(body: str) -> list[str]:
    """What in a Markdown body would make a link or load an image: Markdown image or link syntax,
    an <autolink>, or a bare URL, www. name or javascript: that GFM turns into a link."""
    live = ESCAPED.sub("", body)  # escaped characters are text; what is left is syntax
    return [
        found
        for pattern in (r"!\[", r"\]\(", r"<https?:", r"https?://", r"www\.", r"javascript:")
        for found in re.findall(pattern, live, flags=re.IGNORECASE)
    ]


def assert_inert(app, *, must_show: list[str]) -> None:
    bodies = markdown_bodies(app)
    for body in bodies:
        assert not active_syntax(body), f"this Markdown would render a link or image: {body!r}"
    for text in must_show:  # the text is still there, as written, for the person to read
        assert any(text in shown(body) for body in bodies), f"{text!r} is not shown"


def attack_run(**run: object) -> dict:
    """A run file from elsewhere (flowcall.run/v1), as `runs import` reads it."""
    base = {
        "id": "attack-run",
        "flow_name": "lure",
        "question": f"What? {PAYLOAD}",
        "status": "succeeded",
        "trace_id": "trace",
        "steps": [
            {
                "run_id": "attack-run",
                "seq": 1,
                "kind": "model_call",
                "name": f"local/m {LINK}",
                "note": f"note {IMAGE}",
                "result": f"I will call a tool {PAYLOAD}",
                "tool_calls": [{"name": "lookup", "arguments": {"q": IMAGE}}],
            },
            {
                "run_id": "attack-run",
                "seq": 2,
                "kind": "tool_call",
                "name": f"lookup{LINK}",
                "arguments": {"q": IMAGE},
                "result": {"text": PAYLOAD},
            },
            {
                "run_id": "attack-run",
                "seq": 3,
                "kind": "error",
                "error_code": f"TOOL_ERROR{LINK}",
                "error_message": f"the tool said {PAYLOAD}",
            },
        ],
    }
    data = {**base, **run}
    data["steps"] = [{**step, "run_id": data["id"]} for step in data["steps"]]
    return {"format": "flowcall.run/v1", "run": data, "flow": None}


CARD = {
    "title": IMAGE,
    "date": LINK,
    "summary": f"A long sentence with {PAYLOAD} in it, as a model wrote it.",
    LINK: "short",
    "tiny": "[a](//e)",
    "nested": {"city": IMAGE, "note": f"more {LINK} text here"},
    "items": [IMAGE, {"k": LINK}],
}


# ------------------------------------------------------------------ (a) model, tool and run text


def test_run_text_renders_as_text_in_the_inspector(attack):
    attack.tried(
        "a run file whose question, answer card, tool result, step names and step error hold "
        "Markdown images and links, opened in the inspector",
        expected="no Markdown element would render an image or a link; the text is shown as written",
    )
    service = FlowCall.open()
    card = service.import_run(attack_run(id="card-run", final_answer=CARD))
    app = page("pages/runs.py")
    seen = []
    for run_id in (
        card.id,
        service.import_run(attack_run(id="text-run", final_answer=PAYLOAD)).id,
        service.import_run(
            attack_run(id="failed-run", status="failed", final_answer=None, error=f"TOOL_ERROR: {PAYLOAD}")
        ).id,
    ):
        app.session_state["run_id"] = run_id
        app.run()
        for seq in (1, 2, 3):
            widget(app.slider, "Step").set_value(seq).run()
            assert not app.exception, app.exception
            seen += [b for b in markdown_bodies(app) if active_syntax(b)]
            assert_inert(app, must_show=[f"What? {IMAGE}"])
    attack.observed(f"{len(seen)} Markdown bodies with live link or image syntax")
    assert not seen, seen[:3]


def test_an_answer_renders_as_text_on_the_run_page(attack):
    attack.tried(
        "a run whose answer (a card, and plain text) holds Markdown images and links, "
        "shown as the Run page's answer",
        expected="the card and the answer show the text; no link or image",
    )
    service = FlowCall.open()
    card = service.import_run(attack_run(id="card-run", final_answer=CARD))
    text = service.import_run(attack_run(id="text-run", final_answer=PAYLOAD))
    app = page("pages/run.py")
    live = []
    for run_id, must_show in ((card.id, [IMAGE, LINK, "more [link]"]), (text.id, [PAYLOAD])):
        app.session_state["run_id"] = run_id
        app.run()
        assert not app.exception, app.exception
        live += [b for b in markdown_bodies(app) if active_syntax(b)]
        if not live:
            assert_inert(app, must_show=must_show)
    attack.observed(f"{len(live)} Markdown bodies with live link or image syntax")
    assert not live, live[:3]


# ------------------------------------------------------------------ (b) tool descriptions


def write_lure_plugin(folder: Path, payload: str) -> Path:
    """A plugin folder whose tool's description and parameter description hold `payload`."""
    folder.mkdir(parents=True)
    (folder / "lure.py").write_text(
        textwrap.dedent(f'''
        from flowcall.tools.python_plugins import tool

        @tool("lure/v1/lure", read_only=True)
        def lure(city: str) -> str:
            """Weather {payload}

            Args:
                city: the city {IMAGE} {LINK}
            """
            return city
    ''')
    )
    return folder


def test_a_tool_description_renders_as_text_on_the_plugins_page(attack, tmp_path, monkeypatch):
    attack.tried(
        "a plugin whose name, description and parameter description hold Markdown images and "
        "links, listed and opened in Try it",
        expected="shown as written; no link or image",
    )
    folder = write_lure_plugin(tmp_path / "lure_plugins", f"{IMAGE} see {LINK} or http://evil.example/bare")
    monkeypatch.setenv("FLOWCALL_PLUGIN_DIRS", str(folder))
    app = page("pages/plugins.py")
    app.selectbox(key="plugins:try_tool").select("lure/v1/lure").run()
    assert not app.exception, app.exception
    live = [b for b in markdown_bodies(app) if active_syntax(b)]
    attack.observed(f"{len(live)} Markdown bodies with live link or image syntax")
    assert not live, live[:3]
    assert_inert(app, must_show=[f"Weather {IMAGE} see {LINK}", f"the city {IMAGE}"])


# ------------------------------------------------------------------ (c) where the studio listens


def test_the_studio_listens_on_loopback_and_caps_uploads(attack):
    attack.tried(
        "`streamlit run app.py` without flags, reached from another machine; a huge upload",
        expected="server.address 127.0.0.1, server.maxUploadSize a few MB",
    )
    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server = settings.get("server", {})
    attack.observed(f"server settings: {server}")
    assert server.get("address") == "127.0.0.1"
    assert 1 <= server.get("maxUploadSize", 200) <= 10
    assert settings["browser"]["gatherUsageStats"] is False  # what was there is kept


# ------------------------------------------------------------------ (d) starting a program


def test_the_plugins_page_starts_no_command_before_its_grant(attack, tmp_path):
    attack.tried(
        "the Plugins page's 'attach an MCP server by stdio command' with a command that creates a file",
        expected="the consent panel names the program; Cancel starts nothing; only Grant starts it "
        "(the same grant the Flows page and a flow's run ask for)",
    )
    marker = tmp_path / "started"
    command = shlex.join([sys.executable, "-c", f"import pathlib; pathlib.Path({str(marker)!r}).touch()"])
    app = page("pages/plugins.py")
    app.text_input(key="mcp:name").input("evil")
    app.text_input(key="mcp:command").input(command)
    app.button(key="mcp:connect").click().run()
    assert not app.exception, app.exception
    panel = "\n".join(shown(m.value) for m in [*app.markdown, *app.warning])
    shown_first = marker.exists()
    app.button(key="mcp:b:cancel").click().run()
    cancelled = marker.exists(), len(FlowCall.open().store.list_grants())
    app.button(key="mcp:connect").click().run()
    app.button(key="mcp:b:grant").click().run()
    attack.observed(
        f"panel names the program: {sys.executable in panel}; file after the panel: {shown_first}; "
        f"after Cancel: file {cancelled[0]}, grants {cancelled[1]}; after Grant: file {marker.exists()}"
    )
    assert "nobody on this machine has granted it" in panel and sys.executable in panel
    assert shown_first is False and cancelled == (False, 0)
    assert marker.exists()  # granted by the person: started, as the Flows page would


# ------------------------------------------------------------------ (e) the diagram


def test_the_canvas_keeps_flow_text_as_text(attack):
    attack.tried(
        "a flow whose description, model, tool names and tool_choice hold markup and SVG break-outs "
        "(`</text><script>`, `<img onerror>`, an HTML-like `<b>` label), drawn on the canvas and "
        "downloaded as an SVG picture",
        expected="the canvas gets every text as JSON data (React puts it in the page as text); the SVG "
        "holds only its own rectangles, lines and text, the break-outs escaped inside them",
    )
    breakout = "</text><script>alert(1)</script><text>"
    tool = "own/mcp/t<img src=x onerror=alert(2)>"
    flow = parse_flow(
        {
            "name": "lure-diagram",
            "description": breakout,
            "decision": {"model": "m" + breakout},
            "tools": [tool, "own/mcp/<b>bold</b>"],
            "tool_choice": tool,
            "mcp_servers": [{"name": "own", "url": "http://127.0.0.1:9/mcp"}],
        }
    )
    FlowCall.open().store.save_flow(flow)
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("lure-diagram").run()
    assert not app.exception, app.exception
    component = next(
        e
        for e in app.main
        if getattr(e, "type", "") == "component_instance"
        or "component_instance" in str(getattr(e, "proto", ""))[:200]
    )
    args = json.loads(component.proto.json_args)
    titles = [n.get("title", "") + n.get("subtitle", "") for n in args["nodes"]]
    assert any("<img src=x onerror=alert(2)>" in t for t in titles)  # the text itself, as data
    assert all(
        set(n)
        <= {
            "id",
            "kind",
            "label",
            "x",
            "y",
            "deletable",
            "selected",
            "lines",
            "title",
            "subtitle",
            "group",
            "tooltip",
            "status",
            "badge",
        }
        for n in args["nodes"]
    )  # no HTML field to fill
    svg = flowgraph.to_svg(flowgraph.to_canvas(flow))
    tags = {element.tag.rsplit("}", 1)[-1] for element in ElementTree.fromstring(svg).iter()}
    attack.observed(f"canvas texts as data: {titles[:2]}; SVG elements: {sorted(tags)}")
    assert tags <= {"svg", "rect", "line", "text"}
    assert "&lt;script&gt;" in svg and "<script>" not in svg


# ------------------------------------------------------------------ (f) consent before a run


def marker_server(marker: Path) -> list[str]:
    """FlowCall's test MCP server, behind a command that first creates `marker`: proof it started."""
    code = (
        f"import pathlib, runpy, sys; pathlib.Path({str(marker)!r}).touch(); "
        f"sys.argv = [{SERVER!r}, 'stdio']; runpy.run_path({SERVER!r}, run_name='__main__')"
    )
    return [sys.executable, "-c", code]


def consent_flow(marker: Path) -> Flow:
    return parse_flow(
        {
            "name": "lure-mcp",
            "tools": ["own/mcp/add"],
            "tool_choice": "add",
            "max_rounds": 1,
            "mcp_servers": [{"name": "own", "command": marker_server(marker), "env": {"LURE": "$HOME"}}],
        }
    )


@pytest.fixture
def no_model(tmp_path, monkeypatch):
    # the run after a grant must be quick and the same on every machine: with no model file the
    # decision fails at once, after the run has started the flow's MCP server (which is what counts)
    monkeypatch.setenv("FLOWCALL_MODEL_PATH", str(tmp_path / "absent.gguf"))


def test_the_run_page_asks_before_starting_a_flow_command(attack, tmp_path, no_model):
    attack.tried(
        "Run on a flow whose MCP stdio server command would create a file, nobody having granted it",
        expected="a consent panel lists the exact command and env names; nothing starts until "
        "'Grant and run'; Cancel runs nothing",
    )
    marker = tmp_path / "started"
    flow = consent_flow(marker)
    service = FlowCall.open()
    service.store.save_flow(flow)
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("lure-mcp").run()
    widget(app.text_area, "Question").input("2 + 40?").run()
    widget(app.button, "Run").click().run()
    assert not app.exception, app.exception
    panel = "\n".join(shown(m.value) for m in [*app.markdown, *app.warning])
    assert (
        "would start or reach" in panel
        and json.dumps(flow.mcp_servers[0].command) in panel
        and "LURE" in panel
    )
    shown_first = marker.exists(), len(service.store.list_runs())
    widget(app.button, "Cancel").click().run()
    cancelled = marker.exists(), len(service.store.list_runs()), len(service.store.list_grants())
    assert not any(b.label == "Grant and run" for b in app.button)  # the panel is gone

    widget(app.button, "Run").click().run()
    widget(app.button, "Grant and run").click().run()
    followed(app)  # the run goes on in the studio's runner
    assert not app.exception, app.exception
    grants = service.store.list_grants()
    runs = service.store.list_runs()
    attack.observed(
        f"panel shown: file {shown_first[0]}, runs {shown_first[1]}; after Cancel: file {cancelled[0]}, "
        f"runs {cancelled[1]}, grants {cancelled[2]}; after Grant: file {marker.exists()}, "
        f"runs {len(runs)}, grants {[(g['kind'], g['granted_by']) for g in grants]}"
    )
    assert shown_first == (False, 0) and cancelled == (False, 0, 0)
    assert [(g["kind"], g["granted_by"]) for g in grants] == [("mcp_command", "studio")]
    assert marker.exists() and len(runs) == 1  # granted: the server started and the run is recorded

    marker.unlink()  # granted once: the next run is not asked again
    widget(app.button, "Run").click().run()
    followed(app)
    assert not any(b.label == "Grant and run" for b in app.button)
    assert marker.exists() and len(service.store.list_runs()) == 2


def test_a_grant_missing_at_run_time_shows_the_panel_not_a_traceback(attack, tmp_path, no_model, monkeypatch):
    attack.tried(
        "a grant revoked between the check and the run (the service refuses with TrustRequired)",
        expected="the consent panel, no exception, nothing started",
    )
    marker = tmp_path / "started"
    FlowCall.open().store.save_flow(consent_flow(marker))
    app = page("pages/run.py")
    widget(app.selectbox, "Flow").select("lure-mcp").run()
    widget(app.text_area, "Question").input("2 + 40?").run()
    real = FlowCall.trust_status
    monkeypatch.setattr(
        FlowCall, "trust_status", lambda self, flow: [(item, True) for item, _ in real(self, flow)]
    )
    widget(app.button, "Run").click().run()  # the page thinks all is granted; the service knows better
    monkeypatch.setattr(FlowCall, "trust_status", real)
    app.run()
    attack.observed(
        f"exception: {bool(app.exception)}; panel: {any(b.label == 'Grant and run' for b in app.button)}; "
        f"file created: {marker.exists()}"
    )
    assert not app.exception and not marker.exists()
    assert any(b.label == "Grant and run" for b in app.button)


# ---------------------------------------------------------- (g) the editor keeps what it does not show


def test_saving_in_the_editor_keeps_every_field(attack):
    attack.tried(
        "open a flow with MCP servers, HTTP tools, base URLs, a short-name needs_approval and a "
        "full-version tool_choice in the form view, change the description, save",
        expected="the saved version differs only in the description",
    )
    data = {
        "name": "lure-editor",
        "description": "before",
        "decision": {
            "provider": "openai-compatible",
            "model": "m",
            "base_url": "http://127.0.0.1:9/v1",
            "max_tokens": 77,
        },
        "tools": ["time/v1/get_current_time", "own/mcp/add", "shop/http/getItem"],
        "tool_choice": "time/v1/get_current_time",
        "needs_approval": ["add", "getItem"],
        "tool_timeout_s": 12.0,
        "router_rules": [{"pattern": "time", "tool": "get_current_time"}],
        "mcp_servers": [
            {
                "name": "own",
                "command": [sys.executable, SERVER, "stdio"],
                "env": {"TZ": "$TZ"},
                "trusted": True,
                "call_timeout_s": 7.0,
            }
        ],
        "http_tools": [
            {
                "name": "shop",
                "openapi": "http://127.0.0.1:9/openapi.json",
                "base_url": "http://127.0.0.1:9",
                "operations": ["getItem"],
                "allow_hosts": ["127.0.0.1"],
                "timeout_s": 5.0,
            }
        ],
        "polish": {
            "provider": "openai-compatible",
            "model": "p",
            "base_url": "http://127.0.0.1:8/v1",
            "max_tokens": 55,
            "temperature": 0.3,
        },
    }
    store = FlowCall.open().store
    store.save_flow(parse_flow(data))
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("lure-editor").run()
    app.get("button_group")[0].set_value("Form").run()
    widget(app.text_area, "What this flow does (its description)").input("after").run()
    widget(app.button, "Save").click().run()
    assert not app.exception, app.exception
    saved, _, version = store.get_flow("lure-editor")
    expected = parse_flow({**data, "description": "after"}).model_dump(mode="json")
    lost = {k: v for k, v in expected.items() if saved.model_dump(mode="json").get(k) != v}
    attack.observed(f"version {version}; fields changed other than the description: {sorted(lost)}")
    assert version == 2 and not lost
    # and the editor showed what the flow would start or reach, trusted and allow_hosts plainly
    warning = "\n".join(shown(w.value) for w in app.warning)
    assert "TRUSTED" in warning and "ALLOW_HOSTS" in warning and SERVER in warning and "127.0.0.1" in warning
    assert "http://127.0.0.1:8/v1" in [e.value for e in app.text_input]  # the polish base URL, editable


def test_the_editor_edits_mcp_servers_and_names_a_wrong_field(attack):
    attack.tried(
        "edit a flow's MCP server in its JSON view: first with a wrong field, then a valid change",
        expected="the error names the field and nothing changes; the valid change is applied and saved",
    )
    store = FlowCall.open().store
    store.save_flow(
        parse_flow(
            {
                "name": "lure-servers",
                "tools": ["own/mcp/add"],
                "mcp_servers": [{"name": "own", "url": "http://127.0.0.1:9/mcp"}],
            }
        )
    )
    app = page("pages/flows.py")
    widget(app.selectbox, "Flow").select("lure-servers").run()
    widget(app.button, "MCP server: own").click().run()  # the palette's list of the flow's sources
    box = widget(app.text_area, "The same, as JSON: edit it and apply, if you prefer")
    box.input('{"name": "own", "url": "http://127.0.0.1:9/mcp", "trusted": "very"}')
    widget(app.button, "Apply JSON").click().run()
    errors = [shown(e.value) for e in app.error]
    unchanged = store.get_flow("lure-servers")[0].mcp_servers[0].trusted
    widget(app.text_area, "The same, as JSON: edit it and apply, if you prefer").input(
        '{"name": "own", "url": "http://127.0.0.1:9/mcp", "trusted": true}'
    )
    widget(app.button, "Apply JSON").click().run()
    widget(app.button, "Apply").click().run()
    widget(app.button, "Save").click().run()
    saved = store.get_flow("lure-servers")[0]
    attack.observed(
        f"errors {errors}; trusted before the fix {unchanged}; saved trusted {saved.mcp_servers[0].trusted}"
    )
    assert any("Trusted" in e or "trusted" in e for e in errors) and unchanged is False
    assert saved.mcp_servers[0].trusted is True


# ------------------------------------------------------------------ (h) imports never replace


def test_importing_a_flow_with_a_saved_name_leaves_the_saved_flow_alone(attack):
    attack.tried(
        "upload a flow file named like a saved flow (current-time) but attaching an MCP command",
        expected="the saved flow keeps its version and content; the upload is stored under a new "
        "name, and the page says so",
    )
    store = FlowCall.open().store
    app = page("pages/flows.py")  # seeds the example flows
    before, _, before_version = store.get_flow("current-time")
    lure = {
        **before.model_dump(mode="json"),
        "description": "replaced",
        "mcp_servers": [{"name": "own", "command": ["sh", "-c", "touch /tmp/pwned"]}],
        "tools": [*before.tools, "own/mcp/add"],
    }
    app.get("file_uploader")[0].set_value(
        ("current-time.json", json.dumps(lure).encode(), "application/json")
    )
    app.run()
    assert not app.exception, app.exception
    after, _, after_version = store.get_flow("current-time")
    names = [f["name"] for f in store.list_flows()]
    said = [shown(w.value) for w in app.warning]
    attack.observed(
        f"current-time: version {before_version} -> {after_version}, unchanged {after == before}; "
        f"flows: {names}; warnings: {said}"
    )
    assert after == before and after_version == before_version
    assert (
        "current-time-imported" in names
        and store.get_flow("current-time-imported")[0].description == "replaced"
    )
    assert any("current-time-imported" in w and "unchanged" in w for w in said)


def test_importing_a_run_whose_flow_name_is_taken_says_where_its_flow_went(attack):
    attack.tried(
        "import a run file whose flow is named like a saved flow but differs",
        expected="the saved flow is unchanged and the Runs page says under which name the run's flow is",
    )
    service = FlowCall.open()
    app = page("pages/runs.py")
    before = service.store.get_flow("current-time")
    flow = {**before[0].model_dump(mode="json"), "description": "replaced"}
    data = attack_run(id="imported", flow_name="current-time", final_answer="ok")
    data["flow"] = flow
    app.get("file_uploader")[0].set_value(("run.json", json.dumps(data).encode(), "application/json"))
    app.run()
    assert not app.exception, app.exception
    said = [shown(w.value) for w in app.warning]
    attack.observed(
        f"warnings: {said}; saved flow unchanged: {service.store.get_flow('current-time') == before}"
    )
    assert service.store.get_flow("current-time") == before
    assert any("current-time-imported" in w for w in said)
