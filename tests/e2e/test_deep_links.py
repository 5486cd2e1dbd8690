"""A bookmarked page opened on a freshly started studio still goes through app.py (its own
module, so the studio it gets has served nothing before)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.studio_ui import go

pytestmark = [pytest.mark.browser]


@pytest.mark.parametrize(
    "path, title", [("/inspector", "Runs & inspector"), ("/tools", "Plugins"), ("/evals", "Experiments")]
)
def test_a_deep_link_opens_the_page_inside_the_studio(studio, page, path, title):
    go(page, studio.url, path, title)
    navigation = page.locator('[data-testid="stSidebarNav"]')
    for label in ("Flows", "Run", "Runs & inspector", "Experiments", "Plugins", "Models"):
        expect(navigation.get_by_text(label, exact=True)).to_be_visible()
    expect(navigation.get_by_text("app", exact=True)).to_have_count(0)  # not the bare pages/ folder listing
