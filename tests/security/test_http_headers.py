"""An HTTP source's own headers (an API key header): a flow file never holds the key, only a
reference read when the request is made; the model cannot replace it; it never follows a
redirect to another host; a header cannot smuggle a second line or reroute the request; the
consent says which secret goes where, and a changed header needs a new grant. Against a real
HTTP server on 127.0.0.1."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

import pytest

from flowcall.core.errors import ConfigError
from flowcall.core.spec import HTTPToolSource, parse_flow
from flowcall.store.repository import Store
from flowcall.tools.base import RunContext
from flowcall.tools.openapi_tools import HTTPToolError, tools_from_openapi
from flowcall.tools.sources import trust_items, ungranted
from tests.tools.test_openapi_tools import Handler as OpenAPIHandler

CTX = RunContext(run_id="t")
SEEN: list[dict[str, str]] = []


class Handler(OpenAPIHandler):  # its quiet log and its _send(status, payload, content_type, headers)
    def do_GET(self):
        port = self.server.server_address[1]
        if self.path == "/openapi.json":
            return self._send(
                200,
                {
                    "openapi": "3.0.3",
                    "info": {"title": "keys", "version": "1"},
                    "paths": {
                        "/whoami": {
                            "get": {
                                "operationId": "whoami",
                                "parameters": [
                                    {"name": "x-api-key", "in": "header", "schema": {"type": "string"}}
                                ],
                            }
                        },
                        "/away": {"get": {"operationId": "away"}},
                    },
                },
            )
        SEEN.append({k.lower(): v for k, v in self.headers.items()})
        if self.path == "/away":  # the same machine under another name: another origin
            return self._send(302, {}, headers={"Location": f"http://localhost:{port}/whoami"})
        return self._send(
            200, {"key": self.headers.get("X-Api-Key"), "auth": self.headers.get("Authorization")}
        )


@pytest.fixture(scope="module")
def base():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def keyed(base: str, **headers: str) -> HTTPToolSource:
    return HTTPToolSource(
        name="keys",
        openapi=f"{base}/openapi.json",
        base_url=base,
        allow_hosts=["127.0.0.1", "localhost"],
        headers=headers,
    )


def test_a_flow_file_with_the_key_itself_is_refused_and_a_reference_is_taken(attack):
    attack.tried(
        "a shared flow whose HTTP source sends 'Authorization: Bearer <the key itself>'",
        expected="refused on load, naming the header; $VAR and 'Bearer $VAR' are taken",
    )
    literal = {
        "name": "leaky",
        "http_tools": [
            {
                "name": "keys",
                "openapi": "https://x.example/openapi.json",
                "headers": {"Authorization": "Bearer hunter2-not-a-ref"},
            }
        ],
    }
    with pytest.raises(ConfigError, match=r"http_tools\[0\]\.headers\.Authorization") as refused:
        parse_flow(literal)
    attack.observed(str(refused.value)[:160])
    for value in ("$THINGS_KEY", "Bearer $THINGS_KEY"):
        parse_flow(
            {**literal, "http_tools": [{**literal["http_tools"][0], "headers": {"Authorization": value}}]}
        )


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("X-Trace", "a\r\nX-Injected: 1", "one line"),
        ("Host", "internal.example", "framed or routed"),
        ("Transfer-Encoding", "chunked", "framed or routed"),
        ("X Bad Name", "1", "not a header name"),
    ],
)
def test_a_header_cannot_add_a_line_or_reroute_the_request(
    attack, name: str, value: str, problem: str
) -> None:
    attack.tried(f"an HTTP source header {name}: {value!r}", expected="refused on load, saying why")
    with pytest.raises(ConfigError, match=problem) as refused:
        parse_flow(
            {
                "name": "odd",
                "http_tools": [
                    {"name": "keys", "openapi": "https://x.example/o.json", "headers": {name: value}}
                ],
            }
        )
    attack.observed(str(refused.value)[:160])


def test_the_reference_is_read_when_the_request_is_made_and_the_model_cannot_replace_it(
    attack, base, monkeypatch
):
    attack.tried(
        "the model fills the document's own x-api-key header parameter to replace the flow's key; "
        "the key's variable unset",
        expected="the flow's key is sent; unset, nothing is sent",
    )
    tools = {
        t.name: t
        for t in tools_from_openapi(
            keyed(base, **{"X-Api-Key": "$THINGS_KEY", "Authorization": "Bearer $THINGS_TOKEN"})
        )
    }
    monkeypatch.delenv("THINGS_KEY", raising=False)
    monkeypatch.delenv("THINGS_TOKEN", raising=False)
    with pytest.raises(HTTPToolError, match=r"reads \$THINGS_KEY, which is not set"):
        tools["whoami"].invoke({}, CTX)  # never an empty credential sent
    monkeypatch.setenv("THINGS_KEY", "k-123")
    monkeypatch.setenv("THINGS_TOKEN", "t-456")
    # the model fills the document's own x-api-key parameter: the flow's header wins, in any case
    answer = tools["whoami"].invoke({"x-api-key": "model-chosen"}, CTX)
    assert answer == {"key": "k-123", "auth": "Bearer t-456"}
    assert SEEN[-1]["x-api-key"] == "k-123"
    attack.observed(f"the server saw x-api-key {SEEN[-1]['x-api-key']!r}")


def test_the_key_does_not_follow_a_redirect_to_another_host(attack, base, monkeypatch):
    attack.tried("the API answers 302 to another origin", expected="the key goes to the flow's host only")
    monkeypatch.setenv("THINGS_KEY", "k-123")
    away = {t.name: t for t in tools_from_openapi(keyed(base, **{"X-Api-Key": "$THINGS_KEY"}))}["away"]
    SEEN.clear()
    answer = away.invoke({}, CTX)
    assert SEEN[0]["x-api-key"] == "k-123"  # to the host the flow named
    assert "x-api-key" not in SEEN[1] and answer["key"] is None  # not to the one it was sent on to
    attack.observed(f"first host saw the key: {'x-api-key' in SEEN[0]}; the other: {'x-api-key' in SEEN[1]}")


def test_the_consent_names_the_secret_and_a_changed_header_needs_a_new_grant(base, tmp_path):
    flow = parse_flow(
        {
            "name": "keyed",
            "tools": ["keys/http/whoami"],
            "http_tools": [keyed(base, **{"X-Api-Key": "$THINGS_KEY"}).model_dump(mode="json")],
        }
    )
    [document] = [i for i in trust_items(flow) if i.kind == "openapi"]
    assert "X-Api-Key" in document.summary and "THINGS_KEY" in document.summary
    store = Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store.grant(trust_items(flow), by="test")
    assert ungranted(flow, store) == []
    moved = parse_flow(
        {
            **flow.model_dump(mode="json"),
            "http_tools": [keyed(base, **{"X-Api-Key": "$OTHER_SECRET"}).model_dump(mode="json")],
        }
    )
    assert [i.kind for i in ungranted(moved, store)] == ["openapi", "allow_host", "allow_host"]
