"""What the studio's API page shows for a flow: its HTTP endpoints, and curl and OpenAI-SDK
snippets that call it. A flow's name, the question and the server address are the person's
text, so every one is quoted for where it goes: percent-encoded in a URL path, shlex-quoted on a
shell line, json.dumps'd in a JSON body or a Python string literal (with ensure_ascii=False a
JSON string is a valid Python literal of the same value: JSON's escapes are all Python's, and no
character beyond the BMP is written as a surrogate pair)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
BASE_URL_VARIABLE = "FLOWCALL_API_URL"
KEY_PLACEHOLDER = "<your key>"


def default_base_url() -> str:
    return os.environ.get(BASE_URL_VARIABLE, "").strip() or DEFAULT_BASE_URL


def base_url(given: str) -> str:
    """The server address as typed, without the trailing slash the paths bring."""
    return given.strip().rstrip("/") or DEFAULT_BASE_URL


def flowcall_program() -> list[str]:
    """How to start this studio's own FlowCall: the `flowcall` beside this Python (its venv),
    else this Python with the CLI module."""
    beside = Path(sys.executable).with_name("flowcall")
    return [str(beside)] if beside.is_file() else [sys.executable, "-m", "flowcall.cli.main"]


def serve_line(given: str, database_url: str) -> str:
    """The shell line that starts `flowcall serve` for this studio: its own program, its
    database (a password in the URL left out, to be filled in), the address's host and port."""
    address = urlsplit(base_url(given))
    try:
        port = address.port or (443 if address.scheme == "https" else 80)
    except ValueError:  # a port that is not a number: the default one
        port = urlsplit(DEFAULT_BASE_URL).port
    host = address.hostname or "127.0.0.1"
    command = [*flowcall_program(), "serve", "--host", host, "--port", str(port)]
    return f"FLOWCALL_DATABASE_URL={shlex.quote(database_url)} " + shlex.join(command)


def path_segment(name: str) -> str:
    """A flow name as one URL path segment. A name of dots alone is encoded too: curl and most
    clients would resolve a literal "." or ".." segment instead of sending it."""
    encoded = quote(name, safe="")
    return encoded.replace(".", "%2E") if set(name) == {"."} else encoded


def _literal(value: object) -> str:
    """JSON text; for a string, also a Python string literal of the same value."""
    return json.dumps(value, ensure_ascii=False)


def runs_url(base: str, flow: str) -> str:
    return f"{base_url(base)}/v1/flows/{path_segment(flow)}/runs"


def endpoints(base: str, flow: str) -> str:
    """The three endpoints a program uses for this flow, one a line."""
    base = base_url(base)
    return "\n".join(
        [
            f"POST {runs_url(base, flow)}    body {_literal({'question': '...'})}",
            f"POST {base}/v1/chat/completions    model {_literal(flow)}",
            f"GET  {base}/v1/models",
        ]
    )


def _curl(url: str, body: dict) -> str:
    return "\n".join(
        [
            f"curl -X POST {shlex.quote(url)} \\",
            f"  -H {shlex.quote('Authorization: Bearer ' + KEY_PLACEHOLDER)} \\",
            "  -H 'Content-Type: application/json' \\",
            f"  -d {shlex.quote(_literal(body))}",
        ]
    )


def curl_run(base: str, flow: str, question: str) -> str:
    """curl for POST /v1/flows/{flow}/runs: the run, when it ends."""
    return _curl(runs_url(base, flow), {"question": question})


def curl_chat(base: str, flow: str, question: str) -> str:
    """curl for POST /v1/chat/completions with the flow's name as the model."""
    return _curl(
        f"{base_url(base)}/v1/chat/completions",
        {"model": flow, "messages": [{"role": "user", "content": question}]},
    )


def openai_python(base: str, flow: str, question: str) -> str:
    """The flow called with the official OpenAI Python SDK."""
    return "\n".join(
        [
            "from openai import OpenAI",
            "",
            f"client = OpenAI(base_url={_literal(base_url(base) + '/v1')}, "
            f"api_key={_literal(KEY_PLACEHOLDER)})",
            "reply = client.chat.completions.create(",
            f"    model={_literal(flow)},",
            f'    messages=[{{"role": "user", "content": {_literal(question)}}}],',
            ")",
            "print(reply.choices[0].message.content)",
        ]
    )
