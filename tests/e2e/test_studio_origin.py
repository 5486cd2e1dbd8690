"""The studio's server guard in a real browser (Debian's chromium): a page under another host name
that resolves to 127.0.0.1 (DNS rebinding, played by chromium's --host-resolver-rules), a page of
another origin that opens the studio's websocket, and a page that frames the studio, each get no
studio; the studio on its own name still opens with its canvas. The studio is `flowcall studio`
run from a folder with no .streamlit/ (as from the installed wheel)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, chdir, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import CHROMIUM
from tests.local_servers import free_port, serving
from tests.security.conftest import Attack

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
FLOWCALL = str(Path(sys.executable).with_name("flowcall"))
EVIL = "evil.test"  # chromium resolves it to 127.0.0.1, as a rebinding DNS server would
APP = '[data-testid="stApp"]'


def started(argv: list[str], home: Path, port: int):
    env = {
        **os.environ,
        "FLOWCALL_DATABASE_URL": f"sqlite:///{home / 'flowcall.db'}",
        "FLOWCALL_HOME": str(home),
    }
    env.pop("FLOWCALL_STUDIO_HOSTS", None)
    url = f"http://127.0.0.1:{port}"
    return serving(
        argv, f"{url}/_stcore/health", home / "studio.log", within_s=90, name="the studio", env=env
    )


@pytest.fixture
def attack(request) -> Attack:
    """The attack record, as tests/security's tests keep it."""
    record = Attack(test=request.node.nodeid)
    request.node._attack = record
    return record


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    home = tmp_path_factory.mktemp("origin")
    port = free_port()
    with ExitStack() as stack:
        with chdir(home):  # no .streamlit/ here: the settings come with `flowcall studio`
            stack.enter_context(started([FLOWCALL, "studio", "--port", str(port)], home, port))
        yield SimpleNamespace(url=f"http://127.0.0.1:{port}", port=port)


@pytest.fixture(scope="module")
def chromium():
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing: `apt-get install chromium` (scripts/setup.sh --test does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        rules = f"--host-resolver-rules=MAP {EVIL} 127.0.0.1"
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", rules])
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


@contextmanager
def foreign_site(html: str, name: str = EVIL) -> Iterator[str]:
    """Another site: one page (`html`) served on a port of its own; its URL under `name`."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self):
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{name}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_studio_opens_on_its_own_name_with_its_canvas(page, studio):
    page.goto(studio.url + "/")
    expect(page.get_by_role("heading", name="Flows", exact=True).first).to_be_visible(timeout=90_000)
    canvas = page.frame_locator('iframe[title*="flowcall_canvas"]').first
    expect(canvas.locator(".react-flow__node").first).to_be_visible(
        timeout=60_000
    )  # framed by the studio itself


def test_a_rebound_host_name_gets_no_studio(attack, page, studio):
    attack.tried(
        f"a page on {EVIL}, whose name now resolves to 127.0.0.1, loads http://{EVIL}:{studio.port}/ "
        "in the browser (DNS rebinding): to the browser it is that page's own origin",
        expected="403 and no Streamlit app: nothing to drive",
    )
    response = page.goto(f"http://{EVIL}:{studio.port}/")
    page.wait_for_timeout(5_000)  # time enough for a studio to connect and draw, were it served
    apps = page.locator(APP).count()
    text = page.inner_text("body")[:80]
    attack.observed(f"status {response.status}; Streamlit apps in the page: {apps}; text: {text!r}")
    assert response.status == 403 and apps == 0


def test_a_page_of_another_origin_cannot_open_the_studios_websocket(attack, page, studio):
    attack.tried(
        "a page of another origin (another app on this machine: localhost, another port) opens "
        "ws://127.0.0.1:PORT/_stcore/stream, the studio's own host name, from its script",
        expected="the browser reports the websocket failed: no studio session",
    )
    script = f"""<script>
      const ws = new WebSocket("ws://127.0.0.1:{studio.port}/_stcore/stream");
      ws.onopen = () => document.title = "open";
      ws.onerror = ws.onclose = () => document.title = document.title === "open" ? "open" : "refused";
    </script>"""
    with foreign_site(script, "localhost") as url:
        page.goto(url)
        page.wait_for_function("document.title !== ''", timeout=30_000)
        outcome = page.title()
    attack.observed(f"the websocket from {url}: {outcome}")
    assert outcome == "refused"


def test_a_page_that_frames_the_studio_shows_no_studio(attack, page, studio):
    attack.tried(
        "another site puts the studio in an iframe under a decoy, to steer a click on Grant (clickjacking)",
        expected="the browser refuses to show the studio in the frame: no Streamlit content there",
    )
    html = f'<h1>Win a prize</h1><iframe id="lure" src="{studio.url}/" width="1200" height="800"></iframe>'
    with foreign_site(html) as url:
        page.goto(url)
        page.wait_for_timeout(8_000)  # time enough for a framed studio to draw
        frames = [f for f in page.frames if f != page.main_frame]
        inside = sum(f.locator(APP).count() for f in frames)
        where = [f.url for f in frames]
    attack.observed(f"frames: {where}; Streamlit apps inside them: {inside}")
    assert frames and inside == 0


def test_a_studio_started_without_its_guard_draws_nothing(attack, page, tmp_path):
    attack.tried(
        "the studio's script started with plain `streamlit run flowcall/studio/app.py` (no guard "
        "in front of it), opened in the browser",
        expected="the page says the studio was started without its server guard; no flow list, no pages",
    )
    port = free_port()
    argv = [sys.executable, "-m", "streamlit", "run", str(ROOT / "flowcall" / "studio" / "app.py")]
    argv += ["--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with chdir(tmp_path), started(argv, tmp_path, port):
        page.goto(f"http://127.0.0.1:{port}/")
        expect(page.locator(APP)).to_be_visible()
        page.wait_for_timeout(8_000)
        said = page.inner_text("body")
        flows = page.get_by_role("heading", name="Flows", exact=True).count()
    attack.observed(
        f"'without its server guard' said: {'without its server guard' in said}; Flows headings: {flows}"
    )
    assert "without its server guard" in said and flows == 0


def test_streamlit_run_app_py_serves_the_studio_behind_its_guard(page, tmp_path):
    """The clone's way (and the other browser tests'): pages open by their paths; a foreign name: 403."""
    port = free_port()
    argv = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port)]
    argv += [
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    with chdir(ROOT), started(argv, tmp_path, port):
        page.goto(f"http://127.0.0.1:{port}/ask")
        expect(page.get_by_role("heading", name="Run a flow", exact=True).first).to_be_visible(timeout=90_000)
        assert page.goto(f"http://{EVIL}:{port}/ask").status == 403
