"""Outside text made inert for a terminal: what a flow, run file, tool result, model or MCP
server wrote is shown, never obeyed.

A terminal acts on control characters: `\\r` and `ESC [2K` erase what a person was reading (a
consent line can be overwritten by a harmless-looking one), OSC sequences set the window
title, write the clipboard (OSC 52) or hide a link (OSC 8). Bidi overrides and zero-width
characters make text read differently from what it is. Each such character is written as its
JSON escape (`\\u001b`), visible and still valid inside JSON text. Newlines and tabs stay.
"""

from __future__ import annotations

import re

_ACTING = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 controls but tab and newline, DEL, C1 controls
    "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"  # bidi marks and overrides, zero-width
)
_ACTING_OR_NEWLINE = re.compile(_ACTING.pattern[:-1] + "\n]")


def inert(text: object, *, one_line: bool = False) -> str:
    """`text` with every character a terminal would act on written as `\\uXXXX`; with
    `one_line`, newlines too (a line that must not look like several)."""
    pattern = _ACTING_OR_NEWLINE if one_line else _ACTING
    return pattern.sub(lambda m: f"\\u{ord(m.group()):04x}", str(text))
