"""Attacks on the studio's server and on what it draws and stores: a web page that reaches the
studio under its own host name (DNS rebinding) or from its own origin, a page that frames the
studio to steer a click, a model name with control characters in the flow picture, and a flow
file whose name only looks like a saved flow's.

The studio is started for real, the two ways a person starts it: `flowcall studio` from a folder
with no `.streamlit/` (as from the installed wheel) and `streamlit run app.py` in the clone.
Every request goes over HTTP (or a raw websocket handshake) to 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import tomllib
from contextlib import ExitStack, chdir
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

import httpx
import pytest

from flowcall.core.errors import ConfigError
from flowcall.core.spec import Flow, parse_flow
from flowcall.service.front import FlowCall
from flowcall.studio import flowgraph
from tests.local_servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
FLOWCALL = str(Path(sys.executable).with_name("flowcall"))
EVIL = "evil.example"


def start_argv(way: str, port: int) -> list[str]:
    if way == "flowcall studio":
        return [FLOWCALL, "studio", "--port", str(port)]
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ROOT / "app.py"),
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]


@pytest.fixture(scope="module", params=["flowcall studio", "streamlit run app.py"])
def studio(request, tmp_path_factory):
    """The studio on a free port of 127.0.0.1: `flowcall studio` run from an empty folder (no
    `.streamlit/config.toml` there, as for the installed wheel), or `streamlit run app.py`."""
    home = tmp_path_factory.mktemp("studio")
    port = free_port()
    env = {
        **os.environ,
        "FLOWCALL_DATABASE_URL": f"sqlite:///{home / 'flowcall.db'}",
        "FLOWCALL_HOME": str(home),
    }
    env.pop("FLOWCALL_STUDIO_HOSTS", None)
    cwd = home if request.param == "flowcall studio" else ROOT
    url = f"http://127.0.0.1:{port}"
    argv = start_argv(request.param, port)
    with ExitStack() as stack:
        with chdir(cwd):  # serving() starts the process in the folder it is in
            proc = stack.enter_context(
                serving(
                    argv,
                    f"{url}/_stcore/health",
                    home / "studio.log",
                    within_s=90,
                    name="the studio",
                    env=env,
                )
            )
        yield SimpleNamespace(url=url, port=port, way=request.param, pid=proc.pid)


def handshake(port: int, *, host: str, origin: str | None) -> int:
    """A websocket upgrade of the studio's stream (/_stcore/stream), as a browser sends it; the
    HTTP status of the answer (101: the websocket is open, the studio's session would start)."""
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /_stcore/stream HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
        *([f"Origin: {origin}"] if origin is not None else []),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0


def frame_headers(response: httpx.Response) -> tuple[str, str]:
    return response.headers.get("x-frame-options", ""), response.headers.get("content-security-policy", "")


# ------------------------------------------------------------------ (a) DNS rebinding: a foreign host name


def test_a_foreign_host_name_gets_no_studio(attack, studio):
    attack.tried(
        f"{studio.way}: a page on {EVIL} whose name now resolves to 127.0.0.1 asks for the studio "
        f"(Host: {EVIL}) — its page, its health and host-config endpoints",
        expected="403 for every path under the foreign name; the studio's own names still answer",
    )
    paths = ["/", "/_stcore/health", "/_stcore/host-config", "/flows"]
    foreign = {p: httpx.get(studio.url + p, headers={"Host": f"{EVIL}:{studio.port}"}) for p in paths}
    own = {p: httpx.get(studio.url + p).status_code for p in paths[:2]}
    named = httpx.get(f"http://localhost:{studio.port}/_stcore/health").status_code
    attack.observed(
        f"foreign Host: { ({p: r.status_code for p, r in foreign.items()}) }; own: {own}, localhost: {named}"
    )
    assert all(r.status_code == 403 for r in foreign.values())
    assert not any('id="root"' in r.text for r in foreign.values())  # no Streamlit page
    assert own == {"/": 200, "/_stcore/health": 200} and named == 200


def test_a_websocket_under_a_foreign_host_name_is_refused(attack, studio):
    attack.tried(
        f"{studio.way}: the rebinding page opens the studio's websocket, as its browser sends it "
        f"(Host and Origin both {EVIL}: 'same origin' to a naive check)",
        expected="the upgrade is refused (no 101): no studio session starts",
    )
    rebound = handshake(studio.port, host=f"{EVIL}:{studio.port}", origin=f"http://{EVIL}:{studio.port}")
    bare = handshake(studio.port, host=EVIL, origin=None)
    attack.observed(f"Host+Origin {EVIL}: {rebound}; Host {EVIL}, no Origin: {bare}")
    assert rebound != 101 and bare != 101


# ------------------------------------------------------------------ (b) another origin


def test_a_websocket_from_another_origin_is_refused(attack, studio):
    attack.tried(
        f"{studio.way}: pages of other origins open the studio's websocket with the right Host: "
        "another site, another local port (another app on this machine), a sandboxed frame (null)",
        expected="each upgrade is refused; the studio's own origin, and a client that sends no "
        "Origin (not a browser), still connect",
    )
    host = f"127.0.0.1:{studio.port}"
    origins = [f"http://{EVIL}", f"http://localhost:{free_port()}", f"http://127.0.0.1:{free_port()}", "null"]
    refused = {origin: handshake(studio.port, host=host, origin=origin) for origin in origins}
    own = handshake(studio.port, host=host, origin=f"http://{host}")
    named = handshake(studio.port, host=f"localhost:{studio.port}", origin=f"http://localhost:{studio.port}")
    none = handshake(studio.port, host=host, origin=None)
    attack.observed(f"foreign origins: {refused}; own: {own}; localhost: {named}; no Origin: {none}")
    assert all(status != 101 for status in refused.values())
    assert own == 101 and named == 101 and none == 101


def test_a_request_from_another_origin_is_refused(attack, studio):
    attack.tried(
        f"{studio.way}: a script on another origin sends requests to the studio (a fetch, a CORS "
        "preflight, an upload's PUT) with the right Host",
        expected="403 for each; the same requests from the studio's own origin are not refused by the guard",
    )
    bad = {"Origin": f"http://localhost:{free_port()}"}
    fetched = httpx.get(f"{studio.url}/_stcore/health", headers=bad)
    preflight = httpx.options(
        f"{studio.url}/_stcore/upload_file/x/y", headers={**bad, "Access-Control-Request-Method": "PUT"}
    )
    put = httpx.put(f"{studio.url}/_stcore/upload_file/x/y", headers=bad, content=b"x")
    own = httpx.get(f"{studio.url}/_stcore/health", headers={"Origin": studio.url})
    attack.observed(
        f"foreign: GET {fetched.status_code}, OPTIONS {preflight.status_code}, PUT {put.status_code}; "
        f"own GET {own.status_code}"
    )
    assert (fetched.status_code, preflight.status_code, put.status_code) == (403, 403, 403)
    assert own.status_code == 200


# ------------------------------------------------------------------ (c) framing


def test_no_page_of_the_studio_can_be_framed_by_another_site(attack, studio):
    attack.tried(
        f"{studio.way}: another site frames the studio to make a person click its Grant button "
        "through a decoy (clickjacking)",
        expected="every response says X-Frame-Options: DENY and frame-ancestors 'none' (its own "
        "component frames: SAMEORIGIN and 'self', framed only by the studio itself)",
    )
    paths = ["/", "/flows", "/_stcore/health", "/_stcore/host-config", "/no/such/page"]
    seen = {p: frame_headers(httpx.get(studio.url + p)) for p in paths}
    seen["refused"] = frame_headers(httpx.get(studio.url + "/", headers={"Host": EVIL}))
    index = httpx.get(studio.url + "/").text
    asset = next(
        part.split('"')[0] for part in index.split('src="')[1:] if part.startswith(("./static", "/static"))
    )
    seen["asset"] = frame_headers(httpx.get(f"{studio.url}/{asset.lstrip('./')}"))
    component = frame_headers(
        httpx.get(f"{studio.url}/component/flowcall.studio.canvas.flowcall_canvas/index.html")
    )
    attack.observed(f"(X-Frame-Options, CSP) per path: {seen}; a component of its own: {component}")
    for path, (xfo, csp) in seen.items():
        assert xfo == "DENY" and "frame-ancestors 'none'" in csp, (path, xfo, csp)
    assert component[0] == "SAMEORIGIN" and "frame-ancestors 'self'" in component[1]


# ------------------------------------------------------------------ (d) the installed wheel's settings


def test_the_studio_runs_with_its_settings_however_it_starts(attack, studio):
    attack.tried(
        f"{studio.way}; `flowcall studio` started where no .streamlit/config.toml is (the installed "
        "wheel): uploads uncapped, the Deploy toolbar, usage statistics, XSRF protection left to chance",
        expected="address 127.0.0.1, maxUploadSize 5, toolbarMode minimal, gatherUsageStats false, XSRF "
        "protection on, the agent API off: as flags of `flowcall studio`'s server, and in the clone's "
        "config.toml for `streamlit run app.py`",
    )
    wanted = {
        "server.address": "127.0.0.1",
        "server.maxUploadSize": "5",
        "client.toolbarMode": "minimal",
        "browser.gatherUsageStats": "false",
        "server.enableXsrfProtection": "true",
        "server.enableAgentApi": "false",
    }
    if studio.way == "flowcall studio":  # what the server process was started with
        argv = [a.decode() for a in Path(f"/proc/{studio.pid}/cmdline").read_bytes().split(b"\0")]
        given = {a.removeprefix("--"): b for a, b in pairwise(argv) if a.startswith("--")}
    else:
        settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
        given = {f"{s}.{k}": str(v).lower() for s, keys in settings.items() for k, v in keys.items()}
    seen = {k: given.get(k) for k in wanted}
    attack.observed(f"the server's settings: {seen}")
    assert seen == wanted


# ------------------------------------------------------------------ (e) the flow picture


def test_control_characters_in_a_model_name_leave_the_svg_valid(attack):
    attack.tried(
        "a flow whose model name, description and tool names hold control characters (\\x01, "
        "\\x1b, \\x0c, \\x1f), U+FFFE and a lone surrogate, downloaded as its SVG picture",
        expected="the SVG parses as XML; each such character is shown as a visible \\uXXXX escape",
    )
    odd = "m\x01o\x1bd[2J\x0ce\x1fl\ufffe\ud800"
    flow = Flow(name="odd-chars", description=odd, decision={"model": odd}, polish={"model": odd})
    svg = flowgraph.to_svg(flowgraph.to_canvas(flow))
    try:
        ElementTree.fromstring(svg)
        parsed = "parses"
    except (ElementTree.ParseError, UnicodeError) as exc:  # a lone surrogate cannot even be encoded
        parsed = f"{type(exc).__name__}: {exc}"
    escaped = "\\u001b" in svg
    attack.observed(f"SVG: {parsed}; the escape shown as text: {escaped}")
    assert parsed == "parses"
    assert "\\u0001" in svg and "\\u001b" in svg


# ------------------------------------------------------------------ (f) look-alike flow names


def test_a_name_with_a_trailing_space_or_dot_is_refused(attack):
    attack.tried(
        "flow files named 'commute-weather ' / 'commute-weather.' / ' commute-weather' / "
        "'.commute-weather' beside the saved 'commute-weather'",
        expected="each is refused with a message that says names do not start or end with a space or dot",
    )
    said = {}
    for name in ["commute-weather ", "commute-weather.", " commute-weather", ".commute-weather", "a. "]:
        try:
            parse_flow(json.dumps({"name": name}), source="shared.json")
            said[name] = "accepted"
        except ConfigError as exc:
            said[name] = str(exc)
    attack.observed(f"{ {k: v[:120] for k, v in said.items()} }")
    assert all("space or a dot" in message for message in said.values()), said
    for fine in ["commute-weather", "北京天气", "v1.2", "my flow"]:  # what people write stays allowed
        assert parse_flow(json.dumps({"name": fine})).name == fine


def test_a_flow_saved_before_the_name_rule_still_lists_and_opens(tmp_path):
    """A store written by an earlier FlowCall may hold 'weather.': it is read back as it was saved
    (nothing stored is lost), while a new flow of that name is refused."""
    from flowcall.store.repository import Store

    store = Store.open(f"sqlite:///{tmp_path / 'old.db'}")
    old = Flow.model_validate({"name": "weather."}, context={"stored": True})
    store.save_flow(old)
    assert [f.name for f in store.latest_flows()] == ["weather."]
    assert store.get_flow("weather.")[0].name == "weather."
    with pytest.raises(ConfigError, match="space or a dot"):
        parse_flow(json.dumps({"name": "weather."}))


LOOK_ALIKES = {
    "Cyrillic а for Latin a": "commute-weаther",
    "Greek ο for Latin o": "cοmmute-weather",
    "fullwidth letters": "ｃｏｍｍｕｔｅ-weather",
    "letter case": "Commute-Weather",
    "a compatibility ligature (NFKC)": "proﬁle-flow",
}


@pytest.mark.parametrize("kind", LOOK_ALIKES)
def test_a_look_alike_flow_name_is_stored_with_a_note(attack, kind):
    name = LOOK_ALIKES[kind]
    saved = "profile-flow" if "NFKC" in kind else "commute-weather"
    attack.tried(
        f"a flow file named {name!r} ({kind}) imported beside the saved flow {saved!r}: in a list or "
        "a command it reads as the saved flow",
        expected=f"stored (a name of its own), with a note that says it looks like the saved {saved!r}; "
        "the saved flow is unchanged",
    )
    service = FlowCall.open()
    service.store.save_flow(Flow(name=saved, description="the real one"))
    adopted = service.adopt(Flow.model_validate({"name": name, "description": "lure"}))
    attack.observed(f"stored as {adopted.flow.name!r}; note: {adopted.note!r}")
    assert adopted.note and f"looks like the saved flow {saved!r}" in adopted.note
    assert service.store.get_flow(saved)[0].description == "the real one"


def test_a_different_name_gets_no_note(attack):
    attack.tried(
        "names that only share letters or scripts with a saved one: 北京天气 beside 上海天气, "
        "commute-weather-2 beside commute-weather",
        expected="stored with no note (a note is for names that read the same)",
    )
    service = FlowCall.open()
    service.store.save_flow(Flow(name="上海天气"))
    service.store.save_flow(Flow(name="commute-weather"))
    notes = {n: service.adopt(Flow(name=n)).note for n in ["北京天气", "commute-weather-2"]}
    attack.observed(f"notes: {notes}")
    assert notes == {"北京天气": None, "commute-weather-2": None}


def test_flowcall_flows_import_says_a_name_looks_like_a_saved_one(attack, tmp_path):
    attack.tried(
        "`flowcall flows import lure.json` where lure.json is named 'cоmmute-weather' (a Cyrillic о) "
        "and the example 'commute-weather' is saved",
        expected="imported under its own name; the output says it looks like the saved 'commute-weather'",
    )
    lure = tmp_path / "lure.json"
    lure.write_text(json.dumps({"name": "cоmmute-weather", "description": "lure"}), encoding="utf-8")
    env = {**os.environ, "FLOWCALL_DATABASE_URL": f"sqlite:///{tmp_path / 'flowcall.db'}"}
    # `flows list` seeds the example flows, commute-weather among them
    subprocess.run([FLOWCALL, "flows", "list"], env=env, capture_output=True, check=True)
    done = subprocess.run(
        [FLOWCALL, "flows", "import", str(lure)], env=env, capture_output=True, text=True, check=False
    )
    attack.observed(f"exit {done.returncode}; said: {(done.stdout + done.stderr).strip()!r}")
    assert done.returncode == 0
    assert "looks like the saved flow 'commute-weather'" in done.stderr


def test_allow_host_adds_a_name_the_studio_answers(tmp_path):
    """A name of one's own (a reverse proxy, a LAN name) is added with --allow-host, and only it."""
    port = free_port()
    env = {**os.environ, "FLOWCALL_DATABASE_URL": f"sqlite:///{tmp_path / 'flowcall.db'}"}
    argv = [FLOWCALL, "studio", "--port", str(port), "--allow-host", "studio.lan"]
    url = f"http://127.0.0.1:{port}"
    with (
        chdir(tmp_path),
        serving(argv, f"{url}/_stcore/health", tmp_path / "log", within_s=90, name="studio", env=env),
    ):
        named = httpx.get(url + "/", headers={"Host": f"studio.lan:{port}"}).status_code
        other = httpx.get(url + "/", headers={"Host": f"other.lan:{port}"}).status_code
        socket_ok = handshake(port, host=f"studio.lan:{port}", origin=f"http://studio.lan:{port}")
    assert (named, other, socket_ok) == (200, 403, 101)
