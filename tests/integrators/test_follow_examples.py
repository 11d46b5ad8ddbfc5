"""The examples of following a game run: ``examples/follow.py`` (httpx-sse) and
``examples/follow.html`` (EventSource, in Debian's Chromium driven by Playwright).

The server closes every stream after one second (``SSE_MAX_SECONDS``), so both examples
must resume with ``Last-Event-ID`` while the game goes on, and see each change once.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import threading
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "examples"
CHROMIUM = os.environ.get("CHROMIUM") or "/usr/bin/chromium"
API_ENV = {"SSE_MAX_SECONDS": "1", "SSE_RETRY_MS": "200", "SSE_HEARTBEAT_SECONDS": "1"}
#: Salic Law 42: deals, then resign.
MOVES = [{"type": "deal"}] * 4


def _new_game(base: str) -> tuple[str, str]:
    created = requests.post(f"{base}/v1/games", json={"variant": "salic-law", "seed": 42},
                            timeout=10).json()
    return created["game"]["id"], created["player_token"]


def _play(base: str, game_id: str, token: str, move: dict) -> int:
    answer = requests.post(f"{base}/v1/games/{game_id}/moves", json=move, timeout=10,
                           headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["game"]["version"]


def _load_follow_py():
    spec = importlib.util.spec_from_file_location("follow_example", EXAMPLES / "follow.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(60)
def test_follow_py_prints_every_change_once_across_reconnections(api):
    follow = _load_follow_py().follow
    game_id, token = _new_game(api.base)
    seen: list[tuple[str, int]] = []
    result: list = []
    follower = threading.Thread(target=lambda: result.append(follow(
        api.base, game_id, 0, lambda name, data: seen.append(
            (name, data["version"] if name != "end" else data["game"]["version"])))))
    follower.start()
    versions = []
    for move in MOVES:
        versions.append(_play(api.base, game_id, token, move))
        time.sleep(0.7)  # so that streams close (after 1 s) between moves
    final = _play(api.base, game_id, token, {"type": "resign"})
    follower.join(30)
    assert not follower.is_alive()
    assert seen == [*[("move", v) for v in versions], ("move", final), ("end", final)]
    assert result[0]["game"]["status"] == "resigned"
    # A follower that has seen the end is told so (204) and stops at once.
    assert _load_follow_py().follow(api.base, game_id, final) is None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.timeout(90)
def test_follow_html_shows_every_change_from_another_origin(api):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("BROWSER TEST SKIPPED: the playwright package is missing (dev extra)")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"BROWSER TEST SKIPPED: no Chromium at {CHROMIUM} "
                    "(apt-get install -y chromium; .ci/run does it)")
    pages = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(EXAMPLES)))
    serving = threading.Thread(target=pages.serve_forever, daemon=True)
    serving.start()
    game_id, token = _new_game(api.base)
    _play(api.base, game_id, token, MOVES[0])  # before the page: it starts at version 1
    try:
        with sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                      "--disable-background-networking", "--disable-component-update"])
            try:
                page = browser.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.goto(f"http://127.0.0.1:{pages.server_port}/follow.html"
                          f"?api={api.base}&game={game_id}")
                page.wait_for_selector("body[data-state=following]", timeout=15_000)
                for move in MOVES[1:]:
                    _play(api.base, game_id, token, move)
                    time.sleep(0.7)  # the server closes the stream: EventSource resumes
                final = _play(api.base, game_id, token, {"type": "resign"})
                page.wait_for_selector("body[data-state=ended]", timeout=15_000)
                lines = page.locator("#log li").all_inner_texts()
                assert [line.split(" ")[0] for line in lines[:-1]] == \
                    [f"v{v}" for v in range(2, final + 1)]
                assert lines[-1] == "the game is resigned"
                assert page.inner_text("#version") == str(final)
                assert errors == []
            finally:
                browser.close()
    finally:
        pages.shutdown()
        pages.server_close()
