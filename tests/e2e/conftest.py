"""The studio in a real browser: `streamlit run app.py` on 127.0.0.1 with its own database,
driven by Playwright in Debian's chromium. Screenshots of every page are kept as artifacts
in test-artifacts/screenshots/ (or $FLOWCALL_SCREENSHOTS)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.local_servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")


@contextmanager
def launched(home: Path, database_url: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`streamlit run app.py` on a free port of 127.0.0.1, on `database_url`, until the block
    ends: its base URL and its process (the studio's server, where its runner's threads run)."""
    port = free_port()
    env = {**os.environ, "FLOWCALL_DATABASE_URL": database_url}
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ROOT / "app.py"),
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    url = f"http://127.0.0.1:{port}"
    log = home / f"streamlit-{port}.log"
    with serving(argv, f"{url}/_stcore/health", log, within_s=90, name="streamlit", env=env) as proc:
        yield url, proc


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    """A studio serving a fresh database: its base URL and the database's URL."""
    home = tmp_path_factory.mktemp("studio")
    database_url = f"sqlite:///{home / 'flowcall.db'}"
    with launched(home, database_url) as (url, _):
        yield SimpleNamespace(url=url, database_url=database_url)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.is_file():
        message = f"{CHROMIUM} is missing: `apt-get install chromium` (scripts/setup.sh --test does it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 1200}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


@pytest.fixture(scope="session")
def shots() -> Path:
    folder = Path(os.environ.get("FLOWCALL_SCREENSHOTS", ROOT / "test-artifacts" / "screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder
