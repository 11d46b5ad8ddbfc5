"""Fixtures of the browser tests: the real app on a free port (werkzeug, threaded, in a
thread of the test process) over the harness's Redis, and Debian's Chromium driven by
Playwright for Python.

Playwright's own browser downloads are never used (no ``playwright install``): the tests
drive ``/usr/bin/chromium`` (``CHROMIUM`` overrides the path).  Without it, or without
the ``playwright`` package, every browser test is SKIPPED with a loud reason, never
passed.  Each page records every request it makes; a test fails if one of them is not
a path of the public contract (openapi.yaml), ``/healthz``, ``/`` or ``/web/...``, or if a
player token (``pl_...``) shows in one.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from service.app import close_app, create_app

ROOT = Path(__file__).resolve().parent.parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 900}

#: What the page may ask for: the documented /v1 paths (openapi.yaml), /healthz, / and /web/.
GAME = r"/v1/games/[A-Za-z0-9_-]+"
DAY = r"/v1/daily/[a-z-]+/[0-9]{4}-[0-9]{2}-[0-9]{2}(?:T[0-9]{6})?"
WEEK = r"/v1/daily/[a-z-]+/weeks/[0-9]{4}-W[0-9]{2}/board"
STREAKS = r"/v1/daily/[a-z-]+/streaks"
PLAYER = r"/players/[a-z0-9-]+"
ALLOWED_PATHS = [re.compile(f"^{pattern}$") for pattern in (
    r"/", r"/web/[A-Za-z0-9_-][A-Za-z0-9._-]*", r"/healthz", r"/v1/variants",
    r"/v1/games", GAME, GAME + r"/(moves|undo|history|hint|autoplay|events|analysis)", r"/v1/stats",
    r"/v1/openapi\.yaml", r"/v1/players", r"/v1/players/me", r"/v1/players/me/(games|stats)",
    r"/v1/daily", DAY, DAY + r"/(board|events)", DAY + r"/board" + PLAYER,
    WEEK, WEEK + PLAYER, STREAKS, STREAKS + PLAYER,
)]
#: Query strings: the events feed (?after=<version>), a page of the player's games, a
#: page of a day's, a week's or the streaks' board and the entries around a player on it.
BOARD_QUERY = re.compile(r"^limit=\d+(&cursor=[A-Za-z0-9_.%:-]+)?$")
AROUND_QUERY = re.compile(r"^around=\d+$")
ALLOWED_QUERY = {
    GAME + "/events": re.compile(r"^after=\d+$"),
    "/v1/players/me/games": re.compile(
        r"^limit=\d+(&variant=[a-z-]+)?(&status=[a-z]+)?(&cursor=\d+)?$"),
    DAY + "/board": BOARD_QUERY, WEEK: BOARD_QUERY, STREAKS: BOARD_QUERY,
    DAY + "/board" + PLAYER: AROUND_QUERY, WEEK + PLAYER: AROUND_QUERY,
    STREAKS + PLAYER: AROUND_QUERY,
    DAY + "/events": re.compile(r"^after=(0|\d+-\d+)$"),
}

#: A player token (docs/players.md): it must never show in a URL.
PLAYER_TOKEN = re.compile(r"pl_[a-z2-7]{26}_")

SKIP_REASON: list[str] = []


def pytest_terminal_summary(terminalreporter):
    if SKIP_REASON:
        terminalreporter.write_sep("!", "BROWSER TESTS SKIPPED", red=True, bold=True)
        terminalreporter.write_line(SKIP_REASON[0], red=True, bold=True)


def _skip(reason: str):
    if not SKIP_REASON:
        SKIP_REASON.append(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def playwright_driver():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip("BROWSER TESTS SKIPPED: the playwright package is missing "
              "(make test installs it with the dev extra: pip install -e '.[dev]')")
    if not os.access(CHROMIUM, os.X_OK):
        _skip(f"BROWSER TESTS SKIPPED: no Chromium at {CHROMIUM}. Install Debian's package: "
              "apt-get update && apt-get install -y chromium (.ci/run does it before make test)")
    manager = sync_playwright().start()
    yield manager
    manager.stop()


@pytest.fixture(scope="module")
def browser(playwright_driver):
    """One Chromium per test module. Playwright starts it with a fresh temporary profile
    (user-data dir) and removes it afterwards; every context is a fresh, separate one."""
    browser = playwright_driver.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
    yield browser
    browser.close()


class LiveServer:
    def __init__(self, app):
        from werkzeug.serving import make_server

        self.app = app
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="live-server",
                                       kwargs={"poll_interval": 0.1}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def live_server(redis_url):
    """The real app (create_app) served over HTTP on a free port, on the harness's Redis."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = create_app({"REDIS_URL": redis_url, "RATELIMIT_ENABLED": False})
    with LiveServer(app) as server:
        yield server
    close_app(app)


class Pages:
    """Opens pages in fresh browser contexts (separate storage: a second device or a
    spectator) and records every request and page error of each."""

    def __init__(self, browser, base_url):
        self.browser = browser
        self.base_url = base_url
        self.contexts = []
        self.requests: list[str] = []
        self.errors: list[str] = []

    def new(self, viewport=None, tokens: dict | None = None, **options):
        context = self.browser.new_context(viewport=viewport or DESKTOP, **options)
        context.set_default_timeout(10_000)
        self.contexts.append(context)
        context.on("request", lambda request: self.requests.append(request.url))
        for game_id, token in (tokens or {}).items():
            # The token kept by the device that dealt the game (as the page itself keeps it).
            context.add_init_script(
                f"localStorage.setItem({_js('patience.token.' + game_id)}, {_js(token)});")
        page = context.new_page()
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        return page

    def close(self):
        for context in self.contexts:
            context.close()

    def undocumented(self) -> list[str]:
        bad = []
        base = urlsplit(self.base_url)
        for url in self.requests:
            parts = urlsplit(url)
            if (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
                bad.append(url)
                continue
            if PLAYER_TOKEN.search(url):  # a player token is a secret: never in a URL
                bad.append(url)
                continue
            if not any(p.match(parts.path) for p in ALLOWED_PATHS):
                bad.append(url)
                continue
            if parts.query:
                allowed = [q for pattern, q in ALLOWED_QUERY.items()
                           if re.match(f"^{pattern}$", parts.path)]
                if not allowed or not allowed[0].match(parts.query):
                    bad.append(url)
        return bad


def _js(text: str) -> str:
    import json

    return json.dumps(text)


@pytest.fixture
def pages(browser, live_server):
    recorder = Pages(browser, live_server.url)
    yield recorder
    recorder.close()
    assert not recorder.errors, f"uncaught errors in the page: {recorder.errors}"
    assert recorder.requests, "the page made no request at all"
    bad = recorder.undocumented()
    assert not bad, f"the page called URLs that are not documented /v1 paths: {bad}"


@pytest.fixture(scope="session")
def artifacts():
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
