"""Consent: what a flow would start or reach, and which of it a person on this machine granted.

A flow file is someone else's text. Everything in it that starts a process (an MCP stdio
command) or reaches the network beyond the configured model providers (an MCP URL, an OpenAPI
document, hosts let past the SSRF guard, an openai-compatible base URL other than the configured
one) and an MCP server's claim to be `trusted` is inert until a person grants it. A grant is
keyed by the SHA-256 of exactly what was granted, so a changed command, URL or host needs a new
one. Grants live in the database, never in a file: no file can grant itself anything.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Protocol
from urllib.parse import urlsplit

from flowcall.core import config
from flowcall.core.errors import ConfigError
from flowcall.core.inert import inert
from flowcall.core.spec import Flow, HTTPToolSource, MCPServerConfig
from flowcall.trust import code_env, program
from flowcall.trust.packages import PackageOrigin

KINDS = {
    "mcp_command": "start a program",
    "mcp_url": "connect to an MCP server",
    "mcp_trusted": "run an MCP server's tools without asking",
    "openapi": "load an OpenAPI document and call its operations",
    "allow_host": "let HTTP tools reach an internal host",
    "base_url": "send questions and tool results to a model server",
    "package_tool": "use a tool of an installed package",
    "package_source": "use a tool source kind of an installed package",
    "package_provider": "use a model provider of an installed package",
}


@dataclass(frozen=True)
class TrustItem:
    """One thing a flow would start or reach; `subject` is exactly what a grant covers."""

    kind: str
    subject: dict[str, Any] = field(hash=False)
    summary: str = ""

    @property
    def key(self) -> str:
        canonical = json.dumps(
            {"kind": self.kind, "subject": self.subject}, sort_keys=True, ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode()).hexdigest()


class Grants(Protocol):
    def granted_keys(self) -> set[str]: ...


class TrustRequired(ConfigError):
    """The flow would start or reach something nobody on this machine granted."""

    def __init__(self, flow_name: str, items: list[TrustItem], grant_command: str):
        self.items = items
        listing = "; ".join(f"({i}) {item.summary}" for i, item in enumerate(items, 1))
        super().__init__(
            f"flow {flow_name!r} would {listing}, and nobody on this machine has granted "
            f"{'that' if len(items) == 1 else 'these'}. Nothing was started "
            f"or sent. Read the flow, then grant with: {grant_command}"
        )


def normal_url(url: str) -> str:
    """Scheme and host lower-case, no trailing slash: the form grants compare."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc.lower()
    return f"{parts.scheme.lower()}://{netloc}{parts.path.rstrip('/')}" + (
        f"?{parts.query}" if parts.query else ""
    )


# What a `$VAR` hands over, in words a person reads as "my key goes to this program".
KNOWN_SECRETS = {
    "OPENAI_API_KEY": "your OpenAI API key",
    "DASHSCOPE_API_KEY": "your DashScope API key",
    "OPENAI_COMPATIBLE_API_KEY": "your OpenAI-compatible server's API key",
    "FLOWCALL_DATABASE_URL": "your FlowCall database URL (with its password)",
    "FLOWCALL_MCP_TOKEN": "your FlowCall MCP server token",
    "FLOWCALL_BROKER_URL": "your FlowCall broker URL (with its password)",
    "FLOWCALL_API_SETTINGS": "your FlowCall HTTP server's settings (with its database URL and password)",
}
_SECRET_LOOKING = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|DSN|DATABASE_URL", re.I
)
# FlowCall's own settings that hold no secret (flowcall/core/config.py); any other FLOWCALL_*
# variable is said as a secret, so a setting added later is flagged until it is listed here
FLOWCALL_PLAIN = {
    f"FLOWCALL_{name}"
    for name in (
        "HOME MODEL MODEL_PATH THREADS LOCAL_TIMEOUT_S PROMPT_CACHE_MB PROMPT_CACHE_DISK_MB "
        "PROVIDER_TIMEOUT_S PROVIDER_ATTEMPTS RETRY_INITIAL_S LEASE_S QUEUE REDELIVERY_S PLUGIN_DIRS "
        "DATA_DIR LANGUAGE DECODING API_URL"
    ).split()
}


def handed_over(env: dict[str, str]) -> list[str]:
    """Each variable of this machine that `env` reads (`$NAME`), said as what it gives away."""
    said = []
    for name in sorted({v[1:] for v in env.values() if v.startswith("$")}):
        if name in KNOWN_SECRETS:
            said.append(f"{KNOWN_SECRETS[name]} ({name})")
        elif _SECRET_LOOKING.search(name):
            said.append(f"the secret in {name}")
        elif name.upper().startswith("FLOWCALL_") and name.upper() not in FLOWCALL_PLAIN:
            said.append(f"FlowCall's own setting {name}, which may hold a password or key")
        else:
            said.append(f"the value of {name} from this machine")
    return said


def _hashes(files: dict[str, str]) -> str:
    said = [
        f"{Path(p).name} "
        + ("as it is on disk" if digest.startswith("identity") else f"sha256 {digest[:12]}")
        for p, digest in files.items()
    ]
    return "; " + ", ".join(said) if said else ""


def _quoted_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else json.dumps(name, ensure_ascii=False)


def _command_item(server: MCPServerConfig, resolved: program.Resolved | None = None) -> TrustItem:
    """Starting the server's command: the grant binds what would run from here, not the text
    (program.py), resolved now unless `resolved` is the resolution a start is about to use."""
    where: dict[str, Any] = {"command": list(server.command or []), "env": dict(sorted(server.env.items()))}
    try:
        resolved = resolved or program.resolve(server.command or [], env=server.env)
        where |= resolved.subject()
        runs = f" (here: {json.dumps(resolved.argv, ensure_ascii=False)}{_hashes(resolved.files)})"
    except ConfigError as exc:
        where["unresolved"] = str(exc)
        runs = f" (here: {exc})"
    program_text = json.dumps(server.command, ensure_ascii=False)
    # every value JSON-quoted, so no value can look like the end of the line or a new one;
    # literal values are shown (LD_PRELOAD=... matters); $VAR references are read from this machine
    pairs = [f"{_quoted_name(k)}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(server.env.items())]
    env = f" with environment {', '.join(pairs)}" if pairs else ""
    loaders = sorted({n for n in server.env if n in code_env.LOADS_CODE} | set(where.get("code_env", {})))
    loads = (
        f"; the environment makes the program load code its command does not name ({', '.join(loaders)}): "
        "the files it names, and what Python imports from PYTHONPATH, are bound above"
        if loaders
        else ""
    )
    secrets = handed_over(server.env)
    gives = f"; this gives {', '.join(secrets)} to that program" if secrets else ""
    name = json.dumps(server.name, ensure_ascii=False)
    return TrustItem(
        "mcp_command",
        where,
        inert(f"start the program {program_text}{runs}{env} (MCP server {name}){loads}{gives}"),
    )


def server_items(server: MCPServerConfig, resolved: program.Resolved | None = None) -> list[TrustItem]:
    """Starting or reaching an MCP server, and running its tools unasked when it claims `trusted`."""
    name = json.dumps(server.name, ensure_ascii=False)
    if server.command:
        items = [_command_item(server, resolved)]
        where, what = items[0].subject, json.dumps(server.command, ensure_ascii=False)
    else:
        where = {"url": normal_url(str(server.url))}
        items = [TrustItem("mcp_url", where, inert(f"connect to the MCP server at {where['url']} ({name})"))]
        what = where["url"]
    if server.trusted:
        items.append(
            TrustItem(
                "mcp_trusted",
                where,
                inert(f"run the tools of MCP server {name} ({what}) without asking a person"),
            )
        )
    return items


def is_url(openapi: str) -> bool:
    return re.match(r"^https?://", openapi) is not None


def http_items(source: HTTPToolSource) -> list[TrustItem]:
    """Loading an OpenAPI document (a file bound by its content), and each internal host let through."""
    sha256 = None
    if not is_url(source.openapi):  # a file: the grant binds which file, and its content
        path = Path(source.openapi).expanduser().resolve()
        sha256 = program.file_sha256(path) if path.is_file() else None
    # a URL's content is bound once the URL is granted: the service fetches it then (document_item)
    items = [document_item(source, sha256)]
    for host in sorted({h.lower() for h in source.allow_hosts}):
        # scoped to this source: a host let past the SSRF guard for one document is not let past it for all
        items.append(
            TrustItem(
                "allow_host",
                {"host": host, **items[0].subject},
                inert(
                    f"let HTTP tools reach {json.dumps(host, ensure_ascii=False)} although it may "
                    "be an internal address"
                ),
            )
        )
    return items


def document_item(source: HTTPToolSource, sha256: str | None) -> TrustItem:
    """Loading the source's document: which one (a file by its absolute path), where its requests
    go, the headers as written, and, given its SHA-256, exactly that content. Without one (a URL
    not fetched yet) it grants reaching the URL; its content is an item of its own."""
    target = f", sending requests to {normal_url(source.base_url)}" if source.base_url else " and its servers"
    subject: dict[str, Any] = {
        "openapi": source.openapi,
        "base_url": normal_url(source.base_url) if source.base_url else None,
    }
    document = json.dumps(source.openapi, ensure_ascii=False)
    if not is_url(source.openapi):
        subject["path"] = str(Path(source.openapi).expanduser().resolve())
    if sha256:
        subject["sha256"] = sha256
        where = (
            f"here: {json.dumps(subject['path'], ensure_ascii=False)}, " if "path" in subject else "content "
        )
        document += f" ({where}sha256 {sha256[:12]})"
    sent = ""
    if source.headers:  # the grant binds the headers as written: a changed one needs a new grant
        subject["headers"] = dict(sorted(source.headers.items()))
        names = ", ".join(_quoted_name(n) for n in sorted(source.headers))
        given = handed_over(
            {
                n: "$" + m.group(1)
                for n, v in source.headers.items()
                if (m := re.search(r"\$([A-Za-z_][A-Za-z0-9_]*)$", v))
            }
        )
        sent = f", with the headers {names}" + (f", which give it {', '.join(given)}" if given else "")
    return TrustItem(
        "openapi",
        subject,
        inert(f"load the OpenAPI document {document}{target}{sent} (HTTP tools '{source.name}')"),
    )


def require_document(source: HTTPToolSource, sha256: str, grants: Grants) -> None:
    """Refuse to load a document whose bytes, as read for loading, are not the ones granted: a
    file rewritten after the trust check, a URL that answers something new. ConfigError."""
    item = document_item(source, sha256)
    if item.key in grants.granted_keys():
        return
    why = (
        f"its content changed since it was granted (sha256 now {sha256[:12]})"
        if content_changed(item, grants)
        else f"its content (sha256 {sha256[:12]}) was never granted"
    )
    raise ConfigError(
        f"the OpenAPI document {json.dumps(source.openapi, ensure_ascii=False)} (HTTP tools "
        f"'{source.name}') is not loaded: {why}. Nothing was called. Read the document, then grant "
        "it again: `flowcall trust` with the flow, or the consent panel in the studio"
    )


def content_changed(item: TrustItem, grants: Grants) -> bool:
    """Was the same document (file or URL, base URL, headers) granted with other content?"""
    listed = getattr(grants, "list_grants", None)
    if item.kind != "openapi" or "sha256" not in item.subject or listed is None:
        return False
    same = {k: v for k, v in item.subject.items() if k != "sha256"}
    for grant in listed():
        subject = dict(grant["subject"] or {})
        was = subject.pop("sha256", None)
        if grant["kind"] == "openapi" and was not in (None, item.subject["sha256"]) and subject == same:
            return True
    return False


def _model_items(flow: Flow) -> list[TrustItem]:
    items = []
    configured = config.compatible_base_url()
    for role, model in (("decision", flow.decision), ("polish", flow.polish)):
        if model is None or not model.base_url:
            continue
        compatible = model.provider == "openai-compatible"
        if compatible and configured and config.same_base_url(model.base_url, configured):
            continue  # the server the person configured in the environment
        # any other provider's too (an installed one may take a flow's URL): asked, never assumed
        url = normal_url(model.base_url)
        how = "without your API key" if compatible else f"provider {inert(model.provider, one_line=True)}"
        items.append(
            TrustItem(
                "base_url",
                {"url": url},
                f"send the question and tool results to the model server at {url} ({role} model; {how})",
            )
        )
    return items


def package_items(installed: dict[str, PackageOrigin]) -> list[TrustItem]:
    """Using each tool (by version) that an installed package provides (packages.py): its code
    runs here, so a shared flow that attaches it asks first, naming the package and its module."""
    return [
        TrustItem(
            "package_tool",
            {"tool": version, **origin.subject()},
            inert(
                f"use the tool {version} of the installed package {origin.package} {origin.version} "
                f"(entry point {origin.entry_point}: module {origin.module}, {origin.file}"
                f"{_hashes({origin.file: origin.sha256}) if origin.sha256 else ''}); its code runs here "
                "with your rights"
            ),
        )
        for version, origin in sorted(installed.items())
    ]


def package_source_items(installed: dict[str, PackageOrigin]) -> list[TrustItem]:
    """Using each tool source kind (by name) that an installed package provides: its code loads
    the source's tools here, so a flow with a source of that kind asks first, as for a package's tool."""
    return [
        TrustItem(
            "package_source",
            {"source_kind": kind, **origin.subject()},
            inert(
                f"use the tool source kind {json.dumps(kind)} of the installed package {origin.package} "
                f"{origin.version} (entry point {origin.entry_point}: module {origin.module}, {origin.file}"
                f"{_hashes({origin.file: origin.sha256}) if origin.sha256 else ''}); its code runs here "
                "with your rights"
            ),
        )
        for kind, origin in sorted(installed.items())
    ]


def package_provider_items(used: dict[str, PackageOrigin]) -> list[TrustItem]:
    """Using each model provider (by name) of an installed package that a flow's models name: its
    code runs here and reads the questions and tool results, so it asks first, as a package's tool."""
    return [
        TrustItem(
            "package_provider",
            {"provider": name, **origin.subject()},
            inert(
                f"use the model provider {name} of the installed package {origin.package} "
                f"{origin.version} (entry point {origin.entry_point}: module {origin.module}, "
                f"{origin.file or 'no file'}"
                f"{_hashes({origin.file: origin.sha256}) if origin.sha256 else ''}); "
                "its code runs here with your rights and reads the questions and tool results"
            ),
        )
        for name, origin in sorted(used.items())
    ]


def trust_items(
    flow: Flow, installed: dict[str, PackageOrigin] | None = None, *, sources: Iterable[TrustItem]
) -> list[TrustItem]:
    """Everything the flow would start or reach that needs a person's grant, once each.
    `sources`: what the flow's attached tool sources would start or reach, as their kinds list it
    (flowcall/tools/sources: `source_trust_items`, which the layer above passes: this layer knows
    no kind); `installed`: the flow's tools that installed packages provide (the service knows them)."""
    items: list[TrustItem] = [*sources, *_model_items(flow), *package_items(installed or {})]
    unique: dict[str, TrustItem] = {}
    for item in items:
        unique.setdefault(item.key, item)
    return list(unique.values())


def ungranted(
    flow: Flow,
    grants: Grants,
    installed: dict[str, PackageOrigin] | None = None,
    *,
    sources: Iterable[TrustItem],
) -> list[TrustItem]:
    granted = grants.granted_keys()
    return [item for item in trust_items(flow, installed, sources=sources) if item.key not in granted]


def require_granted(
    flow: Flow,
    grants: Grants,
    grant_command: str,
    fetched: Iterable[TrustItem] = (),
    installed: dict[str, PackageOrigin] | None = None,
    *,
    sources: Iterable[TrustItem],
) -> None:
    """TrustRequired unless everything is granted. `fetched`: items known only by fetching (the
    content of a granted OpenAPI URL, which the service fetches: document_item); `sources` as in
    `trust_items`."""
    granted = grants.granted_keys()
    missing = ungranted(flow, grants, installed, sources=sources) + [
        item for item in fetched if item.key not in granted
    ]
    if missing:
        raise TrustRequired(flow.name, [_with_change(item, grants) for item in missing], grant_command)


def _with_change(item: TrustItem, grants: Grants) -> TrustItem:
    """`item`, saying what changed when the same command was granted before but resolves otherwise
    now, the same OpenAPI document with other content, or another version of a package's tool."""
    if content_changed(item, grants):
        return TrustItem(
            item.kind, item.subject, inert(f"{item.summary}; granted before, but its content changed")
        )
    change = _command_change(item, grants) or _package_change(item, grants)
    if change:
        return TrustItem(item.kind, item.subject, inert(f"{item.summary}; granted before, but {change}"))
    return item


_PACKAGE_SUBJECT = {"package_tool": "tool", "package_source": "source_kind", "package_provider": "provider"}


def _package_change(item: TrustItem, grants: Grants) -> str | None:
    """How an installed package's tool (source kind, provider) differs from a grant of the same one."""
    listed = getattr(grants, "list_grants", None)
    what = _PACKAGE_SUBJECT.get(item.kind)
    if what is None or listed is None:
        return None
    now = item.subject
    for grant in listed():
        was = grant["subject"] or {}
        if grant["kind"] != item.kind or (was.get(what), was.get("package")) != (now[what], now["package"]):
            continue
        if was.get("version") != now["version"]:
            return f"version {was.get('version')} was granted, not {now['version']}"
        if was.get("sha256") != now["sha256"]:
            return f"its module file {now['file']} changed"
    return None


def _command_change(item: TrustItem, grants: Grants) -> str | None:
    """How a command's resolution differs from a grant of the same command text, in words."""
    listed = getattr(grants, "list_grants", None)
    if item.kind != "mcp_command" or listed is None or "argv" not in item.subject:
        return None
    now = program.Resolved.of(item.subject)
    for grant in listed():
        subject = grant["subject"] or {}
        if (
            grant["kind"] == item.kind
            and subject.get("command") == item.subject["command"]
            and "argv" in subject
        ):
            change = program.what_changed(subject, now)
            if change:
                return change
    return None


class StartRefused(ConfigError):
    """A stdio server's command, resolved at its start, is not what was granted."""


def checked_start(server: MCPServerConfig, grants: Grants) -> program.Resolved:
    """The resolution a stdio server starts from, made once, right before the start, and refused
    (StartRefused) unless exactly it is granted: a file changed or a program that appeared on PATH
    after the consent check is caught here, and the starter runs this resolution's argv."""
    resolved = program.resolve(server.command or [], env=server.env)
    granted = grants.granted_keys()
    missing = [item for item in server_items(server, resolved) if item.key not in granted]
    if missing:
        change = _command_change(missing[0], grants)
        raise StartRefused(
            f"MCP server '{server.name}' was not started: "
            f"{change or 'what it would run is not what was granted'}. Nothing was started. Read the "
            "flow, then grant it again: `flowcall trust` with the flow, or the consent panel in the studio"
        )
    return resolved


def describe(items: Iterable[TrustItem]) -> list[str]:
    return [inert(f"{KINDS.get(item.kind, item.kind)}: {item.summary}", one_line=True) for item in items]
