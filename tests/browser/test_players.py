"""The player in the reference web client (Debian's Chromium, driven by Playwright): the
guest account made by the first game, "My games" on two devices, the statistics.

The page keeps the player token in localStorage and sends it only as a bearer token: the
``pages`` fixture fails a test whose page puts a player token in a URL.  What the tests
check is what the page shows, compared with what the API answers to the same token.
"""

from __future__ import annotations

import re
import time

import requests

from tests.four_corners_won import SEED, moves

TOKEN_KEY = "patience.player.token"


# --- helpers ----------------------------------------------------------------------------
def wait_until(page, expression: str, timeout: float = 10.0):
    """Poll a JS expression until it is truthy (the page's Content-Security-Policy forbids
    Playwright's wait_for_function with a string)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        page.wait_for_timeout(50)


def settle(page, version: int, game_id: str):
    page.wait_for_selector(
        f'#table[data-game="{game_id}"][data-version="{version}"]'
        f'[data-moves-version="{version}"][data-busy="0"]', state="attached")


def deal(page, base: str, variant_id: str, seed: int | None = None, name: str | None = None
         ) -> str:
    """Deal a game from the lobby (with this name for the account, if it is made now); its id."""
    page.goto(base + "/")
    page.wait_for_selector("#lobby:not([hidden])")
    if name is not None:
        page.fill("#new-name", name)
    page.check(f'input[name="variant"][value="{variant_id}"]')
    if seed is not None:
        page.fill("#seed", str(seed))
    page.click("#start")
    wait_until(page, "location.hash.startsWith('#game=')")
    game_id = page.evaluate("location.hash.slice('#game='.length)")
    settle(page, 0, game_id)
    return game_id


def stored_token(page) -> str | None:
    return page.evaluate(f"localStorage.getItem('{TOKEN_KEY}')")


def as_player(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def my_games_shown(page) -> list[dict]:
    page.click("#nav-games")
    page.wait_for_selector('#mygames:not([hidden]) #mygames-list[data-loaded="1"]',
                           state="attached")
    return page.eval_on_selector_all("#mygames-list li", """items => items.map(li => ({
        id: li.dataset.game, status: li.dataset.status, text: li.innerText}))""")


def stats_shown(page, variant: str) -> dict:
    page.click("#nav-stats")
    page.wait_for_selector('#stats:not([hidden]) #stats-body[data-loaded="1"]', state="attached")
    return page.eval_on_selector_all(
        f'#stats-body tr[data-variant="{variant}"] [data-stat]',
        "cells => Object.fromEntries(cells.map(c => [c.dataset.stat, c.textContent]))")


# --- the tests ----------------------------------------------------------------------------
def test_the_first_visit_makes_a_guest_account_and_keeps_its_token(pages, live_server,
                                                                   artifacts):
    base = live_server.url
    page = pages.new()
    page.goto(base + "/")
    page.wait_for_selector("#lobby:not([hidden])")
    # The first visit makes the guest: its token kept in the browser, its name shown.
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    token = stored_token(page)
    assert token.startswith("pl_")
    me = requests.get(f"{base}/v1/players/me", headers=as_player(token), timeout=5)
    assert me.status_code == 200
    name = me.json()["name"]
    assert re.fullmatch(r"Guest \d{4}", name)
    wait_until(page, f"document.querySelector('#player-name').textContent === ': {name}'")
    page.screenshot(path=str(artifacts / "players-first-visit.png"))
    game_id = deal(page, base, "clock")
    assert stored_token(page) == token
    # Dealt with the player token: the game is the player's (in their list).
    listed = requests.get(f"{base}/v1/players/me/games", headers=as_player(token), timeout=5)
    assert [g["id"] for g in listed.json()["games"]] == [game_id]
    assert "your game" in page.text_content("#game-status")
    # The token is not on the page until asked for, and the name field is gone.
    assert token not in page.content()
    page.goto(base + "/")
    page.wait_for_selector("#lobby:not([hidden])")
    assert not page.is_visible("#name-field")
    # A second game keeps the same account.
    second = deal(page, base, "four-corners")
    assert stored_token(page) == token
    shown = my_games_shown(page)
    assert [g["id"] for g in shown] == [second, game_id]  # newest first
    assert "Four Corners" in shown[0]["text"]
    assert "In play" in shown[0]["text"]
    assert "The Clock" in shown[1]["text"]
    assert name in page.text_content("#mygames-who")


def test_my_games_filter_and_more_and_a_second_device_resumes_a_game(pages, live_server,
                                                                     artifacts):
    base = live_server.url
    laptop = pages.new()
    first = deal(laptop, base, "four-corners", seed=109)
    laptop.screenshot(path=str(artifacts / "players-game.png"))
    laptop.click("#deal-btn")  # a move: the game is in play, version 1
    settle(laptop, 1, first)
    token = stored_token(laptop)
    # More games through the API with the same token (as another tab would): 23 in all.
    http = requests.Session()
    made = [first]
    for i in range(22):
        answer = http.post(f"{base}/v1/games", headers=as_player(token), timeout=5,
                           json={"variant": "clock" if i % 2 else "salic-law", "seed": i})
        assert answer.status_code == 201, answer.text
        made.append(answer.json()["game"]["id"])
    resigned = made[-1]
    answer = http.post(f"{base}/v1/games/{resigned}/moves", headers=as_player(token),
                       json={"type": "resign"}, timeout=5)
    assert answer.status_code == 200, answer.text

    shown = my_games_shown(laptop)
    assert [g["id"] for g in shown] == made[::-1][:20]  # a page of 20, newest first
    assert shown[0]["status"] == "resigned"
    assert "Resigned" in shown[0]["text"]
    laptop.click("#mygames-more")
    wait_until(laptop, "document.querySelectorAll('#mygames-list li').length === 23")
    assert laptop.is_hidden("#mygames-more")
    ids = laptop.eval_on_selector_all("#mygames-list li", "ls => ls.map(l => l.dataset.game)")
    assert ids == made[::-1]
    laptop.screenshot(path=str(artifacts / "players-my-games.png"), full_page=True)
    laptop.select_option("#filter-variant", "four-corners")
    wait_until(laptop, "document.querySelectorAll('#mygames-list li').length === 1")
    assert laptop.get_attribute("#mygames-list li", "data-game") == first
    laptop.select_option("#filter-variant", "")
    laptop.select_option("#filter-status", "resigned")
    wait_until(laptop, "document.querySelectorAll('#mygames-list li').length === 1")
    assert laptop.get_attribute("#mygames-list li", "data-game") == resigned

    # The account's key, shown on request, taken to another device.
    laptop.click("#nav-account")
    laptop.wait_for_selector("#account-share:not([hidden])")
    assert laptop.get_attribute("#account-token", "type") == "password"
    laptop.click("#account-show")
    assert laptop.get_attribute("#account-token", "type") == "text"
    assert laptop.input_value("#account-token") == token
    laptop.screenshot(path=str(artifacts / "players-account.png"), full_page=True)

    phone = pages.new()
    phone.goto(base + "/#account")
    phone.wait_for_selector("#account:not([hidden])")
    # The phone's first visit made a guest of its own, which the laptop's account replaces.
    wait_until(phone, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    assert stored_token(phone) not in (None, token)
    phone.fill("#account-paste", "pl_not_a_real_token_at_all")
    phone.click("#account-use")
    phone.wait_for_selector("#account-error:not([hidden])")
    assert "does not know" in phone.text_content("#account-error")
    phone.fill("#account-paste", laptop.input_value("#account-token"))
    phone.click("#account-use")
    phone.wait_for_selector('#mygames:not([hidden]) #mygames-list[data-loaded="1"]',
                            state="attached")
    assert stored_token(phone) == token
    assert phone.eval_on_selector_all("#mygames-list li", "ls => ls.map(l => l.dataset.game)") \
        == made[::-1][:20]

    # The phone resumes the laptop's game: it plays it (with the player token).
    phone.select_option("#filter-variant", "four-corners")
    wait_until(phone, "document.querySelectorAll('#mygames-list li').length === 1")
    assert "Resume" in phone.text_content("#mygames-list li")
    phone.click(f'#mygames-list li[data-game="{first}"] a')
    settle(phone, 1, first)
    assert phone.is_hidden("#readonly")
    assert "your game" in phone.text_content("#game-status")
    phone.click("#deal-btn")
    settle(phone, 2, first)
    assert requests.get(f"{base}/v1/games/{first}", timeout=5).json()["version"] == 2
    # Back on the laptop, the game is where the phone left it.
    laptop.goto(f"{base}/#game={first}")
    settle(laptop, 2, first)
    assert "your game" in laptop.text_content("#game-status")
    # A link opened on the phone (a fresh page, not from the list) is the player's too.
    phone.goto(f"{base}/#game={made[1]}")
    phone.reload()
    wait_until(phone, "document.querySelector('#game-status').textContent.includes('your game')")
    assert phone.is_hidden("#readonly")


def test_the_statistics_show_a_resigned_and_a_won_game(pages, live_server, artifacts):
    base = live_server.url
    page = pages.new()
    page.goto(base + "/#stats")
    page.wait_for_selector("#stats:not([hidden])")
    assert "no account yet" in page.text_content("#stats-empty")

    game_id = deal(page, base, "four-corners", seed=109)
    page.click("#resign-btn")
    page.click("#resign-yes")
    page.wait_for_selector("#banner.resigned:not([hidden])")
    row = stats_shown(page, "four-corners")
    assert row == {"variant": "Four Corners", "played": "1", "won": "0", "lost": "0",
                   "resigned": "1", "in_play": "0", "win_rate": "0%", "current_streak": "0",
                   "longest_streak": "0", "fewest_moves": "\u2013", "fastest_win": "\u2013"}
    shown = my_games_shown(page)
    assert [(g["id"], g["status"]) for g in shown] == [(game_id, "resigned")]
    made = requests.get(f"{base}/v1/games/{game_id}", timeout=5).json()["moves_made"]
    assert "Resigned" in shown[0]["text"]
    assert f"{made} move{'' if made == 1 else 's'}, ended" in shown[0]["text"]

    # The solver's Four Corners deal, won through the API with the same player token.
    token = stored_token(page)
    http = requests.Session()
    created = http.post(f"{base}/v1/games", headers=as_player(token), timeout=5,
                        json={"variant": "four-corners", "seed": SEED})
    assert created.status_code == 201, created.text
    won_id = created.json()["game"]["id"]
    for move, _card in moves():
        answer = http.post(f"{base}/v1/games/{won_id}/moves", json=move.to_dict(),
                           headers=as_player(token), timeout=10)
        assert answer.status_code == 200, answer.text
    won = answer.json()["game"]
    assert won["status"] == "won"
    stats = http.get(f"{base}/v1/players/me/stats", headers=as_player(token), timeout=5).json()
    figures = next(v for v in stats["variants"] if v["variant"] == "four-corners")

    page.goto(base + "/")
    page.wait_for_selector("#lobby:not([hidden])")
    row = stats_shown(page, "four-corners")
    assert (row["played"], row["won"], row["resigned"], row["win_rate"]) == ("2", "1", "1", "50%")
    assert (row["current_streak"], row["longest_streak"]) == ("1", "1")
    assert row["fewest_moves"] == str(figures["fewest_moves"]) == str(won["moves_made"])
    assert figures["fastest_win_ms"] is not None
    assert re.fullmatch(r"\d+\.\d s|\d+ min \d+ s|\d+ h \d+ min", row["fastest_win"])
    page.screenshot(path=str(artifacts / "players-statistics.png"), full_page=True)
    clock = stats_shown(page, "clock")
    assert (clock["played"], clock["win_rate"], clock["fewest_moves"]) == ("0", "\u2013", "\u2013")
    shown = my_games_shown(page)
    assert [(g["id"], g["status"]) for g in shown] == [(won_id, "won"), (game_id, "resigned")]
    assert f"{won['moves_made']} moves, ended" in shown[0]["text"]
