"""The studio's API page in a real browser: a key is made, shown once, works, and is revoked."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from flowcall.service.front import FlowCall
from tests.e2e.studio_ui import click, fill, go, screenshot

pytestmark = [pytest.mark.browser]


def test_a_key_is_made_shown_once_and_revoked(studio, page, shots):
    # (opened second: the first page a freshly started studio serves at a deep link shows Streamlit's
    # "Page not found" dialog over it; see Known limits)
    go(page, studio.url, "/inspector", "Runs & inspector")
    go(page, studio.url, "/http-api", "API")
    expect(
        page.locator('[data-testid="stCode"]').filter(has_text="/v1/chat/completions").first
    ).to_be_visible()
    fill(page, "Name", "browser-app", commit=False)
    click(page, "Create key")
    shown = page.locator('[data-testid="stCode"]').filter(has_text="fc_").first
    expect(shown).to_be_visible()
    secret = shown.inner_text().strip()
    app = FlowCall.open(studio.database_url)
    try:
        assert app.check_key(secret).name == "browser-app"
        screenshot(page, shots / "api-page-new-key.png")
        click(page, "I have copied it: hide the key")
        expect(page.locator('[data-testid="stCode"]').filter(has_text=secret)).to_have_count(0)
        click(page, "Revoke")
        expect(page.get_by_text("Revoked browser-app.")).to_be_visible()
        assert app.check_key(secret) is None
    finally:
        app.store.close()
