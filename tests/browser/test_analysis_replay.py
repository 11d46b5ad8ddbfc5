"""The web client after a game ends: whether the deal was winnable (the server's
analysis), and a step-through replay of the winning line on the same table; and the
lobby's "a deal that can be won" (in a real browser, like test_web_client.py)."""

from __future__ import annotations

import logging

import pytest
import redis
import requests

from service.app import create_app
from service.engine import Move, get_variant
from tests.browser.conftest import LiveServer
from tests.browser.test_web_client import (
    assert_table_matches,
    settle,
    start_from_lobby,
    wait_until,
)
from tests.solver_worker import quickly_won_seed, wait_for

VARIANT = "salic-law"


@pytest.fixture
def live_server(redis_url):
    """The app with room for the solver: the analysis of a deal the solver wins quickly
    is answered by the request itself, and a winnable deal is searched for by the
    creation (no worker runs here)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = create_app({"REDIS_URL": redis_url, "RATELIMIT_ENABLED": False,
                      "ANALYSIS_INLINE_SECONDS": 10, "WINNABLE_SEARCH_SECONDS": 30})
    with LiveServer(app) as server:
        yield server
    app.services.backend.close()


def public(state) -> dict:
    """The piles of an engine state as the API shows them."""
    return {"piles": [{"id": spec.id, "kind": spec.kind, "count": len(cards),
                       "cards": [] if spec.kind == "stock" else [str(c) for c in cards]}
                      for spec, cards in zip(state.variant.layout, state.piles, strict=True)]}


def game_keys(redis_url) -> list[bytes]:
    with redis.Redis.from_url(redis_url) as client:
        return [key for key in client.keys("game:{*}") if not key.endswith(b":feed")
                and b"}:" not in key]


def test_the_verdict_and_the_replay_of_the_winning_line(pages, live_server, redis_url,
                                                        artifacts):
    seed = quickly_won_seed(VARIANT)
    base = live_server.url
    variant = requests.get(f"{base}/v1/variants", timeout=5).json()["variants"]
    variant = next(v for v in variant if v["id"] == VARIANT)
    page = pages.new()
    game_id = start_from_lobby(page, base, VARIANT, seed)
    assert page.is_hidden("#analysis")
    page.click("#resign-btn")
    page.click("#resign-yes")
    settle(page, 1)
    page.wait_for_selector('#analysis[data-verdict="winnable"]')
    analysis = requests.get(f"{base}/v1/games/{game_id}/analysis", timeout=10).json()
    line = analysis["line"]
    assert page.text_content("#verdict").startswith(
        f"This deal was winnable: the solver found a winning line of {len(line)} moves")
    page.screenshot(path=str(artifacts / "analysis-verdict.png"), full_page=True)

    # The replay deals the same cards and steps through the line, forwards and back.
    games_before = set(game_keys(redis_url))
    page.click("#replay-btn")
    page.wait_for_selector('#table[data-replay="0"]')
    wait_until(page, "!document.getElementById('replay-next').disabled")
    states = [get_variant(VARIANT).deal(seed)]
    for listed in line[:3]:
        move = Move.from_dict({k: v for k, v in listed.items() if k != "card"})
        states.append(states[-1].apply(move)[0])
    assert_table_matches(page, public(states[0]), variant)
    assert page.text_content("#replay-step").startswith("The deal, before the first of")
    assert page.is_disabled("#replay-prev")
    for step in (1, 2, 3):
        page.click("#replay-next")
        page.wait_for_selector(f'#table[data-replay="{step}"]')
        wait_until(page, "!document.getElementById('replay-next').disabled")
        assert_table_matches(page, public(states[step]), variant)
        assert page.text_content("#replay-step").startswith(f"Move {step} of {len(line)}: ")
    page.screenshot(path=str(artifacts / "analysis-replay.png"), full_page=True)
    page.click("#replay-prev")
    page.wait_for_selector('#table[data-replay="2"]')
    assert_table_matches(page, public(states[2]), variant)
    page.click("#replay-next")
    page.wait_for_selector('#table[data-replay="3"]')
    assert_table_matches(page, public(states[3]), variant)

    # Back to the game: its table again, and the replay's own game is deleted.
    assert len(set(game_keys(redis_url)) - games_before) == 1
    page.click("#replay-close")
    page.wait_for_selector('#table[data-replay=""]')
    assert page.is_hidden("#replay-bar")
    assert page.is_visible("#replay-btn")
    game = requests.get(f"{base}/v1/games/{game_id}", timeout=5).json()
    assert_table_matches(page, game, variant)
    wait_for(lambda: set(game_keys(redis_url)) == games_before, seconds=10,
             what="the replay's game deleted")
    assert f"game:{{{game_id}}}".encode() in games_before


def test_the_lobby_deals_a_winnable_deal(pages, live_server):
    page = pages.new()
    page.goto(live_server.url + "/")
    page.wait_for_selector("#lobby:not([hidden])")
    page.check(f'input[name="variant"][value="{VARIANT}"]')
    page.check("#winnable")
    assert page.is_disabled("#seed")
    page.click("#start")
    wait_until(page, "location.hash.startsWith('#game=')", timeout=40)
    game_id = page.evaluate("location.hash.slice('#game='.length)")
    settle(page, 0, game_id)
    game = requests.get(f"{live_server.url}/v1/games/{game_id}", timeout=5).json()
    assert (game["winnable"], game["seed"]) == (True, None)
    assert "a winnable deal" in page.text_content("#game-status")
    assert page.text_content("#seed-shown").startswith("hidden until the game ends")
