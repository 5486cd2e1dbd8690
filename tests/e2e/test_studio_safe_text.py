"""In Debian's chromium: text from a run file and from a plugin that tries to load an image or
make a link (Markdown image, link, autolink, bare URL) shows as text. The browser fetches
nothing from those addresses, and the page has no such <img> or <a>."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from flowcall.service.front import FlowCall
from tests.e2e.studio_ui import choose, click, go, screenshot, tab
from tests.security.test_studio_attacks import CARD, PAYLOAD, attack_run, write_lure_plugin

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module", autouse=True)
def _lure_plugin(tmp_path_factory):
    """A plugin whose description and parameter hold the payload; set before the studio starts."""
    folder = write_lure_plugin(tmp_path_factory.mktemp("plugins") / "lure_e2e", PAYLOAD)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLOWCALL_PLUGIN_DIRS", str(folder))
        yield


def nothing_live(page: Page) -> None:
    """No image from the payload's address, no link to it, no javascript: link."""
    expect(page.locator('img[src*="127.0.0.1:9"]')).to_have_count(0)
    expect(page.locator('a[href*="evil.example"]')).to_have_count(0)
    expect(page.locator('a[href^="javascript:"]')).to_have_count(0)


def test_payloads_show_as_text_and_load_nothing(studio, page, shots):
    FlowCall.open(studio.database_url).import_run(attack_run(id="card-run", final_answer=CARD))
    fetched: list[str] = []
    page.on(
        "request",
        lambda request: (
            fetched.append(request.url)
            if "127.0.0.1:9/" in request.url or "evil.example" in request.url
            else None
        ),
    )

    go(page, studio.url, "/", "Flows")  # a first visit to a deep link shows "Page not found" over it
    go(page, studio.url, "/inspector", "Runs & inspector")
    expect(page.get_by_role("button", name="Export run as JSON")).to_be_visible()  # the run is drawn
    nothing_live(page)
    # the text as written (a URL's "://" carries an invisible word joiner, so match up to it)
    expect(page.get_by_text("Question: What? ![x](http", exact=False).first).to_be_visible()
    expect(page.get_by_text("more [link](http", exact=False).first).to_be_visible()
    for _ in range(2):  # the tool call, then the error step
        click(page, "Next ▶")
        nothing_live(page)
    expect(page.get_by_text("the tool said ![x]", exact=False).first).to_be_visible()
    screenshot(page, shots / "safe-text-inspector.png", page.get_by_role("tab", name="Timeline"))

    go(page, studio.url, "/tools", "Plugins")
    expect(page.get_by_text("lure/v1/lure", exact=False).first).to_be_visible()
    tab(page, "Try it")
    choose(page, "Tool", "lure/v1/lure")
    expect(page.get_by_text("Weather ![x]", exact=False).filter(visible=True).first).to_be_visible()
    nothing_live(page)
    page.wait_for_timeout(500)
    assert fetched == []
