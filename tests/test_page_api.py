"""The API page with Streamlit's AppTest on the test's SQLite file: a flow's endpoints and
snippets, quoted for where they go; a key made in the page, shown once, revoked."""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowcall.core.spec import Flow
from flowcall.service.front import FlowCall
from flowcall.studio.api_snippets import path_segment, runs_url
from flowcall.studio.shared import NEW_KEY_STATE
from tests.test_page_models import everything_shown
from tests.test_studio import page as studio_page
from tests.test_studio import shown, widget

ROOT = Path(__file__).resolve().parents[1]
FLOW = "my weather. flow-1"  # what a flow name may hold besides letters: spaces, dots, dashes
QUESTION = """it's "raining" $(rm -rf ~) `id` \\ 天气"""


@pytest.fixture(autouse=True)
def _flows(monkeypatch) -> None:
    monkeypatch.delenv("FLOWCALL_API_URL", raising=False)
    store = FlowCall.open().store
    for name in (FLOW, "lookup"):
        store.save_flow(Flow(name=name))


def open_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "api.py"), default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def codes(at: AppTest) -> list[str]:
    return [code.value for code in at.code]


def create(at: AppTest, name: str, flows: list[str] | None = None) -> AppTest:
    widget(at.text_input, "Name").input(name)
    if flows:
        widget(at.multiselect, "Flows").set_value(flows)
    widget(at.button, "Create key").click().run()
    assert not at.exception, at.exception
    return at


def test_snippets_quote_the_flow_name_and_the_question():
    at = open_page()
    assert at.title[0].value == "API" and "flowcall serve" in at.caption[0].value
    assert widget(at.text_input, "Server address").value == "http://127.0.0.1:8000"
    widget(at.selectbox, "Flow").select(FLOW).run()
    widget(at.text_input, "Question in the examples").input(QUESTION).run()
    endpoints, curl_run, curl_chat, python = codes(at)[1:5]  # after the serve command

    url = "http://127.0.0.1:8000/v1/flows/my%20weather.%20flow-1/runs"
    assert f"POST {url}" in endpoints and "GET  http://127.0.0.1:8000/v1/models" in endpoints
    assert f'model "{FLOW}"' in endpoints
    # each curl line, read back as a shell reads it, gives exactly the URL and body meant
    run_words = shlex.split(curl_run.replace("\\\n", " "))
    assert run_words[:4] == ["curl", "-X", "POST", url]
    assert json.loads(run_words[run_words.index("-d") + 1]) == {"question": QUESTION}
    assert "Authorization: Bearer <your key>" in run_words
    chat_words = shlex.split(curl_chat.replace("\\\n", " "))
    assert chat_words[3] == "http://127.0.0.1:8000/v1/chat/completions"
    assert json.loads(chat_words[chat_words.index("-d") + 1]) == {
        "model": FLOW,
        "messages": [{"role": "user", "content": QUESTION}],
    }
    # the Python snippet parses, and its literals are exactly the flow's name and the question
    call = next(
        node
        for node in ast.walk(ast.parse(python))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "create"
    )
    arguments = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    assert arguments == {"model": FLOW, "messages": [{"role": "user", "content": QUESTION}]}
    assert 'OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="<your key>")' in python


def test_the_server_address_comes_from_the_environment_and_the_field(monkeypatch):
    monkeypatch.setenv("FLOWCALL_API_URL", "https://flows.example.com/")
    at = open_page()
    assert (
        "POST https://flows.example.com/v1/flows/lookup/runs" in codes(at)[1]
    )  # flows by name: lookup first
    widget(at.text_input, "Server address").input("http://10.0.0.5:9000 ; id").run()
    assert (
        "curl -X POST 'http://10.0.0.5:9000 ; id/v1/flows/" in codes(at)[2]
    )  # quoted: one word, never a command
    assert not any("should start with http" in w.value for w in at.warning)
    widget(at.text_input, "Server address").input("flows.local:8000").run()
    assert any("should start with http" in w.value for w in at.warning)


def test_a_key_made_in_the_page_is_shown_once_then_revoked():
    at = create(open_page(), "studio key", [FLOW])
    [secret] = [code for code in codes(at) if code.startswith("fc_")]
    assert any("will not be shown again" in shown(w.value) for w in at.warning)
    listed = at.dataframe[0].value
    assert list(listed["name"]) == ["studio key"] and list(listed["flows"]) == [FLOW]
    assert list(listed["prefix"]) == [f"fc_{secret[3:11]}"]
    app = FlowCall.open()
    assert app.check_key(secret).allows(FLOW) and not app.check_key(secret).allows("lookup")

    widget(at.selectbox, "Flow").select("lookup").run()  # still there while the person stays on the page
    assert secret in codes(at)
    widget(at.button, "I have copied it: hide the key").click().run()
    assert secret not in everything_shown(at) and NEW_KEY_STATE not in at.session_state
    assert secret[3:11] in everything_shown(at)  # the prefix stays, in the list

    at.button(key=f"api:revoke:{secret[3:11]}:studio key").click().run()
    assert not at.exception
    assert "Revoked studio key." in shown(at.success[0].value)
    assert app.check_key(secret) is None
    assert at.dataframe[0].value["revoked"][0].endswith("UTC")
    assert not [b for b in at.button if b.label == "Revoke"]


def test_bad_input_is_refused_in_the_form():
    at = create(open_page(), "")
    assert "a key needs a name" in shown(at.error[0].value)
    assert not [code for code in codes(at) if code.startswith("fc_")]
    at = create(open_page(), "dup")
    at = create(open_page(), "dup")
    assert "a key named 'dup' exists and is not revoked" in shown(at.error[0].value)


def test_an_empty_flow_choice_makes_a_key_for_every_flow():
    at = create(open_page(), "everything")
    assert list(at.dataframe[0].value["flows"]) == ["every flow"]
    assert FlowCall.open().list_keys()[0].flows is None


def test_the_key_is_dropped_when_another_page_opens():
    app = studio_page("pages/api.py")
    create(app, "leaving")
    assert NEW_KEY_STATE in app.session_state
    app.switch_page("pages/models.py")
    app.run()
    assert NEW_KEY_STATE not in app.session_state
    app.switch_page("pages/api.py")
    app.run()
    assert not [code for code in codes(app) if code.startswith("fc_")]


def test_a_name_of_dots_is_encoded_so_no_client_resolves_it_away():
    assert path_segment("..") == "%2E%2E" and path_segment(".") == "%2E"
    assert path_segment("v1.2 beta") == "v1.2%20beta" and path_segment("a/b?c#d") == "a%2Fb%3Fc%23d"
    assert runs_url("http://h:1/", "..") == "http://h:1/v1/flows/%2E%2E/runs"


def test_the_server_address_stays_and_the_page_gives_the_exact_serve_command():
    """Typed once, the address is still there after another page; the command to start the
    server names this studio's own flowcall, its database, and the address's host and port."""
    import sys

    app = studio_page("pages/api.py")
    widget(app.text_input, "Server address").input("http://127.0.0.1:9100").run()
    app.switch_page("pages/models.py")
    app.run()
    app.switch_page("pages/api.py")
    app.run()
    assert widget(app.text_input, "Server address").value == "http://127.0.0.1:9100"
    line = next(code for code in codes(app) if " serve " in code)
    words = shlex.split(line)
    database = FlowCall.open().store.engine.url.render_as_string(hide_password=True)
    assert words[0] == f"FLOWCALL_DATABASE_URL={database}"
    assert Path(words[1]).parent == Path(sys.executable).parent  # the venv's own program
    assert words[-5:] == ["serve", "--host", "127.0.0.1", "--port", "9100"]
