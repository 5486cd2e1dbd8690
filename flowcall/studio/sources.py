"""The studio's forms for a flow's MCP servers, HTTP tool sources and sub-flows (no raw JSON on the normal
path), and the tools a granted server or source offers, for the flow canvas's palette.

`mcp_server_form` and `http_source_form` draw one server or source as fields and rows
(arguments, environment, allowed hosts ...), with the same object as editable JSON in an
expander, and return (the object as JSON-ready data valid for MCPServerConfig or HTTPToolSource,
None) or (None, one plain sentence naming the field and what to do). The flow's secret rule
(spec.py: no literal credential in a flow file) is checked as the fields are typed.

Starting a server or loading a document goes through consent exactly as a run does
(flowcall/trust/consent.py): "List tools" or "Try a tool" on something nobody on this machine granted
shows the consent panel (what would run, resolved, and the secrets it is handed) and starts
nothing until the person grants it. The grant is the one a flow's run asks for (the same keys),
except for a server's `trusted`: running its tools without asking concerns a flow's runs, and
the Run page asks for it. Everything a server or a document says (tool names, descriptions,
schemas, results) is its author's text: shown through md(), in tables or as code.

Widget keys, for pages and tests: fields are `{key}:f:<field>` (`name`, `transport`, `program`, `flow`,
`url`, `trusted`, `openapi`, ...), row fields `{key}:f:<field>:<row id>` (`args`, `operations`,
`allow_hosts`) and `{key}:f:env:<row id>:name|value`; buttons are `{key}:b:...` (`<field>:add`,
`json`, `list`, `try`, `grant`, `cancel`); the JSON text is `{key}:json`.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import streamlit as st
from pydantic import BaseModel, ValidationError

from flowcall.core import nesting
from flowcall.core.errors import ConfigError
from flowcall.core.schemas import schema_errors
from flowcall.core.spec import HTTPToolSource, MCPServerConfig, _find_secrets
from flowcall.service.front import (
    SOURCE_ERRORS,
    FlowCall,
    SourceKindInfo,
    internal_hosts,
    source_config,
    source_kinds,
    source_ungranted,
    try_source_tool,
)
from flowcall.service.front import source_tools as load_tools
from flowcall.studio import schema_form
from flowcall.studio.shared import as_json, md, service, show_trust_items
from flowcall.trust.consent import TrustItem

if TYPE_CHECKING:
    from flowcall.tools.base import Tool
    from flowcall.tools.trial import TrialResult

Kind = str  # "mcp", "http", or any kind `source_kinds()` lists (an installed package's)
Checked = tuple[dict[str, Any] | None, str | None]
STDIO, URL = "stdio command", "URL"
MODELS: dict[str, type[BaseModel]] = {"mcp": MCPServerConfig, "http": HTTPToolSource}

# ------------------------------------------------------------------ checking, in plain sentences

_LABELS = {
    "name": "Name",
    "command": "Command",
    "url": "URL",
    "env": "Env",
    "trusted": "Trusted",
    "startup_timeout_s": "Startup timeout",
    "call_timeout_s": "Call timeout",
    "openapi": "OpenAPI document",
    "base_url": "Base URL",
    "operations": "Operation",
    "allow_hosts": "Allowed host",
    "timeout_s": "Timeout",
    "max_response_bytes": "Response size cap",
}
_PATTERN_HINTS = {
    "name": "use lowercase letters, digits, - and _, starting with a letter or digit (at most 40), e.g. time",
    "url": "write a streamable HTTP address starting with http:// or https://",
    "base_url": "write an address starting with http:// or https://, or leave it empty",
}
_SECRET_PATH = re.compile(r"(\w+)(?:\[(\d+)\]|\.(.*))?")


def _where(loc: tuple[Any, ...]) -> str:
    """A place in a server or source as a person names it: Name, Argument 2, Env TOKEN, Allowed host 1."""
    if not loc:
        return "The server"
    field, rest = str(loc[0]), loc[1:]
    label = _LABELS.get(field, field)
    if not rest:
        return label
    if field == "command":
        return "Command" if rest[0] == 0 else f"Argument {rest[0]}"
    return f"{label} {rest[0] + 1}" if isinstance(rest[0], int) else f"{label} {rest[0]}"


def _reference(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name).upper().lstrip("0123456789") or "GITHUB_TOKEN"


def _secret_problem(raw: dict[str, Any]) -> str | None:
    """The flow's own secret rule (spec._find_secrets, as parse_flow applies it), in a sentence."""
    found = _find_secrets(raw)
    if not found:
        return None
    path, why = found[0]
    match = _SECRET_PATH.fullmatch(path)
    field, index, name = match.groups() if match else (path, None, None)
    if field == "env" and name is not None:
        ref = _reference(name)
        if why == "a literal value under a secret's name":
            return (
                f"Env {name}: write a reference like ${ref}, not the secret itself, and set {ref} in the "
                "environment FlowCall runs in (a flow file is shared, so it never holds a key)."
            )
        return (
            f"Env {name}: its value looks like a secret ({why}); write a reference like ${ref} instead, and "
            f"set {ref} in the environment FlowCall runs in."
        )
    if field == "headers" and name is not None:
        ref = _reference(name)
        return (
            f"Header {name}: write a reference like ${ref} (or 'Bearer ${ref}'), not the secret itself, and "
            f"set {ref} in the environment FlowCall runs in (a flow file is shared, so it never holds a key)."
        )
    loc = (field, int(index)) if index is not None else (field, name) if name is not None else (field,)
    return (
        f"{_where(loc)}: it holds {why}. A flow file is shared and must never hold a secret: remove it, and "
        "hand a server a secret only through an env row with a reference like $GITHUB_TOKEN."
    )


def _plain_number(value: Any) -> str:
    """0.0 as 0, 50000000 as 50,000,000."""
    number = float(value)
    return f"{int(number):,}" if number.is_integer() else f"{number:g}"


def _validation_sentence(exc: ValidationError) -> str:
    error = exc.errors()[0]
    loc, kind, ctx = tuple(error["loc"]), error["type"], error.get("ctx") or {}
    if kind == "string_pattern_mismatch":
        what = _PATTERN_HINTS.get(str(loc[0]) if loc else "", error["msg"])
    elif kind == "greater_than":
        what = f"must be more than {_plain_number(ctx.get('gt', 0))}"
    elif kind == "less_than_equal":
        what = f"must be at most {_plain_number(ctx.get('le', 0))}"
    elif kind == "missing":
        what = "is required: fill it in"
    elif kind == "extra_forbidden":
        what = "is not a field FlowCall knows: remove it"
    else:
        what = error["msg"].removeprefix("Value error, ")
    return f"{_where(loc)}: {what.rstrip('.')}."


def _shape_problem(kind: Kind, raw: dict[str, Any]) -> str | None:
    """What a person must fill in or fix, said more plainly than the model's own check would."""
    name = raw.get("name")
    if isinstance(name, str) and not name.strip():
        where = "<name>/mcp/<tool>" if kind == "mcp" else "<name>/http/<operationId>"
        return (
            f"Name: give it a name, e.g. time: lowercase letters, digits, - and _ (its tools are attached as "
            f"{where})."
        )
    if kind == "mcp":
        command, url = raw.get("command"), raw.get("url")
        if command is not None and url is not None:
            return "Transport: give either a command or a URL, not both."
        if isinstance(command, list) and (not command or command[0] == ""):
            return (
                "Command: give the program to start, e.g. uvx or python; its arguments go in the rows "
                "below it."
            )
        if url == "":
            return "URL: give the server's streamable HTTP address, e.g. http://127.0.0.1:8765/mcp."
        if url is not None and raw.get("env"):
            return (
                "Env: a server reached by URL takes no environment; remove env, or start the server "
                "from a command."
            )
        return None
    if kind != "http":
        return None
    if raw.get("openapi") == "":
        return "OpenAPI document: give the document's file path or its http(s) URL."
    for number, host in enumerate(raw.get("allow_hosts") or [], 1):
        if isinstance(host, str) and (not host or "/" in host or any(c.isspace() for c in host)):
            return (
                f"Allowed host {number}: write a host name or address alone, e.g. 127.0.0.1 or api.internal, "
                "not a URL."
            )
    return None


def check(kind: Kind, raw: dict[str, Any]) -> Checked:
    """An MCP server ("mcp") or an HTTP tool source ("http") as JSON: (its JSON-ready data, as
    MCPServerConfig or HTTPToolSource dumps it, None) or (None, a sentence naming the field and
    what to do)."""
    problem = _shape_problem(kind, raw) or _secret_problem(raw)
    if problem:
        return None, problem
    try:
        value = _config(kind, raw)
    except ValidationError as exc:
        return None, _validation_sentence(exc)
    except ConfigError as exc:  # a kind of an installed package: its model's own words
        return None, f"{str(exc).rstrip('.')}."
    return value.model_dump(mode="json", exclude_none=True), None


def _config(kind: Kind, data: dict[str, Any]) -> BaseModel:
    """A source of `kind` as its config model reads it (ValidationError, or ConfigError for a kind
    without a form of its own)."""
    return MODELS[kind].model_validate(data) if kind in MODELS else source_config(kind, data)


def kind_info(kind: Kind) -> SourceKindInfo:
    """The kind as the service lists it; ConfigError when nothing here provides it."""
    for info in source_kinds():
        if info.kind == kind:
            return info
    raise ConfigError(f"no installed package provides the tool source kind {kind!r} here; install it")


# ------------------------------------------------------------------ consent and tools, without widgets


def _untrusted(config: BaseModel) -> BaseModel:
    """The source without a `trusted` claim: running its tools unasked concerns a flow's runs,
    which the Run page asks for before the flow's first run; listing or trying needs not it."""
    return config.model_copy(update={"trusted": False}) if "trusted" in type(config).model_fields else config


def ungranted(app: FlowCall, kind: Kind, config: BaseModel) -> list[TrustItem]:
    """What loading the source (starting the server, loading the document, using an installed
    package's kind) would do that nobody here granted (each item saying what changed, when the
    same command was granted before but resolves otherwise)."""
    return source_ungranted(app.grants(), kind, _untrusted(config))


def _grants(app: FlowCall, kind: Kind) -> Any:
    """What a listing or a trial checks again as it loads. An HTTP document's content is not
    bound by a listing: the person granted its URL just now; a run's grant binds what it fetches."""
    return None if kind == "http" else app.grants()


def _fetch(app: FlowCall, kind: Kind, config: Any) -> tuple[list[Tool], str | None]:
    """The source's tools (a server is started and stopped again): never call this before
    `ungranted` says nothing is missing. A stdio server's grant is checked again as it starts
    (what was checked is what runs)."""
    try:
        return load_tools(
            kind, _untrusted(config), _grants(app, kind), describe_flow=app.flow_description
        ), None
    except SOURCE_ERRORS as exc:
        return [], str(exc)


def _entry(tool: Tool, kind: Kind) -> dict[str, Any]:
    hints = tool.annotations
    return {
        "ref": tool.version,
        "name": tool.name,
        "description": tool.description,
        "annotations": {
            "read_only": hints.read_only,
            "destructive": hints.destructive,
            "open_world": hints.open_world,
        },
        "kind": kind,
        "parameters": tool.parameters,
    }


def source_tools(
    app: FlowCall, source: dict[str, Any], kind: Kind | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """The tools a source of `kind` offers (its flow JSON; without a kind, a dict with "openapi"
    is an HTTP source, else an MCP server), for the canvas palette: ([{ref, name, description,
    annotations {read_only, destructive, open_world}, kind, parameters}], None), or ([], why
    not, a sentence to show through md()). Nothing ungranted is started or loaded; a granted
    server is started, listed and stopped on every call, so a page keeps the answer (e.g. in
    st.session_state) rather than calling this on every rerun."""
    kind = kind or ("http" if "openapi" in source else "mcp")
    value, problem = check(kind, source)
    if value is None:
        return [], problem
    config = _config(kind, value)
    missing = ungranted(app, kind, config)
    if missing:
        return [], (
            "Nothing was started or loaded: nobody on this machine has granted that it may "
            + "; ".join(item.summary for item in missing)
            + ". Grant it with List tools under its form (or on the Run page, before a flow's first run)."
        )
    tools, problem = _fetch(app, kind, config)
    return [_entry(tool, kind) for tool in tools], problem


# ------------------------------------------------------------------ form state: fields and rows


def _f(key: str, *parts: Any) -> str:
    return ":".join([key, "f", *map(str, parts)])


def _b(key: str, *parts: Any) -> str:
    return ":".join([key, "b", *map(str, parts)])


def _new_ids(key: str, count: int) -> list[int]:
    """Row ids never reused, so a new row never shows an old row's text."""
    start = st.session_state.get(f"{key}:next", 0)
    st.session_state[f"{key}:next"] = start + count
    return list(range(start, start + count))


def _set_rows(key: str, field: str, values: list[Any]) -> None:
    ids = _new_ids(key, len(values))
    st.session_state[f"{key}:rows:{field}"] = ids
    for rid, value in zip(ids, values):
        st.session_state[_f(key, field, rid)] = str(value)


def _set_pairs(key: str, field: str, pairs: dict[str, Any]) -> None:
    ids = _new_ids(key, len(pairs))
    st.session_state[f"{key}:rows:{field}"] = ids
    for rid, (name, value) in zip(ids, pairs.items()):
        st.session_state[_f(key, field, rid, "name")] = str(name)
        st.session_state[_f(key, field, rid, "value")] = str(value)


def _add_row(key: str, field: str, pair: bool) -> None:
    rid = _new_ids(key, 1)[0]
    st.session_state[f"{key}:rows:{field}"] = [*st.session_state.get(f"{key}:rows:{field}", []), rid]
    for part in ("name", "value") if pair else (None,):
        st.session_state[_f(key, field, rid, *([part] if part else []))] = ""


def _remove_row(key: str, field: str, rid: int) -> None:
    st.session_state[f"{key}:rows:{field}"] = [
        r for r in st.session_state.get(f"{key}:rows:{field}", []) if r != rid
    ]


def _number(value: Any, default: float, low: float, high: float, cast: type = float) -> Any:
    """A number for a number_input: the widget refuses one outside its bounds or of another type."""
    try:
        number = cast(value)
    except (TypeError, ValueError):
        number = cast(default)
    return min(max(number, cast(low)), cast(high))


def _default(kind: Kind, field: str) -> Any:
    return MODELS[kind].model_fields[field].default


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _load(key: str, kind: Kind, data: dict[str, Any]) -> None:
    """Set the form's fields from `data` (a server or source as JSON), leniently: called before
    the widgets are drawn (the form's first draw, or the Apply JSON button's callback)."""
    state = st.session_state
    for old in [k for k in state.keys() if isinstance(k, str) and k.startswith(f"{key}:f:")]:
        del state[old]
    state[_f(key, "name")] = _text(data.get("name"))
    if kind not in MODELS:
        _load_fields(key, kind, data)
        return
    if kind == "mcp":
        command = data.get("command") if isinstance(data.get("command"), list) else []
        state[_f(key, "transport")] = URL if data.get("url") and not command else STDIO
        state[_f(key, "program")] = _text(command[0]) if command else ""
        _set_rows(key, "args", command[1:])
        _set_pairs(key, "env", data.get("env") if isinstance(data.get("env"), dict) else {})
        state[_f(key, "url")] = _text(data.get("url"))
        state[_f(key, "trusted")] = data.get("trusted") is True
        for field, high in (("startup_timeout_s", 300.0), ("call_timeout_s", 600.0)):
            state[_f(key, field)] = _number(
                data.get(field, _default(kind, field)), _default(kind, field), 0.0, high
            )
        return
    state[_f(key, "openapi")] = _text(data.get("openapi"))
    _set_pairs(key, "headers", data.get("headers") if isinstance(data.get("headers"), dict) else {})
    state[_f(key, "base_url")] = _text(data.get("base_url"))
    for field in ("operations", "allow_hosts"):
        _set_rows(key, field, data.get(field) if isinstance(data.get(field), list) else [])
    state[_f(key, "timeout_s")] = _number(data.get("timeout_s", 15.0), 15.0, 0.0, 300.0)
    state[_f(key, "max_response_bytes")] = _number(
        data.get("max_response_bytes", 1_000_000), 1_000_000, 1, 50_000_000, int
    )


def _rows(
    key: str,
    field: str,
    title: str,
    noun: str,
    placeholder: str,
    *,
    pair: bool = False,
    help: str | None = None,
) -> None:
    """Rows of text (or of NAME = value) with a remove button each and an Add button."""
    ids = st.session_state.setdefault(f"{key}:rows:{field}", [])
    st.markdown(f"**{title}**", help=help)
    for number, rid in enumerate(ids, 1):
        with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
            _row(key, field, rid, f"{noun} {number}", placeholder, pair=pair)
            st.button(
                ":material/close:",
                key=_b(key, field, rid, "remove"),
                help=f"Remove this {noun}",
                on_click=_remove_row,
                args=(key, field, rid),
            )
    st.button(
        f"Add {'a' if noun[0] not in 'aeiou' else 'an'} {noun}",
        key=_b(key, field, "add"),
        on_click=_add_row,
        args=(key, field, pair),
    )


def _row(key: str, field: str, rid: int, label: str, placeholder: str, *, pair: bool) -> None:
    """One row's inputs: a text, or a NAME and its value."""
    if pair:
        st.text_input(
            f"{label}: name",
            key=_f(key, field, rid, "name"),
            placeholder="NAME",
            label_visibility="collapsed",
            persist_state="page",
        )
        st.text_input(
            f"{label}: value",
            key=_f(key, field, rid, "value"),
            placeholder="$NAME, or a value that is no secret",
            label_visibility="collapsed",
            persist_state="page",
        )
    else:
        st.text_input(
            label,
            key=_f(key, field, rid),
            placeholder=placeholder,
            label_visibility="collapsed",
            persist_state="page",
        )


def _row_values(key: str, field: str) -> list[str]:
    return [
        st.session_state.get(_f(key, field, rid), "")
        for rid in st.session_state.get(f"{key}:rows:{field}", [])
    ]


def _pairs(
    key: str, field: str = "env", label: str = "Env", noun: str = "variable"
) -> tuple[dict[str, str], str | None]:
    """NAME = value rows (environment, headers): (NAME -> value, None) or a row's problem. Blank
    rows are skipped."""
    pairs: dict[str, str] = {}
    problem = None
    for number, rid in enumerate(st.session_state.get(f"{key}:rows:{field}", []), 1):
        name = st.session_state.get(_f(key, field, rid, "name"), "").strip()
        value = st.session_state.get(_f(key, field, rid, "value"), "").strip()
        if not (name or value):
            continue
        if not name:
            problem = problem or f"{label} row {number}: give the {noun} a name, or clear the row."
        elif name in pairs:
            problem = problem or f"{label} {name} is set twice: keep one row."
        pairs[name] = value
    return pairs, problem


def _begin(key: str, kind: Kind, initial: dict[str, Any] | None) -> None:
    if f"{key}:loaded" not in st.session_state:
        _load(key, kind, initial or {})
        st.session_state[f"{key}:loaded"] = True
    if hosts := st.session_state.pop(f"{key}:add_hosts", None):  # granted with the consent panel
        _set_rows(key, "allow_hosts", [*(h for h in _row_values(key, "allow_hosts") if h.strip()), *hosts])


# ------------------------------------------------------------------ the forms


def mcp_server_form(server: dict[str, Any] | None, key: str) -> Checked:
    """One MCP server as a form: name; a stdio command (program, argument rows, environment rows
    NAME = value, where `$VAR` reads VAR from this machine when the server starts) or a
    streamable HTTP URL; trusted; timeouts. `server` (flow JSON, or None) fills it the first time
    `key` is drawn. Returns (the server as JSON-ready data valid for MCPServerConfig, None) or
    (None, a sentence naming the field and what to do), which the form also shows. Below it: the
    same server as editable JSON, and List tools / Try a tool, which ask for consent first."""
    _begin(key, "mcp", server)
    st.text_input(
        "Name",
        key=_f(key, "name"),
        placeholder="time",
        persist_state="page",
        help="Lowercase letters, digits, - and _; its tools are attached as <name>/mcp/<tool>",
    )
    transport = st.radio(
        "How FlowCall reaches it",
        [STDIO, URL],
        key=_f(key, "transport"),
        horizontal=True,
        persist_state="page",
    )
    if transport == STDIO:
        reach, problem = _stdio_fields(key)
    else:
        st.text_input(
            "URL (streamable HTTP)",
            key=_f(key, "url"),
            placeholder="http://127.0.0.1:8765/mcp",
            persist_state="page",
        )
        reach, problem = {"url": st.session_state[_f(key, "url")].strip(), "env": {}}, None
    _mcp_options(key)
    state = st.session_state
    raw = {
        "name": state[_f(key, "name")].strip(),
        **reach,
        "trusted": bool(state[_f(key, "trusted")]),
        "startup_timeout_s": float(state[_f(key, "startup_timeout_s")]),
        "call_timeout_s": float(state[_f(key, "call_timeout_s")]),
    }
    return _finish(key, "mcp", raw, problem)


def _stdio_fields(key: str) -> tuple[dict[str, Any], str | None]:
    """A server started as a program: its command and environment as JSON-ready data, and a row's problem."""
    st.text_input(
        "Command (the program to start)",
        key=_f(key, "program"),
        placeholder="uvx",
        persist_state="page",
        help="Found on PATH, or a full path. A grant binds the program it finds "
        "and the scripts it names: a changed script needs a new grant.",
    )
    _rows(key, "args", "Arguments", "argument", "mcp-server-time")
    _rows(
        key,
        "env",
        "Environment",
        "variable",
        "",
        pair=True,
        help="NAME = value, handed to the program. Write a secret as a reference ($GITHUB_TOKEN): it is read "
        "from this machine's environment when the server starts, so the flow file never holds it.",
    )
    args = [a for a in _row_values(key, "args") if a.strip()]  # an empty row is no argument
    env, problem = _pairs(key)
    return {"command": [st.session_state[_f(key, "program")].strip(), *args], "env": env}, problem


def _mcp_options(key: str) -> None:
    """Whether the server is trusted, and how long it may take to start and to answer a call."""
    st.checkbox(
        "Trusted: run its tools in a flow without asking a person",
        key=_f(key, "trusted"),
        persist_state="page",
        help="A flow's first run asks you to grant this, on the Run page.",
    )
    left, right = st.columns(2)
    left.number_input(
        "Startup timeout (s)", 0.0, 300.0, key=_f(key, "startup_timeout_s"), step=5.0, persist_state="page"
    )
    right.number_input(
        "Call timeout (s)", 0.0, 600.0, key=_f(key, "call_timeout_s"), step=5.0, persist_state="page"
    )


def http_source_form(source: dict[str, Any] | None, key: str) -> Checked:
    """One HTTP tool source (an OpenAPI 3 document's operations as tools) as a form: name, the
    document (a file path or a URL), base URL, the operations to keep (rows; none: all), allowed
    internal hosts (rows), timeout and response size cap. Returns (JSON-ready data valid for
    HTTPToolSource, None) or (None, a sentence naming the field and what to do); the rest as
    `mcp_server_form`."""
    _begin(key, "http", source)
    _http_inputs(key)
    state = st.session_state
    raw: dict[str, Any] = {
        "name": state[_f(key, "name")].strip(),
        "openapi": state[_f(key, "openapi")].strip(),
    }
    if base_url := state[_f(key, "base_url")].strip():
        raw["base_url"] = base_url
    if operations := [o.strip() for o in _row_values(key, "operations") if o.strip()]:
        raw["operations"] = operations
    raw["allow_hosts"] = [h.strip() for h in _row_values(key, "allow_hosts") if h.strip()]
    headers, problem = _pairs(key, "headers", "Header", "header")
    if headers:
        raw["headers"] = headers
    raw["timeout_s"] = float(state[_f(key, "timeout_s")])
    raw["max_response_bytes"] = int(state[_f(key, "max_response_bytes")])
    return _finish(key, "http", raw, problem)


def _http_inputs(key: str) -> None:
    """The HTTP source's inputs; http_source_form reads what they hold."""
    st.text_input(
        "Name",
        key=_f(key, "name"),
        placeholder="things",
        persist_state="page",
        help="Lowercase letters, digits, - and _; its tools are attached as <name>/http/<operationId>",
    )
    st.text_input(
        "OpenAPI document (a file path or an http(s) URL)",
        key=_f(key, "openapi"),
        persist_state="page",
        placeholder="https://api.example.com/openapi.json",
        help="A file is granted by its path and content: a changed file needs a new grant.",
    )
    st.text_input(
        "Base URL (optional: instead of the document's servers)",
        key=_f(key, "base_url"),
        placeholder="https://api.example.com",
        persist_state="page",
    )
    _http_rows(key)
    left, right = st.columns(2)
    left.number_input("Timeout (s)", 0.0, 300.0, key=_f(key, "timeout_s"), step=5.0, persist_state="page")
    right.number_input(
        "Response size cap (bytes)",
        1,
        50_000_000,
        key=_f(key, "max_response_bytes"),
        step=100_000,
        persist_state="page",
    )


def _http_rows(key: str) -> None:
    """The HTTP source's rows: the operations to keep, the headers, and the internal hosts allowed."""
    _rows(
        key, "operations", "Only these operations (operationIds; none listed: all)", "operation", "getThing"
    )
    _rows(
        key,
        "headers",
        "Headers",
        "header",
        "",
        pair=True,
        help="Name = value, sent with every request (e.g. X-Api-Key = $THINGS_KEY). Write a secret as a "
        "reference, $NAME or Bearer $NAME: it is read from this machine's environment when a request is "
        "made, so the flow file never holds it.",
    )
    _rows(
        key,
        "allow_hosts",
        "Allowed internal hosts",
        "host",
        "127.0.0.1",
        help="Hosts the SSRF guard refuses (loopback, private, link-local ...) that these tools may reach "
        "once you grant it, for this document only.",
    )


def _finish(key: str, kind: Kind, raw: dict[str, Any], row_problem: str | None) -> Checked:
    value, problem = (None, row_problem) if row_problem else check(kind, raw)
    if problem:
        st.error(md(problem))
    _json_box(key, kind, raw)
    _tools_box(key, kind, value)
    return value, problem


def sub_flow_form(source: dict[str, Any] | None, key: str) -> Checked:
    """A sub-flow (kind "flow"): a saved flow and its version picked from lists (the newest by
    default), the tool's name (the flow's, by default) and what the model reads of it (the
    flow's own description, by default). Returns as `mcp_server_form`."""
    _begin(key, "flow", source)
    state, app = st.session_state, service()
    names = [saved["name"] for saved in app.list_flows()]
    chosen = state.get(_f(key, "flow")) or (names[0] if names else "")
    state[_f(key, "flow")] = chosen
    st.selectbox(
        "Flow",
        [*names, *([chosen] if chosen not in names else [])],
        key=_f(key, "flow"),
        help="A flow saved here: it runs as one tool of this flow, on the question the model writes",
    )
    versions = [v["version"] for v in app.flow_versions(chosen)] if chosen in names else []
    try:
        version = int(str(state.get(_f(key, "version"))))
    except ValueError:
        version = versions[0] if versions else 1
    state[_f(key, "version")] = version if version in versions or not versions else versions[0]
    st.selectbox(
        "Version",
        versions or [state[_f(key, "version")]],
        key=_f(key, "version"),
        help="The version it runs, pinned: saving that flow again does not change what this one runs",
    )
    if state.get(_f(key, "name"), "") in ("", state.get(f"{key}:auto_name")):  # not typed: follows the flow
        state[_f(key, "name")] = state[f"{key}:auto_name"] = re.sub(
            r"[^a-z0-9_-]+", "_", chosen.lower()
        ).strip("_-")[:40]
    st.text_input("Name", key=_f(key, "name"), help="The tool's name, as the model sees it")
    st.text_input(
        "Description",
        key=_f(key, "description"),
        placeholder="the flow's own description",
        help="What the model reads to decide when to call it; empty: the flow's own description",
    )
    raw = {"name": state[_f(key, "name")].strip(), "flow": chosen, "version": state[_f(key, "version")]}
    if description := (state.get(_f(key, "description")) or "").strip():
        raw["description"] = description
    return _finish(key, "flow", raw, None if names else "Save a flow first: a sub-flow is a saved flow.")


def source_form(kind: Kind, source: dict[str, Any] | None, key: str) -> Checked:
    """A source of any kind as a form: MCP servers, HTTP sources and sub-flows have their own; any
    other kind (an installed package's) gets one built from its config's JSON Schema and its form
    hints."""
    if kind == "mcp":
        return mcp_server_form(source, key)
    if kind == "http":
        return http_source_form(source, key)
    if kind == "flow":
        return sub_flow_form(source, key)
    return generic_source_form(kind, source, key)


def _schema_fields(kind: Kind) -> tuple[SourceKindInfo, list[schema_form.FormField]]:
    info = kind_info(kind)
    return info, [f for f in schema_form.form_fields(info.schema) if f.name != "name"]


def _load_fields(key: str, kind: Kind, data: dict[str, Any]) -> None:
    """The generic form's fields from `data`: text for plain values, JSON text for nested ones."""
    for f in _schema_fields(kind)[1]:
        value = data.get(f.name, f.default)
        if f.kind == "boolean":
            st.session_state[_f(key, f.name)] = value is True
        elif f.kind == "json":
            st.session_state[_f(key, f.name)] = "" if value is None else as_json(value)
        elif f.kind == "enum":
            st.session_state[_f(key, f.name)] = value if value in f.options else (f.options or [None])[0]
        else:
            st.session_state[_f(key, f.name)] = _text(value)


def generic_source_form(kind: Kind, source: dict[str, Any] | None, key: str) -> Checked:
    """A source of a kind without a form of its own: its name, then a field per property of its
    config's JSON Schema (labels and hints from the kind's form_fields), the same as JSON below,
    and List tools / Try a tool as for the others. Returns as `mcp_server_form`."""
    info, fields = _schema_fields(kind)
    _begin(key, kind, source)
    hints = info.fields
    name_hint = hints.get("name")
    st.text_input(
        getattr(name_hint, "label", "Name"),
        key=_f(key, "name"),
        placeholder=getattr(name_hint, "placeholder", ""),
        persist_state="page",
        help=f"Lowercase letters, digits, - and _; its tools are attached as <name>/{kind}/<tool>",
    )
    for f in fields:
        hint = hints.get(f.name)
        label = getattr(hint, "label", "") or f.name
        help_text = getattr(hint, "help", "") or f.description or None
        placeholder = getattr(hint, "placeholder", "")
        if f.kind == "boolean":
            st.checkbox(label, key=_f(key, f.name), help=help_text, persist_state="page")
        elif f.kind == "enum":
            st.selectbox(label, f.options, key=_f(key, f.name), help=help_text, persist_state="page")
        elif f.kind == "json":
            st.text_area(label + " (JSON)", key=_f(key, f.name), help=help_text, persist_state="page")
        else:
            st.text_input(
                label, key=_f(key, f.name), help=help_text, placeholder=placeholder, persist_state="page"
            )
    values = {f.name: st.session_state.get(_f(key, f.name)) for f in fields}
    raw, errors = schema_form.collect(fields, values, {**info.schema, "required": []})
    raw = {"name": st.session_state[_f(key, "name")].strip(), **raw}
    return _finish(key, kind, raw, f"{errors[0].rstrip('.')}." if errors else None)


# ------------------------------------------------------------------ the JSON expander


def _json_box(key: str, kind: Kind, raw: dict[str, Any]) -> None:
    """The form's object as JSON. It follows the form; Apply puts edited JSON into the form, or
    says what is wrong and changes nothing (the text stays as typed)."""
    state = st.session_state
    text = as_json(raw)
    if state.get(f"{key}:json:of") != text:  # the form changed: the JSON follows it
        state[f"{key}:json"] = state[f"{key}:json:of"] = text
        state.pop(f"{key}:json:problem", None)
    with st.expander("JSON"):
        st.text_area("The same, as JSON: edit it and apply, if you prefer", key=f"{key}:json", height=240)
        st.button("Apply JSON", key=_b(key, "json"), on_click=_apply_json, args=(key, kind))
        if problem := state.get(f"{key}:json:problem"):
            st.error(md(problem))


def _apply_json(key: str, kind: Kind) -> None:
    state = st.session_state
    try:
        data = nesting.loads(state.get(f"{key}:json", ""), "the JSON")
    except json.JSONDecodeError as exc:
        problem = f"the JSON is not valid (line {exc.lineno}, column {exc.colno}): {exc.msg}."
    except ConfigError as exc:
        problem = f"{exc}."
    else:
        value, problem = (
            (None, "the JSON must be one object, {...}.") if not isinstance(data, dict) else check(kind, data)
        )
        if value is not None:
            _load(key, kind, value)
            state.pop(f"{key}:json:problem", None)
            return
    state[f"{key}:json:problem"] = (
        f"Nothing was applied: {problem} Your text is kept: correct it and apply again."
    )


# ------------------------------------------------------------------ List tools, Try a tool: consent first


def _want(key: str, wanted: dict[str, Any]) -> None:
    st.session_state.pop(f"{key}:try:problem", None)
    st.session_state[f"{key}:want"] = wanted


def _skeleton(schema: Any) -> dict[str, Any]:
    """Arguments to start from: the required properties (a blank of their type) and those with a default."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    blanks = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    start = {}
    for name, prop in properties.items():
        if isinstance(prop, dict) and "default" in prop:
            start[name] = prop["default"]
        elif isinstance(prop, dict) and name in required:
            start[name] = blanks.get(prop["type"]) if isinstance(prop.get("type"), str) else None
    return start


def _want_call(key: str, fingerprint: str, tool: dict[str, Any]) -> None:
    """Try a tool: the arguments are checked against its inputSchema before anything starts."""
    state = st.session_state
    state.pop(f"{key}:result", None)
    try:
        arguments = nesting.loads(state.get(_f(key, "arguments", tool["name"]), "") or "{}", "the arguments")
    except json.JSONDecodeError as exc:
        problem = f"Arguments: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}."
    except ConfigError as exc:
        problem = f"Arguments: {exc}."
    else:
        errors = schema_errors(tool["parameters"], arguments, limit=5) if isinstance(arguments, dict) else []
        if not isinstance(arguments, dict):
            problem = 'Arguments: write one JSON object, e.g. {"text": "hello"}.'
        elif errors:
            problem = f"Arguments: {'; '.join(errors)}."
        elif tool["annotations"]["destructive"] and not state.get(_f(key, "confirm", tool["name"])):
            problem = f"{tool['name']} may change or delete things: tick the box first."
        else:
            _want(
                key, {"action": "call", "config": fingerprint, "tool": tool["name"], "arguments": arguments}
            )
            return
    state[f"{key}:try:problem"] = f"{problem} Nothing was started."


def consent_panel(key: str, items: list[TrustItem], offer: list[str] | None = None) -> str | None:
    """The Run page's consent, for one server or source: "grant", "cancel" or None (undecided).
    A grant covers exactly the items the person read: if what would run changed since the panel
    was drawn, the panel is drawn again instead."""
    state = st.session_state
    keys = [item.key for item in items]
    read, state[f"{key}:consent:shown"] = state.get(f"{key}:consent:shown"), keys
    panel = st.empty()
    with panel.container(border=True):
        st.warning(
            "This would start or reach the following, and nobody on this machine has granted it. Nothing "
            "has been started or sent. Read it; grant only what you expect."
        )
        show_trust_items(items)
        if offer:  # else the guard refuses the document after the grant, and a second grant follows
            st.checkbox(
                md(
                    f"This service is on this machine or your network ({', '.join(offer)}): allow "
                    f"{'it' if len(offer) == 1 else 'them'} for this source (its allowed internal hosts)"
                ),
                value=True,
                key=_b(key, "allow_internal"),
            )
        st.caption(
            "The grant is the one a flow's run asks for, kept with the others (`flowcall trust --list`). "
            "Running a server's tools without asking (trusted) is asked for before a flow's first run."
        )
        left, right, _ = st.columns([2, 1, 5])
        grant = left.button("Grant", type="primary", key=_b(key, "grant"))
        cancel = right.button("Cancel", key=_b(key, "cancel"))
    if grant and read != keys:
        st.warning("What it would start changed since this panel was drawn: read it again, then grant.")
        return None
    if grant or cancel:
        panel.empty()
    return "grant" if grant else "cancel" if cancel else None


def _grant_with_hosts(key: str, kind: Kind, value: dict[str, Any], hosts: list[str], want: dict) -> None:
    """Grant the source with `hosts` added to its allowed internal hosts, in one grant, and
    have the form show them (its rows are set before its widgets are drawn again, `_begin`);
    what was asked for goes on with the source as it now is."""
    widened = {**value, "allow_hosts": [*value.get("allow_hosts", []), *hosts]}
    app = service()
    app.grant_items(ungranted(app, kind, MODELS[kind].model_validate(widened)), by="studio")
    st.session_state[f"{key}:add_hosts"] = hosts
    st.session_state[f"{key}:want"] = {**want, "config": json.dumps(widened, sort_keys=True)}


def _pending(key: str, kind: Kind, value: dict[str, Any] | None, fingerprint: str | None) -> None:
    """What List tools or Try a tool asked for: the consent panel while it is ungranted, then done once."""
    state = st.session_state
    want = state.get(f"{key}:want")
    if not want:
        return
    if value is None or want["config"] != fingerprint:  # the form changed since: nothing is pending
        state.pop(f"{key}:want", None)
        return
    app = service()
    config = _config(kind, value)
    missing = ungranted(app, kind, config)
    if missing:
        offer = internal_hosts(config) if isinstance(config, HTTPToolSource) else []
        answer = consent_panel(key, missing, offer)
        if answer is None:
            return
        state.pop(f"{key}:want", None)
        if answer == "cancel":
            st.info("Cancelled: nothing was granted, started or sent.")
            return
        if offer and state.get(_b(key, "allow_internal")):
            _grant_with_hosts(key, kind, value, offer, want)  # one grant, the form gets the hosts
            st.rerun()
        app.grant_items(missing, by="studio")
    state.pop(f"{key}:want", None)
    state.pop(f"{key}:consent:shown", None)
    name = md(config.name)  # type: ignore[attr-defined]
    if want["action"] == "list":
        with st.spinner(f"Starting {name} and listing its tools…" if kind == "mcp" else f"Loading {name}…"):
            tools, problem = _fetch(app, kind, config)
        state[f"{key}:listed"] = {
            "config": fingerprint,
            "tools": [_entry(t, kind) for t in tools],
            "problem": problem,
        }
        return
    with st.spinner(f"Calling {md(want['tool'])}…"):
        outcome: TrialResult | str
        try:  # loaded as ungranted() checked it, and as _fetch() listed it
            untrusted, grants = _untrusted(config), _grants(app, kind)
            outcome = try_source_tool(kind, untrusted, want["tool"], want["arguments"], grants)
        except SOURCE_ERRORS as exc:
            outcome = str(exc)
    state[f"{key}:result"] = {"config": fingerprint, "tool": want["tool"], "outcome": outcome}


def _hints(annotations: dict[str, bool]) -> str:
    return " · ".join(
        [
            "read-only" if annotations["read_only"] else "writes",
            "destructive" if annotations["destructive"] else "not destructive",
            "open world" if annotations["open_world"] else "closed world",
        ]
    )


def _show_outcome(outcome: TrialResult | str) -> None:
    """A call's result, inert: JSON or a code block, never Markdown."""
    if isinstance(outcome, str):
        st.error(f"{md(outcome)}. Nothing else was run.")
    elif not outcome.ok:
        st.error(f"{md(outcome.error_code)}: {md(outcome.error_message)}")
    else:
        st.caption(f"{md(outcome.version)} answered in {outcome.latency_ms:.0f} ms")
        if isinstance(outcome.result, (dict, list)):
            st.json(outcome.result)
        else:
            st.code(str(outcome.result), language=None)


def _try_box(key: str, fingerprint: str, tools: list[dict[str, Any]]) -> None:
    state = st.session_state
    st.markdown("**Try a tool**")
    names = [t["name"] for t in tools]
    picked = st.selectbox("Tool", names, key=_f(key, "try_tool"), persist_state="page")
    tool = tools[names.index(picked)] if picked in names else tools[0]
    st.caption(
        f"{md(tool['description']) if tool['description'] else '(no description)'} · "
        f"{md(_hints(tool['annotations']))}"
    )
    with st.expander("Its input schema"):
        st.json(tool["parameters"])
    arguments_key = _f(key, "arguments", tool["name"])
    state.setdefault(arguments_key, as_json(_skeleton(tool["parameters"])))
    st.text_area(
        "Arguments (JSON, checked against its input schema)",
        key=arguments_key,
        height=120,
        persist_state="page",
    )
    if tool["annotations"]["destructive"]:
        st.checkbox(
            f"{md(tool['name'])} may change or delete things: I understand",
            key=_f(key, "confirm", tool["name"]),
        )
    st.button("Try a tool", key=_b(key, "try"), on_click=_want_call, args=(key, fingerprint, tool))
    if problem := state.get(f"{key}:try:problem"):
        st.error(md(problem))
    result = state.get(f"{key}:result")
    if result and result["config"] == fingerprint and result["tool"] == tool["name"]:
        _show_outcome(result["outcome"])


def _tools_box(key: str, kind: Kind, value: dict[str, Any] | None) -> None:
    """List tools (then Try a tool): asked for by a button, done after consent."""
    state = st.session_state
    fingerprint = json.dumps(value, sort_keys=True) if value is not None else None
    st.button(
        "List tools",
        key=_b(key, "list"),
        disabled=value is None,
        on_click=_want,
        args=(key, {"action": "list", "config": fingerprint}),
        help="Starts the server (or loads the document) once it is granted, lists its tools, stops it",
    )
    _pending(key, kind, value, fingerprint)
    listed = state.get(f"{key}:listed")
    if not listed or listed["config"] != fingerprint or fingerprint is None:
        return
    if listed["problem"]:
        st.error(
            f"{md(listed['problem'])}. Check the command, URL or document, e.g. run it by hand in a terminal."
        )
        return
    tools = listed["tools"]
    st.caption(f"{len(tools)} tools; a flow attaches them by the reference shown")
    st.dataframe(
        [
            {
                "tool": t["name"],
                "reference": t["ref"],
                "description": t["description"],
                "read-only": t["annotations"]["read_only"],
                "destructive": t["annotations"]["destructive"],
                "open world": t["annotations"]["open_world"],
            }
            for t in tools
        ],
        hide_index=True,
    )
    _try_box(key, fingerprint, tools)
