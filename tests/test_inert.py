"""inert(): outside text shown, never obeyed by the terminal."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from flowcall.core.inert import inert

ACTING = ["\x1b", "\r", "\x07", "\x9b", "\x7f", "\u202e", "\u2066", "\u200b", "\ufeff", "\x00"]


def test_every_acting_character_is_written_as_its_escape():
    for char in ACTING:
        shown = inert(f"a{char}b")
        assert char not in shown and shown == f"a\\u{ord(char):04x}b"


def test_plain_text_newlines_tabs_and_chinese_are_left_alone():
    text = "成都 明天 小雨\n\tumbrella: yes ✓"
    assert inert(text) == text
    assert inert(text, one_line=True) == "成都 明天 小雨\\u000a\tumbrella: yes ✓"


def test_a_spoofed_consent_line_stays_visible():
    env_value = '\r\x1b[2K  [NOT granted] start the program ["uvx", "mcp-server-time"]'
    shown = inert(f"LD_PRELOAD=/tmp/x.so DECOY={env_value}")
    assert shown.startswith("LD_PRELOAD=/tmp/x.so") and "\\u000d\\u001b[2K" in shown


@given(st.text())
def test_nothing_acting_survives_and_json_text_stays_the_same_json(text):
    shown = inert(text)
    assert not any(c in shown for c in ACTING)
    encoded = json.dumps({"v": text}, ensure_ascii=False)
    assert json.loads(inert(encoded)) == {"v": text}
