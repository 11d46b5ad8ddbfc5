"""The daily deal in the reference web client (Debian's Chromium, driven by Playwright):
the Daily view shows today's deals, a guest starts their ranked attempt and plays a move,
resigns, and finds themselves on the day's board with their rank; a second guest, in a
browser context of their own, watches that board change as the first one's game ends,
without reloading the page.

What the page shows is compared with what the API answers.  The server takes any account
for ranked play (``DAILY_ACCOUNT_RULE`` any: the guests are made during the test) and
the day's Clock deal is deal 42, put in the Clock's pool of proved-winnable seeds before
the test (no solver's worker runs here).
"""

from __future__ import annotations

import logging
import re
import time
from datetime import datetime

import orjson
import pytest
import requests

from service.app import close_app, create_app
from service.game.ranked import score
from tests.browser.conftest import LiveServer
from tests.browser.test_players import TOKEN_KEY, as_player, settle, stored_token, wait_until
from tests.four_corners_won import SEED, moves

#: The seed that the Clock's pool deals as today's deal: "draw" is among its first moves.
CLOCK_SEED = 42


@pytest.fixture
def live_server(request, clean_redis, redis_url):
    """The real app over an emptied Redis, taking any account for ranked play, with the
    day's Clock deal ready in the pool (and the settings a test passes as its param)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = create_app({"REDIS_URL": redis_url, "RATELIMIT_ENABLED": False,
                      "DAILY_ACCOUNT_RULE": "any", "WINNABLE_SEARCH_SECONDS": 0,
                      **getattr(request, "param", {})})
    app.services.solver_store.add_seed("clock", CLOCK_SEED)
    with LiveServer(app) as server:
        yield server
    close_app(app)


def open_daily(page, base: str, variant: str | None = None):
    url = base + "/#daily" + (f"={variant}" if variant else "")
    # The page at that address already: going there again only scrolls to its fragment
    # (no new read of the board, whose feed tells only of changes within its top).
    if page.url == url:
        page.reload()
    else:
        page.goto(url)
    # Within the client's own time for a read that gets no answer (REQUEST_TIMEOUT_MS),
    # then its retry: a read lost on the way is sent again, not waited for.
    page.wait_for_selector('#daily:not([hidden]) #daily-deals[data-loaded="1"]',
                           state="attached", timeout=30_000)
    page.wait_for_selector('#daily-board-body[data-loaded="1"]', state="attached",
                           timeout=30_000)


def board_shown(page) -> list[dict]:
    return page.eval_on_selector_all("#daily-board-body tr", """rows => rows.map(tr => ({
        player: tr.dataset.player, rank: Number(tr.dataset.rank),
        outcome: tr.dataset.outcome, text: tr.innerText}))""")


def player_id(base: str, token: str) -> str:
    return requests.get(f"{base}/v1/players/me", headers=as_player(token), timeout=5).json()["id"]


def play_and_resign(page, base: str, keyboard: bool = False, resume: bool = False) -> str:
    """From the Daily view: start the Clock attempt (with the keyboard: the button
    focused, then Enter), draw (and, with ``resume``, go back to the Daily view and
    resume the game from there), resign; the game's id."""
    start = '#daily-deals li[data-variant="clock"] .daily-action'
    if keyboard:
        page.focus(start)
        page.keyboard.press("Enter")
    else:
        page.click(start)
    wait_until(page, "location.hash.startsWith('#game=')")
    game_id = page.evaluate("location.hash.slice('#game='.length)")
    settle(page, 0, game_id)
    assert "daily deal of" in page.text_content("#game-status")
    assert page.is_disabled("#hint-btn")  # no hint of a ranked game while its day is open
    assert page.is_disabled("#undo-btn")  # undo off
    page.click("#draw-btn")
    settle(page, 1, game_id)
    if resume:
        page.click("#nav-daily")
        page.wait_for_selector('#daily-deals[data-loaded="1"] li[data-variant="clock"]'
                               '[data-attempt="playing"]', state="attached")
        assert page.text_content(start) == "Resume my attempt"
        page.click(start)
        settle(page, 1, game_id)
    page.click("#resign-btn")
    page.click("#resign-yes")
    page.wait_for_selector('#table[data-status="resigned"]', state="attached")
    page.wait_for_selector("#banner:not([hidden]) #see-board")
    assert "2 moves" in page.text_content("#banner")
    assert "The deal is shown once the day is over." in page.text_content("#banner")
    page.wait_for_selector('#analysis[data-verdict="later"]')
    return game_id


def test_a_guest_plays_the_daily_deal_and_finds_their_rank_on_the_board(pages, live_server,
                                                                      artifacts):
    base = live_server.url
    page = pages.new()
    page.goto(base + "/")
    page.click("#lobby-daily")  # the lobby's way to the Daily view
    page.wait_for_selector('#daily:not([hidden]) #daily-deals[data-loaded="1"]',
                           state="attached")
    page.wait_for_selector('#daily-board-body[data-loaded="1"]', state="attached")
    assert page.get_attribute("#nav-daily", "aria-current") == "page"
    today = requests.get(f"{base}/v1/daily", timeout=5).json()
    items = page.eval_on_selector_all("#daily-deals li", """items => items.map(li => ({
        variant: li.dataset.variant, attempt: li.dataset.attempt, text: li.innerText}))""")
    assert [i["variant"] for i in items] == [v["variant"] for v in today["variants"]]
    assert all(i["attempt"] == "none" and "Start my attempt" in i["text"] for i in items)
    assert today["day"] in page.text_content("#daily-when")
    assert page.is_visible("#daily-board-empty")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    token = stored_token(page)
    me = player_id(base, token)

    game_id = play_and_resign(page, base, keyboard=True, resume=True)
    # The game is the guest's ranked game of the day, hidden from anyone else meanwhile.
    game = requests.get(f"{base}/v1/games/{game_id}", headers=as_player(token), timeout=5).json()
    assert game["ranked"]["day"] == today["day"]
    assert (game["ranked"]["result"]["outcome"], game["ranked"]["result"]["moves"]) == \
        ("resigned", 2)
    hidden = requests.get(f"{base}/v1/games/{game_id}", timeout=5)
    assert (hidden.status_code, hidden.json()["code"]) == (403, "ranked_game_hidden")

    page.keyboard.press("Escape")
    page.focus("#see-board")
    page.keyboard.press("Enter")
    page.wait_for_selector('#daily:not([hidden]) #daily-board-body[data-count="1"]',
                           state="attached")
    shown = board_shown(page)
    assert [(r["player"], r["rank"], r["outcome"]) for r in shown] == [(me, 1, "resigned")]
    assert "(you)" in shown[0]["text"]
    wait_until(page, "document.querySelector('#daily-rank').dataset.rank === '1'")
    assert page.text_content("#daily-rank") == "You are ranked 1 of 1."
    attempt = page.get_attribute('#daily-deals li[data-variant="clock"]', "data-attempt")
    assert attempt == "over"
    # A second attempt is not offered: the deal's link opens the game played.
    assert page.text_content('#daily-deals li[data-variant="clock"] .daily-action') == \
        "See my game"
    board = requests.get(f"{base}/v1/daily/clock/{today['day']}/board", timeout=5).json()
    assert [(e["player_id"], e["rank"], e["game_id"]) for e in board["entries"]] == \
        [(me, 1, game_id)]
    page.screenshot(path=str(artifacts / "daily-board.png"))


def test_another_guest_watches_the_board_change_live(pages, live_server):
    base = live_server.url
    watcher = pages.new()
    open_daily(watcher, base, "clock")
    assert watcher.is_visible("#daily-board-empty")
    # My rank is read after the board.
    wait_until(watcher,
               "document.querySelector('#daily-rank').textContent.includes('not on this board')")
    wait_until(watcher, "document.querySelector('#daily-live').dataset.state !== undefined")

    player = pages.new()
    open_daily(player, base, "clock")
    wait_until(player, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    first = player_id(base, stored_token(player))
    play_and_resign(player, base)

    # The watcher's page, not reloaded, shows the first guest's entry.
    watcher.wait_for_selector('#daily-board-body[data-count="1"]', state="attached",
                              timeout=15_000)
    assert [(r["player"], r["rank"]) for r in board_shown(watcher)] == [(first, 1)]
    assert watcher.evaluate("performance.getEntriesByType('navigation').length") == 1
    # It follows the board's stream (Server-Sent Events), opened after the last event
    # the page had read (none: 0).  (A stream that failed is tried again after 2 s,
    # the feed read meanwhile: test_a_refused_board_stream_is_tried_again.)
    wait_until(watcher, "document.querySelector('#daily-live').dataset.state === 'live'")
    feed_reads = [url for url in pages.requests
                  if re.search(r"/v1/daily/clock/[^/?]+/events\?after=", url)]
    assert feed_reads
    assert feed_reads[0].endswith("?after=0"), feed_reads

    # The watcher plays too (resigning at once): both boards show two entries, each
    # guest's rank as the board has it.
    watcher.click('#daily-deals li[data-variant="clock"] .daily-action')
    wait_until(watcher, "location.hash.startsWith('#game=')")
    second_game = watcher.evaluate("location.hash.slice('#game='.length)")
    settle(watcher, 0, second_game)
    watcher.click("#resign-btn")
    watcher.click("#resign-yes")
    watcher.wait_for_selector("#banner:not([hidden]) #see-board")
    second = player_id(base, stored_token(watcher))
    player.click("#see-board")
    player.wait_for_selector('#daily-board-body[data-count="2"]', state="attached",
                             timeout=15_000)
    day = requests.get(f"{base}/v1/daily", timeout=5).json()["day"]
    board = requests.get(f"{base}/v1/daily/clock/{day}/board", timeout=5).json()
    ranks = {e["player_id"]: e["rank"] for e in board["entries"]}
    assert set(ranks) == {first, second}
    assert {r["player"]: r["rank"] for r in board_shown(player)} == ranks
    wait_until(player, f"document.querySelector('#daily-rank').dataset.rank === '{ranks[first]}'")
    assert player.text_content("#daily-rank") == f"You are ranked {ranks[first]} of 2."


def test_the_board_pages_and_my_rank_shows_the_players_around_me(pages, live_server):
    # Twelve players resign their attempts through the API (one move each, equal
    # scores: ranked in order of player id); the page shows ten, then the rest.
    base = live_server.url
    page = pages.new()
    open_daily(page, base, "clock")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    day = requests.get(f"{base}/v1/daily", timeout=5).json()["day"]
    guest = stored_token(page)
    tokens = [guest] + [requests.post(f"{base}/v1/players", json={"name": f"P{i}"},
                                      timeout=5).json()["player_token"] for i in range(11)]
    for token in tokens:
        made = requests.post(f"{base}/v1/daily/clock/{day}", headers=as_player(token), timeout=5)
        assert made.status_code == 201, made.text
        game = made.json()["game"]
        over = requests.post(f"{base}/v1/games/{game['id']}/moves", headers=as_player(token),
                             json={"type": "resign"}, timeout=5)
        assert over.status_code == 200
    everyone = requests.get(f"{base}/v1/daily/clock/{day}/board?limit=50", timeout=5).json()
    ids = [e["player_id"] for e in everyone["entries"]]
    assert len(ids) == 12

    open_daily(page, base, "clock")
    page.wait_for_selector('#daily-board-body[data-count="12"]', state="attached")
    assert [r["player"] for r in board_shown(page)] == ids[:10]
    assert page.is_visible("#daily-more")
    page.focus("#daily-more")
    page.keyboard.press("Enter")
    wait_until(page, "document.querySelectorAll('#daily-board-body tr').length === 12")
    assert [r["player"] for r in board_shown(page)] == ids
    assert page.is_hidden("#daily-more")
    # My rank, and the two players either side of it on the board.
    me = player_id(base, guest)
    rank = ids.index(me) + 1
    wait_until(page, f"document.querySelector('#daily-rank').dataset.rank === '{rank}'")
    assert page.text_content("#daily-rank") == f"You are ranked {rank} of 12."
    around = page.eval_on_selector_all("#daily-around-body tr", "rows => rows.map(tr => "
                                       "[tr.dataset.player, tr.className])")
    window = ids[max(0, rank - 3):rank + 2]
    assert [player for player, _ in around] == window
    assert [player for player, css in around if css == "me"] == [me]


#: Where a device keeps the seconds between the Daily view's re-reads of the board (20
#: by default): one second on the test's page that follows the board closely.
REFRESH_KEY = "patience.daily.refreshSeconds"


def new_player(base: str, name: str) -> str:
    made = requests.post(f"{base}/v1/players", json={"name": name}, timeout=5)
    assert made.status_code == 201, made.text
    return made.json()["player_token"]


def finish_attempt(base: str, day: str, token: str, draws: int = 0):
    """The player's ranked attempt at the day's Clock deal, through the API: ``draws``
    draws, then resign (1 + draws moves, no card home: the fewer moves, the better)."""
    made = requests.post(f"{base}/v1/daily/clock/{day}", headers=as_player(token), timeout=5)
    assert made.status_code == 201, made.text
    game_id = made.json()["game"]["id"]
    for move in [{"type": "draw"}] * draws + [{"type": "resign"}]:
        played = requests.post(f"{base}/v1/games/{game_id}/moves", headers=as_player(token),
                               json=move, timeout=5)
        assert played.status_code == 200, played.text


def last_board_event(base: str, day: str) -> str | None:
    feed = requests.get(f"{base}/v1/daily/clock/{day}/events?after=0", timeout=5)
    assert feed.status_code == 200, feed.text
    return feed.json()["last_event_id"]


def clock_deal_line(page) -> str:
    return page.text_content('#daily-deals li[data-variant="clock"] .daily-detail')


def set_visibility(page, state: str):
    """The tab hidden or shown again, as the page sees it (headless Chromium's tab stays
    visible): document.visibilityState, then its visibilitychange event."""
    page.evaluate("""state => {
        Object.defineProperty(document, "visibilityState", {configurable: true, get: () => state});
        document.dispatchEvent(new Event("visibilitychange"));
    }""", state)


def test_the_count_and_my_rank_follow_entries_below_the_top(pages, live_server):
    # Ten players resign at once (1 move each: the board's top ten); the guest draws three
    # times first (4 moves: 11th); then players who draw once (2 moves) land between
    # them: below the top, which the board's feed does not tell of, and ahead of the guest.
    base = live_server.url
    quick = pages.new()
    quick.context.add_init_script(f"localStorage.setItem('{REFRESH_KEY}', '1');")
    open_daily(quick, base, "clock")
    wait_until(quick, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    guest = stored_token(quick)
    # The guest's other device, whose page re-reads the board only every hour.
    slow = pages.new()
    slow.context.add_init_script(f"localStorage.setItem('{REFRESH_KEY}', '3600');"
                                 f"localStorage.setItem('{TOKEN_KEY}', '{guest}');")
    day = requests.get(f"{base}/v1/daily", timeout=5).json()["day"]
    for i in range(10):
        finish_attempt(base, day, new_player(base, f"Top{i}"))
    finish_attempt(base, day, guest, draws=3)
    for page in (quick, slow):
        open_daily(page, base, "clock")
        page.wait_for_selector('#daily-board-body[data-count="11"]', state="attached")
        wait_until(page, "document.querySelector('#daily-rank').dataset.rank === '11'")
        assert page.text_content("#daily-rank") == "You are ranked 11 of 11."
        assert clock_deal_line(page).startswith("11 players \u00b7 11 on the board")
        wait_until(page, "document.querySelector('#daily-live').dataset.state === 'live'")
    reads: list[str] = []  # the quick page's reads of today's deals and of the board
    quick.on("request", lambda request: reads.append(request.url)
             if re.search(r"/v1/daily(/clock/[^/]+/board\b.*)?$", request.url) else None)

    before = last_board_event(base, day)
    for i in range(3):
        finish_attempt(base, day, new_player(base, f"Low{i}"), draws=1)
    assert last_board_event(base, day) == before  # not one of them told by the feed
    board = requests.get(f"{base}/v1/daily/clock/{day}/board?limit=50", timeout=5).json()
    me = player_id(base, guest)
    ids = [e["player_id"] for e in board["entries"]]
    assert (board["count"], ids.index(me) + 1) == (14, 14)

    # The page, not reloaded, shows the board's count and the guest's rank as they are.
    quick.wait_for_selector('#daily-board-body[data-count="14"]', state="attached",
                            timeout=5_000)
    wait_until(quick, "document.querySelector('#daily-rank').dataset.rank === '14'", 5)
    assert quick.text_content("#daily-rank") == "You are ranked 14 of 14."
    assert clock_deal_line(quick).startswith("14 players \u00b7 14 on the board")
    around = quick.eval_on_selector_all("#daily-around-body tr",
                                        "rows => rows.map(tr => tr.dataset.player)")
    assert around == ids[11:14]
    assert [r["player"] for r in board_shown(quick)] == ids[:10]
    assert quick.evaluate("performance.getEntriesByType('navigation').length") == 1
    # By reading the board and today's deals again, not by the feed.
    assert any("/board" in url for url in reads)
    assert any(url.endswith("/v1/daily") for url in reads)
    # The page that re-reads every hour has been told nothing meanwhile.
    assert slow.get_attribute("#daily-board-body", "data-count") == "11"
    assert slow.text_content("#daily-rank") == "You are ranked 11 of 11."
    assert clock_deal_line(slow).startswith("11 players \u00b7 11 on the board")

    # Hidden, the quick page reads nothing (a read under way when it was hidden ends).
    set_visibility(quick, "hidden")
    quick.wait_for_timeout(500)
    seen = len(reads)
    finish_attempt(base, day, new_player(base, "Low3"), draws=1)
    quick.wait_for_timeout(2_500)
    assert len(reads) == seen
    assert quick.get_attribute("#daily-board-body", "data-count") == "14"

    # Shown again, each page reads the board at once: the slow one too, an hour early.
    for page in (quick, slow):
        set_visibility(page, "visible")
        page.wait_for_selector('#daily-board-body[data-count="15"]', state="attached",
                               timeout=3_000)
        wait_until(page, "document.querySelector('#daily-rank').dataset.rank === '15'", 3)
        assert page.text_content("#daily-rank") == "You are ranked 15 of 15."
        assert clock_deal_line(page).startswith("15 players \u00b7 15 on the board")
        assert page.evaluate("performance.getEntriesByType('navigation').length") == 1


#: Days of 12 seconds: a day played, then over, within the test.
SHORT_DAY = 12


@pytest.mark.parametrize("live_server", [{"DAILY_PERIOD_SECONDS": SHORT_DAY}], indirect=True)
def test_yesterday_s_board_shows_the_deal_and_opens_its_games(pages, live_server):
    base = live_server.url
    page = pages.new()
    page.goto(base + "/")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    token = stored_token(page)
    today = requests.get(f"{base}/v1/daily", timeout=5).json()
    end = datetime.fromisoformat(today["end"].replace("Z", "+00:00")).timestamp()
    if end - time.time() < SHORT_DAY / 2:  # too little of this day left to play it: the next
        time.sleep(max(0.0, end - time.time()) + 0.2)
        today = requests.get(f"{base}/v1/daily", timeout=5).json()
        end = datetime.fromisoformat(today["end"].replace("Z", "+00:00")).timestamp()
    made = requests.post(f"{base}/v1/daily/clock/{today['day']}", headers=as_player(token),
                         timeout=5)
    assert made.status_code == 201, made.text
    game = made.json()["game"]
    over = requests.post(f"{base}/v1/games/{game['id']}/moves", headers=as_player(token),
                         json={"type": "resign"}, timeout=5)
    assert over.status_code == 200
    time.sleep(max(0.0, end - time.time()) + 0.2)  # the day is over

    open_daily(page, base, "clock")
    assert page.get_attribute("#daily-today", "aria-pressed") == "true"
    assert page.is_visible("#daily-board-empty")  # today's board: no one yet
    page.focus("#daily-yesterday")
    page.keyboard.press("Enter")
    page.wait_for_selector('#daily-board-body[data-count="1"]', state="attached")
    assert page.get_attribute("#daily-yesterday", "aria-pressed") == "true"
    assert today["day"] in page.text_content("#daily-board-title")
    # The day's deal, shown once the day is over, with the game anyone may open now.
    page.wait_for_selector("#daily-deal-shown:not([hidden])")
    assert f"deal {CLOCK_SEED} " in page.text_content("#daily-deal-shown")
    # My rank is read after the board: the rank of today's board (none) until it is.
    wait_until(page, "document.querySelector('#daily-rank').dataset.rank === '1'")
    assert page.text_content("#daily-rank") == "You are ranked 1 of 1."
    page.click(f'#daily-board-body a[href="#game={game["id"]}"]')
    page.wait_for_selector(f'#table[data-game="{game["id"]}"][data-status="resigned"]',
                           state="attached")
    assert page.text_content("#seed-shown") == str(CLOCK_SEED)
    assert requests.get(f"{base}/v1/games/{game['id']}", timeout=5).status_code == 200


@pytest.mark.parametrize("live_server", [{"DAILY_ACCOUNT_RULE": "before-day"}], indirect=True)
def test_a_guest_made_today_is_told_that_ranked_play_opens_tomorrow(pages, live_server):
    # The default rule: an account made after the day began cannot play it ranked.
    base = live_server.url
    page = pages.new()
    open_daily(page, base, "clock")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    page.click('#daily-deals li[data-variant="clock"] .daily-action')
    page.wait_for_selector("#daily-error:not([hidden])")
    assert "ranked play opens to it tomorrow" in page.text_content("#daily-error")
    assert page.evaluate("location.hash") == "#daily=clock"
    token = stored_token(page)
    mine = requests.get(f"{base}/v1/players/me/games", headers=as_player(token), timeout=5)
    assert mine.json()["games"] == []


# --- this week's board and the streaks' board ---------------------------------------------
def rows_shown(page, body: str) -> list[list[str]]:
    """The cells of a board's rows (its rank, name, then its figures), each with the
    row's player: [player, rank, name, figures...]."""
    return page.eval_on_selector_all(f"#{body} tr", """rows => rows.map(tr => [
        tr.dataset.player, ...[...tr.cells].map(td => td.textContent)])""")


def open_tab(page, kind: str, count: int):
    """The tab of a board chosen (a click), its first page read with ``count`` entries."""
    page.click(f"#daily-tab-{kind}")
    page.wait_for_selector(f'#daily-{kind}-panel:not([hidden]) #daily-{kind}-body'
                           f'[data-count="{count}"]', state="attached")


def week_of(today: dict) -> str:
    """The ISO week of today's start (docs/daily.md)."""
    year, week, _ = datetime.fromisoformat(today["start"].replace("Z", "+00:00")).isocalendar()
    return f"{year}-W{week:02d}"


def won_ends(server, day: str, players: list[tuple[str, str, int]]):
    """Each (player id, name, moves) a won ranked game of today's Clock deal, written by
    the board's projection from the event that the game's end writes (as
    tests/api/test_daily.py writes its boards): a win through the API is 304 moves."""
    daily = server.app.services.daily
    for number, (player, name, moves_made) in enumerate(players):
        daily.apply_ended(f"won-{number}", orjson.dumps({
            "player": player, "name": name, "variant": "clock", "day": day,
            "index": daily.today(), "ended_ms": int(time.time() * 1000), "outcome": "won",
            "moves": moves_made, "time_ms": 60_000, "cards_home": 104,
            "score": score("won", moves_made, 60_000, 104)}))


def test_a_player_who_won_today_s_deal_sees_their_rank_on_the_week_s_and_the_streaks_boards(
        pages, live_server, artifacts):
    base = live_server.url
    live_server.app.services.solver_store.add_seed("four-corners", SEED)
    page = pages.new()
    open_daily(page, base, "four-corners")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    token = stored_token(page)
    me = requests.get(f"{base}/v1/players/me", headers=as_player(token), timeout=5).json()
    today = requests.get(f"{base}/v1/daily", timeout=5).json()
    made = requests.post(f"{base}/v1/daily/four-corners/{today['day']}",
                         headers=as_player(token), timeout=5)
    assert made.status_code == 201, made.text
    game_id = made.json()["game"]["id"]
    http = requests.Session()
    for move, _card in moves():
        answer = http.post(f"{base}/v1/games/{game_id}/moves", json=move.to_dict(),
                           headers=as_player(token), timeout=10)
        assert answer.status_code == 200, answer.text
    assert answer.json()["game"]["status"] == "won"

    open_daily(page, base, "four-corners")
    assert page.get_attribute("#daily-tab-day", "aria-selected") == "true"
    assert page.is_hidden("#daily-week-panel")
    # The tabs with the keyboard: the arrow moves the focus to "This week" and opens it.
    page.focus("#daily-tab-day")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector('#daily-week-panel:not([hidden]) #daily-week-body[data-count="1"]',
                           state="attached")
    assert page.evaluate("document.activeElement.id") == "daily-tab-week"
    assert page.get_attribute("#daily-tab-week", "aria-selected") == "true"
    assert page.is_hidden("#daily-day-panel")
    week = week_of(today)
    assert week in page.text_content("#daily-week-title")
    name = f"{me['name']} (you)"
    assert rows_shown(page, "daily-week-body") == [[me["id"], "1", name, "1", "304"]]
    weekly = requests.get(f"{base}/v1/daily/four-corners/weeks/{week}/board", timeout=5).json()
    assert [(e["player_id"], e["rank"], e["won"], e["moves"]) for e in weekly["entries"]] == \
        [(me["id"], 1, 1, 304)]
    wait_until(page, "document.querySelector('#daily-week-rank').dataset.rank === '1'")
    assert page.text_content("#daily-week-rank") == "You are ranked 1 of 1."
    assert rows_shown(page, "daily-week-around-body") == [[me["id"], "1", name, "1", "304"]]
    assert page.get_attribute("#daily-week-around-body tr", "class") == "me"
    page.screenshot(path=str(artifacts / "daily-week.png"))

    open_tab(page, "streaks", 1)
    assert rows_shown(page, "daily-streaks-body") == \
        [[me["id"], "1", name, "1", "1", today["day"]]]
    wait_until(page, "document.querySelector('#daily-streaks-rank').dataset.rank === '1'")
    assert page.text_content("#daily-streaks-rank") == "You are ranked 1 of 1."
    assert rows_shown(page, "daily-streaks-around-body") == \
        [[me["id"], "1", name, "1", "1", today["day"]]]
    streaks = requests.get(f"{base}/v1/daily/four-corners/streaks", timeout=5).json()
    assert [(e["player_id"], e["current"], e["longest"], e["last_day_won"])
            for e in streaks["entries"]] == [(me["id"], 1, 1, today["day"])]

    # Back to today's board: the day's entry, linked to its game, as before.
    page.click("#daily-tab-day")
    assert page.is_visible("#daily-board-body")
    assert page.get_attribute("#daily-board-body", "data-count") == "1"
    assert page.get_attribute(f'#daily-board-body tr a[href="#game={game_id}"]', "href")
    assert not page.is_visible("#daily-error")


def test_a_guest_without_an_entry_is_told_so_in_a_plain_sentence(pages, live_server):
    base = live_server.url
    day = requests.get(f"{base}/v1/daily", timeout=5).json()["day"]
    others = [(player_id(base, new_player(base, name)), name, 120) for name in ("Ada", "Bo")]
    won_ends(live_server, day, others)
    page = pages.new()
    open_daily(page, base, "clock")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    open_daily(page, base, "clock")  # with the guest's account known
    for kind in ("week", "streaks"):
        open_tab(page, kind, 2)
        assert sorted(row[0] for row in rows_shown(page, f"daily-{kind}-body")) == \
            sorted(player for player, _name, _moves in others)
        wait_until(page, f"document.querySelector('#daily-{kind}-rank')"
                         ".textContent.includes('not on this board')")
        assert page.text_content(f"#daily-{kind}-rank").startswith(
            "You are not on this board: a day's deal you win")
        assert page.get_attribute(f"#daily-{kind}-rank", "data-rank") is None
        assert page.is_hidden(f"#daily-{kind}-around")
        assert page.is_hidden("#daily-error")  # a 404 not_on_board, never shown as an error
    me = player_id(base, stored_token(page))
    refused = requests.get(f"{base}/v1/daily/clock/streaks/players/{me}?around=2", timeout=5)
    assert (refused.status_code, refused.json()["code"]) == (404, "not_on_board")


@pytest.mark.parametrize("kind", ["week", "streaks"])
def test_another_game_chosen_while_a_board_s_tab_is_open_shows_that_game_s_board(
        pages, live_server, kind):
    """With "This week" or "Streaks" open, choosing another game's board shows that
    game's board (none of the first game's rows stays), and choosing the first again
    reads it."""
    base = live_server.url
    page = pages.new()
    open_daily(page, base, "clock")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    today = requests.get(f"{base}/v1/daily", timeout=5).json()
    players = [(player_id(base, new_player(base, f"V{i}")), f"V{i}", 100 + i) for i in range(3)]
    won_ends(live_server, today["day"], players)
    open_daily(page, base, "clock")
    open_tab(page, kind, 3)
    assert "Clock" in page.text_content(f"#daily-{kind}-title")
    page.click('#daily-deals li[data-variant="salic-law"] .daily-show-board')
    page.wait_for_selector(f'#daily-{kind}-panel:not([hidden]) #daily-{kind}-body'
                           '[data-count="0"]', state="attached")
    assert "Salic Law" in page.text_content(f"#daily-{kind}-title")
    assert rows_shown(page, f"daily-{kind}-body") == []
    assert page.is_visible(f"#daily-{kind}-empty")
    wait_until(page, f"document.querySelector('#daily-{kind}-rank').textContent.includes("
                     "'not on this board')")
    assert page.is_hidden(f"#daily-{kind}-around")
    page.click('#daily-deals li[data-variant="clock"] .daily-show-board')
    page.wait_for_selector(f'#daily-{kind}-panel:not([hidden]) #daily-{kind}-body'
                           '[data-count="3"]', state="attached")
    path = f"weeks/{week_of(today)}/board" if kind == "week" else "streaks"
    board = requests.get(f"{base}/v1/daily/clock/{path}", timeout=5).json()
    assert sorted(e["player_id"] for e in board["entries"]) == \
        sorted(player for player, _name, _moves in players)
    assert [row[0] for row in rows_shown(page, f"daily-{kind}-body")] == \
        [e["player_id"] for e in board["entries"]]
    assert page.is_hidden("#daily-error")


def test_this_week_s_board_pages_and_is_read_again_when_its_tab_is_opened(pages, live_server):
    # Twelve players won today's Clock deal in 100..111 moves, the guest in 105 (tied
    # with one of them: the order expected is the board's own, read through the API).
    base = live_server.url
    page = pages.new()
    open_daily(page, base, "clock")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    guest = stored_token(page)
    me = player_id(base, guest)
    today = requests.get(f"{base}/v1/daily", timeout=5).json()
    players = [(player_id(base, new_player(base, f"W{i}")), f"W{i}", 100 + i) for i in range(12)]
    won_ends(live_server, today["day"], players + [(me, "Guest", 105)])
    week = week_of(today)
    board = requests.get(f"{base}/v1/daily/clock/weeks/{week}/board?limit=50", timeout=5).json()
    ids = [e["player_id"] for e in board["entries"]]
    assert len(ids) == board["count"] == 13
    rank = ids.index(me) + 1

    open_daily(page, base, "clock")
    open_tab(page, "week", 13)
    shown = rows_shown(page, "daily-week-body")
    assert [row[0] for row in shown] == ids[:10]
    assert [row[1] for row in shown] == [str(n) for n in range(1, 11)]
    assert [row[4] for row in shown] == [str(e["moves"]) for e in board["entries"][:10]]
    assert page.is_visible("#daily-week-more")
    page.focus("#daily-week-more")
    page.keyboard.press("Enter")
    wait_until(page, "document.querySelectorAll('#daily-week-body tr').length === 13")
    assert [row[0] for row in rows_shown(page, "daily-week-body")] == ids
    assert page.is_hidden("#daily-week-more")
    wait_until(page, f"document.querySelector('#daily-week-rank').dataset.rank === '{rank}'")
    assert page.text_content("#daily-week-rank") == f"You are ranked {rank} of 13."
    around = page.eval_on_selector_all("#daily-week-around-body tr",
                                       "rows => rows.map(tr => [tr.dataset.player, tr.className])")
    assert [player for player, _ in around] == ids[rank - 3:rank + 2]
    assert [player for player, css in around if css == "me"] == [me]

    # A player wins meanwhile (in 1 move: first); the tab opened again reads the board
    # again: its first page, the count and my rank as they are now.
    late = player_id(base, new_player(base, "Late"))
    won_ends(live_server, today["day"], [(late, "Late", 1)])
    page.click("#daily-tab-day")
    open_tab(page, "week", 14)
    shown = rows_shown(page, "daily-week-body")
    assert [row[0] for row in shown] == [late] + ids[:9]
    assert page.is_visible("#daily-week-more")
    wait_until(page, f"document.querySelector('#daily-week-rank').dataset.rank === '{rank + 1}'")
    assert page.text_content("#daily-week-rank") == f"You are ranked {rank + 1} of 14."


def test_the_open_week_s_tab_follows_a_new_win_in_the_background(pages, live_server):
    """While "This week" is open, the Daily view's background reads (every second on this
    device) read its board again: as many entries as it shows, its count and my rank."""
    base = live_server.url
    page = pages.new()
    page.context.add_init_script(f"localStorage.setItem('{REFRESH_KEY}', '1');")
    open_daily(page, base, "clock")
    wait_until(page, f"localStorage.getItem('{TOKEN_KEY}') !== null")
    me = player_id(base, stored_token(page))
    today = requests.get(f"{base}/v1/daily", timeout=5).json()
    players = [(player_id(base, new_player(base, f"B{i}")), f"B{i}", 100 + i) for i in range(11)]
    won_ends(live_server, today["day"], players + [(me, "Guest", 200)])
    open_daily(page, base, "clock")
    open_tab(page, "week", 12)
    page.click("#daily-week-more")
    wait_until(page, "document.querySelectorAll('#daily-week-body tr').length === 12")
    wait_until(page, "document.querySelector('#daily-week-rank').dataset.rank === '12'")
    assert page.is_hidden("#daily-week-more")

    late = player_id(base, new_player(base, "Late"))
    won_ends(live_server, today["day"], [(late, "Late", 1)])  # first, in 1 move
    page.wait_for_selector('#daily-week-body[data-count="13"]', state="attached")
    wait_until(page, "document.querySelector('#daily-week-rank').dataset.rank === '13'")
    assert page.text_content("#daily-week-rank") == "You are ranked 13 of 13."
    # The twelve entries shown read again (not the first page alone), the new one first.
    shown = [row[0] for row in rows_shown(page, "daily-week-body")]
    assert shown == [late] + [player for player, _name, _moves in players]
    assert page.is_visible("#daily-week-more")  # the thirteenth, mine, is on the next page
    assert page.get_attribute("#daily-tab-week", "aria-selected") == "true"
    assert page.is_hidden("#daily-error")


def test_a_failed_read_of_the_week_s_board_shows_in_its_own_panel(pages, live_server):
    """The week's board not answered when its tab is opened (here: the answer of a server
    that lacks the route, as one of an older version would give): the failure shows in
    the tab's panel, not in the Daily view's own line; once the board answers, the day's
    background read shows it and the failure goes."""
    base = live_server.url
    lacking = requests.get(f"{base}/v1/no-such-route", timeout=5)
    assert lacking.status_code == 404
    page = pages.new()
    page.context.add_init_script(f"localStorage.setItem('{REFRESH_KEY}', '1');")
    open_daily(page, base, "clock")
    refusing = [True]
    refused: list[str] = []

    def as_a_server_without_the_route(route):
        if refusing[0]:
            refused.append(route.request.url)
            route.fulfill(status=404, body=lacking.content,
                          content_type=lacking.headers["Content-Type"])
        else:
            route.continue_()

    page.route("**/v1/daily/clock/weeks/*/board?*", as_a_server_without_the_route)
    page.click("#daily-tab-week")
    page.wait_for_selector("#daily-week-error:not([hidden])", state="attached")
    failure = page.text_content("#daily-week-error")
    assert failure.startswith("This week's board could not be read: "), failure
    assert failure.endswith(" It is read again while this tab stays open."), failure
    assert page.is_hidden("#daily-error")
    assert page.is_visible("#daily-week-error")
    assert refused

    refusing[0] = False
    page.wait_for_selector("#daily-week-error", state="hidden")
    page.wait_for_selector('#daily-week-body[data-count="0"]', state="attached")
    assert page.is_visible("#daily-week-empty")
    assert page.is_hidden("#daily-error")


@pytest.mark.parametrize("live_server", [{"SSE_MAX_STREAMS": 1, "SSE_HEARTBEAT_SECONDS": 0.5}],
                         indirect=True)
def test_a_refused_board_stream_is_tried_again(pages, live_server):
    """A stream of the board refused (the server holds its cap of streams, one here):
    the page reads the feed every 2 s meanwhile, so an entry still shows, and tries the
    stream again, after 2 s and then twice as long each time, until it opens."""
    base = live_server.url
    day = requests.get(f"{base}/v1/daily", timeout=5).json()["day"]
    feed = f"{base}/v1/daily/clock/{day}/events"
    held = requests.get(feed, headers={"Accept": "text/event-stream"}, stream=True, timeout=10)
    assert held.status_code == 200
    refused = requests.get(feed, headers={"Accept": "text/event-stream"}, timeout=10)
    assert (refused.status_code, refused.json()["code"]) == (503, "too_many_streams")

    page = pages.new()
    open_daily(page, base, "clock")
    wait_until(page, "document.querySelector('#daily-live').dataset.state === 'polling'")
    first = player_id(base, new_player(base, "Polled"))
    won_ends(live_server, day, [(first, "Polled", 120)])
    page.wait_for_selector('#daily-board-body[data-count="1"]', state="attached")
    assert page.get_attribute("#daily-live", "data-state") == "polling"

    held.close()  # the server notices at the stream's next heartbeat, and frees its slot
    wait_until(page, "document.querySelector('#daily-live').dataset.state === 'live'",
               timeout=20)
    second = player_id(base, new_player(base, "Streamed"))
    won_ends(live_server, day, [(second, "Streamed", 60)])
    page.wait_for_selector('#daily-board-body[data-count="2"]', state="attached")
    assert [row["player"] for row in board_shown(page)] == [second, first]
    assert page.get_attribute("#daily-live", "data-state") == "live"
    assert page.is_hidden("#daily-error")
