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
from flowcall.trust import program

KINDS = {
    "mcp_command": "start a program",
    "mcp_url": "connect to an MCP server",
    "mcp_trusted": "run an MCP server's tools without asking",
    "openapi": "load an OpenAPI document and call its operations",
    "allow_host": "let HTTP tools reach an internal host",
    "base_url": "send questions and tool results to a model server",
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


def attached_servers(flow: Flow) -> list[MCPServerConfig]:
    """The MCP servers whose tools the flow attaches: only these are ever started."""
    return [s for s in flow.mcp_servers if any(ref.startswith(f"{s.name}/mcp/") for ref in flow.tools)]


def attached_http_sources(flow: Flow) -> list[HTTPToolSource]:
    """The OpenAPI documents whose operations the flow attaches: only these are loaded."""
    return [s for s in flow.http_tools if any(ref.startswith(f"{s.name}/http/") for ref in flow.tools)]


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
}
_SECRET_LOOKING = re.compile(
    r"KEY|TOKEN|SECRET|PASS|CREDENTIAL|AUTH|PRIVATE|COOKIE|SESSION|DSN|DATABASE_URL", re.I
)


def handed_over(env: dict[str, str]) -> list[str]:
    """Each variable of this machine that `env` reads (`$NAME`), said as what it gives away."""
    said = []
    for name in sorted({v[1:] for v in env.values() if v.startswith("$")}):
        if name in KNOWN_SECRETS:
            said.append(f"{KNOWN_SECRETS[name]} ({name})")
        elif _SECRET_LOOKING.search(name):
            said.append(f"the secret in {name}")
        else:
            said.append(f"the value of {name} from this machine")
    return said


def _hashes(files: dict[str, str]) -> str:
    return (
        "; " + ", ".join(f"{Path(p).name} sha256 {digest[:12]}" for p, digest in files.items())
        if files
        else ""
    )


def _quoted_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else json.dumps(name, ensure_ascii=False)


def _server_items(server: MCPServerConfig) -> list[TrustItem]:
    name = json.dumps(server.name, ensure_ascii=False)
    if server.command:
        where: dict[str, Any] = {"command": list(server.command), "env": dict(sorted(server.env.items()))}
        try:  # the grant binds what would run from here, not the text (program.py)
            resolved = program.resolve(server.command)
            where |= resolved.subject()
            runs = f" (here: {json.dumps(resolved.argv, ensure_ascii=False)}{_hashes(resolved.files)})"
        except ConfigError as exc:
            where["unresolved"] = str(exc)
            runs = f" (here: {exc})"
        program_text = json.dumps(server.command, ensure_ascii=False)
        # every value JSON-quoted, so no value can look like the end of the line or a new one;
        # literal values are shown (LD_PRELOAD=... matters); $VAR references are read from this machine
        pairs = [
            f"{_quoted_name(k)}={json.dumps(v, ensure_ascii=False)}" for k, v in sorted(server.env.items())
        ]
        env = f" with environment {', '.join(pairs)}" if pairs else ""
        secrets = handed_over(server.env)
        gives = f"; this gives {', '.join(secrets)} to that program" if secrets else ""
        items = [
            TrustItem(
                "mcp_command",
                where,
                inert(f"start the program {program_text}{runs}{env} (MCP server {name}){gives}"),
            )
        ]
        what = program_text
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


def _http_items(source: HTTPToolSource) -> list[TrustItem]:
    target = f", sending requests to {normal_url(source.base_url)}" if source.base_url else " and its servers"
    subject: dict[str, Any] = {
        "openapi": source.openapi,
        "base_url": normal_url(source.base_url) if source.base_url else None,
    }
    document = json.dumps(source.openapi, ensure_ascii=False)
    if not re.match(r"^https?://", source.openapi):  # a file: the grant binds which file, and its content
        path = Path(source.openapi).expanduser().resolve()
        subject["path"] = str(path)
        if path.is_file():
            subject["sha256"] = program.file_sha256(path)
            document += (
                f" (here: {json.dumps(str(path), ensure_ascii=False)}, sha256 {subject['sha256'][:12]})"
            )
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
    items = [
        TrustItem(
            "openapi",
            subject,
            inert(f"load the OpenAPI document {document}{target}{sent} (HTTP tools '{source.name}')"),
        )
    ]
    for host in sorted({h.lower() for h in source.allow_hosts}):
        # scoped to this source: a host let past the SSRF guard for one document is not let past it for all
        items.append(
            TrustItem(
                "allow_host",
                {"host": host, **subject},
                inert(
                    f"let HTTP tools reach {json.dumps(host, ensure_ascii=False)} although it may "
                    "be an internal address"
                ),
            )
        )
    return items


def _model_items(flow: Flow) -> list[TrustItem]:
    items = []
    configured = config.compatible_base_url()
    for role, model in (("decision", flow.decision), ("polish", flow.polish)):
        if model is None or model.provider != "openai-compatible" or not model.base_url:
            continue
        if configured and config.same_base_url(model.base_url, configured):
            continue  # the server the person configured in the environment
        url = normal_url(model.base_url)
        items.append(
            TrustItem(
                "base_url",
                {"url": url},
                f"send the question and tool results to the model server at {url} "
                f"({role} model; without your API key)",
            )
        )
    return items


def trust_items(flow: Flow) -> list[TrustItem]:
    """Everything the flow would start or reach that needs a person's grant, once each."""
    items: list[TrustItem] = []
    for server in attached_servers(flow):
        items += _server_items(server)
    for source in attached_http_sources(flow):
        items += _http_items(source)
    items += _model_items(flow)
    unique: dict[str, TrustItem] = {}
    for item in items:
        unique.setdefault(item.key, item)
    return list(unique.values())


def ungranted(flow: Flow, grants: Grants) -> list[TrustItem]:
    granted = grants.granted_keys()
    return [item for item in trust_items(flow) if item.key not in granted]


def require_granted(flow: Flow, grants: Grants, grant_command: str) -> None:
    missing = ungranted(flow, grants)
    if missing:
        raise TrustRequired(flow.name, [_with_change(item, grants) for item in missing], grant_command)


def _with_change(item: TrustItem, grants: Grants) -> TrustItem:
    """`item`, saying what changed when the same command was granted before but resolves otherwise now."""
    listed = getattr(grants, "list_grants", None)
    if item.kind != "mcp_command" or listed is None or "argv" not in item.subject:
        return item
    now = program.Resolved(item.subject["argv"], item.subject["program_target"], item.subject["files"])
    for grant in listed():
        subject = grant["subject"] or {}
        if (
            grant["kind"] == item.kind
            and subject.get("command") == item.subject["command"]
            and "argv" in subject
        ):
            change = program.what_changed(subject, now)
            if change:
                return TrustItem(
                    item.kind, item.subject, inert(f"{item.summary}; granted before, but {change}")
                )
    return item


def describe(items: Iterable[TrustItem]) -> list[str]:
    return [inert(f"{KINDS.get(item.kind, item.kind)}: {item.summary}", one_line=True) for item in items]
