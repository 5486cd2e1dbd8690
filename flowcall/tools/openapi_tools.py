"""HTTP tools: the operations of an OpenAPI 3 document (a file or a URL), each a tool.

A tool's arguments are the operation's path, query and header parameters, plus `body` for a
JSON request body; local `$ref`s are inlined so the model sees one plain JSON Schema. Every
request goes through http_guard: timeouts, a response-size cap, and no internal addresses
unless the flow allows the host. Only GET, HEAD and OPTIONS run without asking: any other
method changes something on the server, so a person approves it (annotated destructive).

The flow's headers (an API key read from `$VAR`) go only to the base URL's origin: a document
path must start with "/", and every request URL, built from the base URL, the path and the
path arguments, must have the base URL's scheme, host and port before anything is sent. The
document is read once; in a run its SHA-256 must be one a person granted (trust/consent.py), so
the bytes checked are the bytes parsed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote, urljoin

import httpx
import yaml

from flowcall.core import nesting
from flowcall.core.errors import ConfigError
from flowcall.core.schemas import check_refs
from flowcall.core.spec import HTTPToolSource
from flowcall.providers.base import redact_secrets
from flowcall.tools.base import Tool, ToolAnnotations
from flowcall.tools.http_guard import UnsafeRequest, guarded_request
from flowcall.trust.consent import Grants, is_url, require_document

METHODS = ("get", "head", "options", "post", "put", "patch", "delete")
READ_ONLY_METHODS = ("get", "head", "options")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]+")


class HTTPToolError(Exception):
    """The server answered with an error status; the message carries the start of its body."""


class _AliasRefused(yaml.YAMLError):
    pass


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without aliases. An alias repeats a node, so a few lines of nested aliases expand to
    billions ("billion laughs"); an OpenAPI document never needs one (it has $ref), and JSON has
    none. The first alias is refused as it is read, before anything is expanded."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise _AliasRefused(f"*{event.anchor} at line {event.start_mark.line + 1}")
        return super().compose_node(parent, index)


def parse_document(text: str, name: str) -> Any:
    """A JSON or YAML text, refused with a ConfigError if it is neither or uses YAML aliases."""
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # JSON is YAML too
    except RecursionError:
        raise nesting.too_deep(f"OpenAPI document {name}", nesting.DOCUMENT_DEPTH) from None
    except _AliasRefused as exc:
        raise ConfigError(
            f"OpenAPI document {name} uses a YAML alias ({exc}); FlowCall refuses YAML aliases, "
            'which can expand a small file into an enormous one ("billion laughs"). Write the '
            "repeated part out, or use an OpenAPI $ref"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"OpenAPI document {name} is neither JSON nor YAML: {exc}") from exc


def read_document(source: HTTPToolSource) -> tuple[bytes, str | None]:
    """The document's bytes, read once (a file, or fetched through the guard), and the URL it came from."""
    if is_url(source.openapi):
        reply = guarded_request(
            "GET",
            source.openapi,
            allow_hosts=source.allow_hosts,
            timeout_s=source.timeout_s,
            max_bytes=5_000_000,
        )
        if reply.status != 200:
            raise ConfigError(f"OpenAPI document {source.openapi} answered HTTP {reply.status}")
        return reply.body, source.openapi
    path = Path(source.openapi).expanduser()
    if not path.is_file():
        raise ConfigError(f"OpenAPI document {path} does not exist; give a file path or an http(s) URL")
    return path.read_bytes(), None


def document_sha256(source: HTTPToolSource) -> str:
    """The SHA-256 of the document as it reads now: what a grant of its content binds."""
    return hashlib.sha256(read_document(source)[0]).hexdigest()


def load_document(source: HTTPToolSource, grants: Grants | None = None) -> tuple[dict[str, Any], str | None]:
    """(the OpenAPI document, the URL it came from, if any). With `grants` (a run's), its bytes
    must be ones a person granted: those very bytes are parsed, never read a second time."""
    raw, origin = read_document(source)
    if grants is not None:
        require_document(source, hashlib.sha256(raw).hexdigest(), grants)
    document = parse_document(raw.decode("utf-8", "replace"), source.openapi)
    nesting.check_depth(document, f"OpenAPI document {source.openapi}")
    if not isinstance(document, dict) or not str(document.get("openapi", "")).startswith("3"):
        raise ConfigError(f"{source.openapi} is not an OpenAPI 3 document (no 'openapi: 3.x' field)")
    return document, origin


def _inline(value: Any, document: dict[str, Any], depth: int = 0) -> Any:
    """Replace local $refs by what they point at (recursive schemas stop at depth 8)."""
    if isinstance(value, list):
        return [_inline(v, document, depth) for v in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#/") or depth > 8:
            return {"description": f"(not inlined: {ref})"}
        target: Any = document
        for part in ref[2:].split("/"):
            target = (
                target.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(target, dict) else {}
            )
        return _inline(target, document, depth + 1)
    return {k: _inline(v, document, depth) for k, v in value.items()}


def _base_url(document: dict[str, Any], source: HTTPToolSource, origin: str | None) -> str:
    if source.base_url:
        return source.base_url
    servers = document.get("servers") or []
    first = servers[0] if isinstance(servers, list) and servers else None
    url = first.get("url") if isinstance(first, dict) else ""
    url = url if isinstance(url, str) else ""
    if origin:
        url = urljoin(origin, url or "/")
    if not re.match(r"^https?://", url):
        raise ConfigError(
            f"cannot tell where to send the requests of {source.openapi}: set base_url in the flow"
        )
    return url


def tools_from_openapi(source: HTTPToolSource, grants: Grants | None = None) -> list[Tool]:
    """The source's operations as tools. A run passes its grants (see load_document)."""
    document, origin = load_document(source, grants)
    base = _base_url(document, source, origin).rstrip("/")
    paths = document.get("paths") or {}
    if not isinstance(paths, dict):
        raise ConfigError(
            f"{source.openapi}: 'paths' must map each path to its operations, not be a {type(paths).__name__}"
        )
    tools = []
    for path, item in paths.items():
        _check_path(source, path)
        item = _inline(item, document)
        if not isinstance(item, dict):
            continue  # a path with no operations (null, a list ...): nothing to call
        for method in METHODS:
            operation = item.get(method)
            if not isinstance(operation, dict):
                continue
            given = operation.get("operationId")
            label = given if isinstance(given, str) and given else f"{method}_{str(path).strip('/')}"
            name = _SAFE_NAME.sub("_", label).strip("_")[:64] or method
            if source.operations and name not in source.operations:
                continue
            tools.append(
                _tool(source, base, str(path), method, name, operation, _list(item.get("parameters")))
            )
    if not tools:
        raise ConfigError(
            f"{source.openapi} has no "
            f"operations{' named ' + str(source.operations) if source.operations else ''}"
        )
    return tools


def _check_path(source: HTTPToolSource, path: Any) -> None:
    """A path is joined onto the base URL as text: one not starting with "/" would go on with
    the host name, the port or a user@ and send the flow's headers elsewhere (OpenAPI requires
    the "/")."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ConfigError(
            f"{source.openapi}: the path {json.dumps(path, ensure_ascii=False)} does not start with '/'; "
            "joined onto the base URL it could change the host or port the requests (and their headers) "
            "go to. Fix the document"
        )


def _list(value: Any) -> list[Any]:
    """A document's list (parameters ...), or none when it is something else."""
    return value if isinstance(value, list) else []


def _tool(
    source: HTTPToolSource,
    base: str,
    path: str,
    method: str,
    name: str,
    operation: dict[str, Any],
    shared: list[dict[str, Any]],
) -> Tool:
    parameters, where = _parameters(source, path, method, operation, shared)
    invoke = _invoker(source, base, path, method, where)

    texts = [operation.get("summary"), operation.get("description")]
    description = next((t for t in texts if isinstance(t, str) and t), f"{method.upper()} {path}")
    # what the document says an operation does is the server's word; the method is what it can do
    read_only = method in READ_ONLY_METHODS
    return Tool(
        name=name,
        version=f"{source.name}/http/{name}",
        description=description,
        parameters=parameters,
        func=invoke,
        annotations=ToolAnnotations(read_only=read_only, destructive=not read_only, open_world=True),
        timeout_s=source.timeout_s + 1,
        source="http",
        secret_env=tuple(source.secret_variables()),
    )


def _parameters(
    source: HTTPToolSource, path: str, method: str, operation: dict[str, Any], shared: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The operation's arguments as one JSON Schema object (its path, query and header
    parameters, and `body` for a JSON request body), and where each argument goes."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    where: dict[str, str] = {}  # argument -> path | query | header
    for param in [*shared, *_list(operation.get("parameters"))]:
        if not isinstance(param, dict) or param.get("in") not in ("path", "query", "header"):
            continue
        if not isinstance(param.get("name"), str) or not param["name"]:
            raise ConfigError(
                f"{source.openapi}: a {param['in']} parameter of {method.upper()} {path} has no "
                "name (OpenAPI requires one); fix the document or leave the operation out"
            )
        given = param.get("schema")
        schema = dict(given) if isinstance(given, dict) and given else {"type": "string"}
        if isinstance(param.get("description"), str) and param["description"]:
            schema["description"] = param["description"]
        properties[param["name"]], where[param["name"]] = schema, param["in"]
        if param.get("required") is True or param["in"] == "path":
            required.append(param["name"])
    request_body = operation.get("requestBody")
    content = request_body.get("content") if isinstance(request_body, dict) else None
    body = content.get("application/json") if isinstance(content, dict) else None
    if isinstance(body, dict):
        given = body.get("schema")
        properties["body"] = given if isinstance(given, dict) and given else {"type": "object"}
        if request_body.get("required") is True:
            required.append("body")
    parameters = {"type": "object", "properties": properties, **({"required": required} if required else {})}
    # local $refs are inlined by now; whatever still points outside (a $dynamicRef, ...) is refused
    check_refs(parameters, f"{source.openapi}: {method.upper()} {path}, parameters")
    return parameters, where


def _invoker(
    source: HTTPToolSource, base: str, path: str, method: str, where: dict[str, str]
) -> Callable[..., Any]:
    """The tool's function: one guarded HTTP request built from the arguments; JSON replies parsed."""

    def invoke(**arguments: Any) -> Any:
        url = request_url(base, path, arguments)  # before the headers are read: a refused URL gets none
        reply = guarded_request(
            method.upper(),
            url,
            allow_hosts=source.allow_hosts,
            timeout_s=source.timeout_s,
            max_bytes=source.max_response_bytes,
            params={k: v for k, v in arguments.items() if where.get(k) == "query"},
            headers=_headers(source, arguments, where),
            **({"json": arguments["body"]} if "body" in arguments else {}),
        )
        text = reply.body.decode("utf-8", "replace")
        if reply.status >= 400:  # a server may quote the key it refused
            raise HTTPToolError(
                redact_secrets(
                    f"HTTP {reply.status} from {method.upper()} {reply.url}: {text[:300]}",
                    source.secret_variables(),
                )
            )
        if "json" in reply.content_type:
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                return text
        return text

    return invoke


def _headers(source: HTTPToolSource, arguments: dict[str, Any], where: dict[str, str]) -> dict[str, str]:
    """The header arguments, then the flow's own headers, which win whatever their case."""
    try:
        own = source.resolved_headers()
    except ConfigError as exc:
        raise HTTPToolError(str(exc)) from None
    mine = {name.lower() for name in own}
    return {
        **{k: str(v) for k, v in arguments.items() if where.get(k) == "header" and k.lower() not in mine},
        **own,
    }


def _origin(url: str) -> tuple[str, str, int | None, str]:
    parts = httpx.URL(url)  # parsed as the request will be
    return (
        parts.scheme,
        parts.host,
        parts.port or {"http": 80, "https": 443}.get(parts.scheme),
        parts.userinfo.decode(),
    )


def request_url(base: str, path: str, arguments: dict[str, Any]) -> str:
    """The operation's URL: each {parameter} in the path filled with its argument, percent-encoded
    whole (no value adds a "/", "?", "#" or "@"), joined onto the base URL. Refused (UnsafeRequest)
    unless it has the base URL's scheme, host, port and no other user@, whatever the path says."""
    url = base + re.sub(r"\{([^}]+)\}", lambda m: quote(str(arguments.get(m.group(1), "")), safe=""), path)
    try:
        same = _origin(url) == _origin(base)
    except httpx.InvalidURL:
        same = False
    if not same:
        raise UnsafeRequest(
            f"the operation {json.dumps(path, ensure_ascii=False)} joined onto the base URL {base} is not "
            "the origin of the base URL (its scheme, host and port): the request and the flow's headers "
            "would go elsewhere, so nothing was sent. Fix the document's path"
        )
    return url
