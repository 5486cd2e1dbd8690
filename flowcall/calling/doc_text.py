"""Tool docs as a model should read them: plain text, not the markup they were written in.

OpenAPI documents and MCP servers often carry HTML in their descriptions (Stripe's API:
"<p>Creates a new customer object.</p>", links as <a href="/docs/...">, lists as <ul><li>).
The tags cost a small model tokens and attention and say nothing about what the tool does.
A description that looks like HTML (it has a closing tag or a <br>) is read as its text;
anything else is left as written, so "List<String>" or "a <= 10" in a plain doc survives.

The decision's tool listing, the router's and the shortlist's read docs through this. The
relevance gate does not: its bar was fitted on descriptions as written, and read as text they
separated no better (docs/research/realworld-notebook.md).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

_LOOKS_HTML = re.compile(r"</[a-zA-Z][a-zA-Z0-9]*\s*>|<br\s*/?>", re.IGNORECASE)
_BREAKS = {"p", "br", "li", "div", "ul", "ol", "pre", "tr", "h1", "h2", "h3", "h4", "h5", "h6"}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _BREAKS:
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _BREAKS:
            self.parts.append(" ")


def plain(text: str | None) -> str:
    """The description's text: its HTML read as text on one line, or itself when it is no HTML."""
    if not text or not _LOOKS_HTML.search(text):
        return text or ""
    parser = _Text()
    parser.feed(text)
    parser.close()
    return " ".join("".join(parser.parts).split())


def plain_schema(schema: Any) -> Any:
    """A copy of a JSON schema with every description read as plain text (all levels deep)."""
    if isinstance(schema, dict):
        return {
            key: plain(value) if key == "description" and isinstance(value, str) else plain_schema(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [plain_schema(item) for item in schema]
    return schema
