"""Prompt-lookup drafts: what followed the latest earlier copy of the context's last tokens."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from flowcall.providers.drafting import lookup_draft


def ids(*tokens: int) -> np.ndarray:
    return np.asarray(tokens, dtype=np.intc)


def test_a_value_copied_from_the_tool_result_is_drafted():
    # tool result: ... "city": "Chengdu", "high": 14 ... ; the card has written "city": "
    result = [50, 7, 8, 61, 62, 63, 9, 70, 71]
    card = [30, 7, 8]
    assert lookup_draft(ids(*result, *card), limit=4) == [61, 62, 63, 9]


def test_the_longest_match_wins_over_a_later_shorter_one():
    context = ids(1, 2, 3, 40, 41, 9, 2, 3, 50, 1, 2, 3)
    # "1 2 3" occurs at the start; "2 3" occurs later too, but the 3-token match says more
    assert lookup_draft(context, limit=2) == [40, 41]


def test_the_latest_copy_is_taken():
    context = ids(5, 6, 10, 11, 5, 6, 20, 21, 5, 6)
    assert lookup_draft(context, limit=2) == [20, 21]


def test_nothing_is_drafted_without_a_match_of_two_tokens():
    assert lookup_draft(ids(1, 2, 3, 4, 5, 3)) == []
    assert lookup_draft(ids(7)) == []
    assert lookup_draft(ids()) == []


@given(st.lists(st.integers(0, 5), max_size=60), st.integers(1, 10))
def test_a_draft_is_a_copy_of_what_followed_the_context_s_own_tail(tokens, limit):
    context = ids(*tokens)
    draft = lookup_draft(context, limit=limit)
    assert len(draft) <= limit
    if draft:
        text, n = tokens, len(tokens)
        # some n-gram of 2 or 3 tokens ending the context occurs earlier, and the draft follows it
        assert any(
            text[i - k : i] == text[n - k :] and text[i : i + len(draft)] == draft
            for k in (2, 3)
            if n > k
            for i in range(k, n)
        )
