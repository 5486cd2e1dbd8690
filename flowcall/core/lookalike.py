"""Names that read the same. A flow named `cоmmute-weather` (with a Cyrillic о), `Commute-Weather`,
`ｃｏｍｍｕｔｅ-weather` (fullwidth) or `proﬁle` (a ligature) reads as the saved `commute-weather`
or `profile` in a list or a command, so storing one says so.

A name's skeleton, after Unicode's confusable detection (UTS #39): compatibility forms folded
(NFKC: fullwidth letters, ligatures), case folded, then each character replaced by one chosen
among its look-alikes in Unicode's confusables list (shipped by the confusable_homoglyphs
package). Two names with the same skeleton read the same. Names in one script that only share
letters with another (北京天气 and 上海天气) have different skeletons.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import cache

from confusable_homoglyphs.confusables import confusables_data


@cache
def _prototypes() -> dict[str, str]:
    """Each confusable character -> the smallest character of its group of look-alikes (the
    groups are the list's pairs joined up, so a ~ b and b ~ c put a, b and c in one group)."""
    parent: dict[str, str] = {}

    def root(char: str) -> str:
        while parent.get(char, char) != char:
            char = parent[char]
        return char

    for char, look_alikes in confusables_data.items():
        for other in (entry["c"] for entry in look_alikes if len(entry["c"]) == 1):
            a, b = root(char), root(other)
            if a != b:  # the smaller root stays: a group's root is its smallest character
                parent[max(a, b)] = min(a, b)
    return {char: root(char) for char in {*parent, *confusables_data}}


def skeleton(name: str) -> str:
    folded = unicodedata.normalize("NFKC", name).casefold()
    prototypes = _prototypes()
    return "".join(prototypes.get(char, char) for char in folded)


def looks_like(name: str, others: Iterable[str]) -> str | None:
    """The first of `others` that is not `name` but reads the same, else None."""
    mine = skeleton(name)
    return next((other for other in others if other != name and skeleton(other) == mine), None)
