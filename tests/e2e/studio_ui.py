"""Playwright steps for Streamlit widgets, found by their visible labels."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout


def settle(page: Page, timeout_ms: int = 300_000) -> None:
    """Wait until the script run that the last action started has finished."""
    running = page.locator('[data-testid="stApp"][data-test-script-state="running"]')
    try:  # the run starts a moment after the action: on until it shows, for 400 ms at most
        running.wait_for(state="attached", timeout=400)
    except PlaywrightTimeout:
        pass  # it ended before it was seen, or the action started none
    running.wait_for(state="detached", timeout=timeout_ms)
    page.wait_for_timeout(200)


def widget(page: Page, testid: str, label: str) -> Locator:
    return (
        page.locator(f'[data-testid="{testid}"]')
        .filter(has=page.locator('[data-testid="stWidgetLabel"]', has_text=label))
        .first
    )


def fill(page: Page, label: str, text: str, *, area: bool = False, commit: bool = True) -> None:
    """Type into a text box; `commit` sends it (in a form, leave it to the submit button)."""
    box = widget(page, "stTextArea" if area else "stTextInput", label).locator("textarea, input").first
    box.fill(text)
    if commit:
        box.press("Control+Enter" if area else "Enter")
        settle(page)


def choose(page: Page, label: str, option: str, *, multi: bool = False) -> None:
    box = widget(page, "stMultiSelect" if multi else "stSelectbox", label).locator("input").first
    box.click()
    page.keyboard.type(option)  # typing opens the list and narrows it to the option
    page.get_by_role("option", name=option, exact=True).click()
    if multi:
        page.keyboard.press("Escape")
    settle(page)


def click(page: Page, name: str) -> None:
    page.get_by_role("button", name=name, exact=True).click()
    settle(page)


def tab(page: Page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()
    page.wait_for_timeout(300)


def go(page: Page, base: str, path: str, title: str) -> None:
    page.goto(base + path)
    expect(page.get_by_role("heading", name=title, exact=True).first).to_be_visible(timeout=60_000)
    settle(page)


def screenshot(page: Page, path, anchor: Locator | None = None) -> None:
    """A picture of the page; with `anchor`, scrolled so that it is at the top (Streamlit's
    main area scrolls inside the page, so a full-page shot would not reach further down)."""
    if anchor is not None:
        anchor.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
    page.screenshot(path=path)


def view(page: Page, name: str) -> None:
    """A view of the Flows page (its segmented control: Canvas, Form, Versions...)."""
    page.locator('[data-testid="stButtonGroup"] button').filter(has_text=name).first.click()
    settle(page)
