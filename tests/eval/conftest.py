"""Shared BFCL fixtures; the conformance figures are printed at the end of the run so a
reader sees what was covered, not only that it passed."""

from __future__ import annotations

import pytest

from flowcall.eval.bfcl_data import CATEGORIES, BfclCase, load_cases

_SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture(scope="session")
def bfcl_cases() -> dict[str, list[BfclCase]]:
    return {category: load_cases(category) for category in CATEGORIES}


@pytest.fixture(scope="session")
def bfcl_summary(request) -> list[str]:
    """Lines a test adds here are printed once, in the terminal summary."""
    return request.config.stash.setdefault(_SUMMARY, [])


def pytest_terminal_summary(terminalreporter) -> None:
    lines = terminalreporter.config.stash.get(_SUMMARY, [])
    if lines:
        terminalreporter.write_sep("-", "BFCL conformance")
        for line in lines:
            terminalreporter.write_line(line)
