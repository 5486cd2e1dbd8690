"""Prompt-lookup drafts: guess the next tokens by finding the last few tokens written earlier in
the context (the prompt, the tool results, the answer so far) and copying what followed them.

A polish model copies the tool results' values (a city, a date, temperatures) into its card,
and a decision model copies the user's words into arguments; those guesses are checked by the
model in one batch and kept only as far as they match what it would have written itself.
"""

from __future__ import annotations

import numpy as np

LONGEST_NGRAM = 3  # the longest run of last tokens looked up
SHORTEST_NGRAM = 2  # one token alone matches too often to be worth a guess
DRAFT_TOKENS = 8  # at most this many guessed tokens per check


def lookup_draft(
    context: np.ndarray,
    limit: int = DRAFT_TOKENS,
    longest: int = LONGEST_NGRAM,
    shortest: int = SHORTEST_NGRAM,
) -> list[int]:
    """The tokens that followed the latest earlier occurrence of the context's last n tokens,
    for the longest n from `longest` down to `shortest` that occurs; [] when none does."""
    size = len(context)
    for n in range(min(longest, size - 1), shortest - 1, -1):
        tail = context[size - n :]
        windows = np.lib.stride_tricks.sliding_window_view(context[: size - 1], n)
        hits = np.flatnonzero((windows == tail).all(axis=1))
        if hits.size:
            start = int(hits[-1]) + n  # the latest occurrence: the nearest copy is the likeliest
            return [int(t) for t in context[start : start + limit]]
    return []
