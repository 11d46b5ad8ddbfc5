"""The daily deal (docs/daily.md): one ranked attempt per player, variant and day; the
ranked game's refusals (undo, hint, analysis, delete, claim, reads by others, moves past
the day's end), each a clear 4xx with nothing changed; the board written by the server
alone when a ranked game ends, exactly once (a failed projection swept once), its pages,
the ranks around a player, the week and the streaks; the seed shown once the day is
over, with the commitment it checks; the close of a day by the solver's worker.  On one
Redis and on the Redis Cluster (a game's keys and its board's are in different slots).
Every answer is checked against openapi.yaml by the test client."""

from __future__ import annotations

import hashlib
import time

import orjson
import pytest
from flask.testing import FlaskClient

from service.game.pipeline import ENDED, RANKED_ENDED
from service.game.ranked import LOSS_BASE, score
from service.game.record import now_ms
from service.observability import telemetry
from service.storage import keys
from service.storage.game_store import StorageUnavailable
from tests.api.support import auth, play
from tests.four_corners_won import SEED, moves

pytestmark = pytest.mark.cluster


def register(client, name: str) -> tuple[str, str]:
    response = client.post("/v1/players", json={"name": name})
    assert response.status_code == 201, response.get_data(as_text=True)
    body = response.get_json()
    return body["player"]["id"], body["player_token"]


def today(client) -> str:
    response = client.get("/v1/daily")
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["day"]


def attempt(client, token: str, variant: str = "clock", day: str | None = None):
    day = day or today(client)
    return client.post(f"/v1/daily/{variant}/{day}", headers=auth(token))


def start(client, token: str, variant: str = "clock") -> tuple[dict, str]:
    response = attempt(client, token, variant)
    assert response.status_code == 201, response.get_data(as_text=True)
    body = response.get_json()
    return body["game"], body["player_token"]


def early_in_a_day(calendar, need_ms: int) -> int:
    """The index of the day now, once at least ``need_ms`` of it are left (waiting for
    the next day's start when fewer are): a test's steps that must fit in one short day
    then do, however the test's start falls."""
    index = calendar.index(now_ms())
    if calendar.end_ms(index) - now_ms() < need_ms:
        time.sleep((calendar.end_ms(index) - now_ms()) / 1000 + 0.05)
        index = calendar.index(now_ms())
    return index


def board(client, variant: str, day: str, **query) -> dict:
    response = client.get(f"/v1/daily/{variant}/{day}/board", query_string=query)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def stored_game(redis_db, game_id: str) -> tuple:
    return tuple(redis_db.hmget(keys.game(game_id), keys.VERSION, keys.RECORD, keys.JOURNAL))


def board_keys(redis_db, variant: str, day: str) -> tuple:
    return (redis_db.zrange(keys.daily(variant, f"{day}:board"), 0, -1, withscores=True),
            redis_db.hgetall(keys.daily(variant, f"{day}:entries")))


def resign(client, game_id: str, token: str) -> dict:
    response = play(client, game_id, token, {"type": "resign"})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["game"]


def test_one_ranked_attempt_a_day_and_every_hostile_try_refused(daily_app, redis_db):
    app = daily_app()
    client = app.test_client()
    app.services.solver_store.add_seed("clock", 42)
    ada, ada_token = register(client, "Ada")
    _bob, bob_token = register(client, "Bob")
    assert client.post("/v1/daily/clock/" + today(client)).status_code == 401  # anonymous
    game, game_token = start(client, ada_token)
    day = today(client)
    assert game["ranked"] == {"day": day, "deadline": game["ranked"]["deadline"],
                              "result": None}
    assert (game["undo"], game["seed"], game["salt"], game["winnable"]) == \
        ("off", None, None, True)
    assert app.services.solver_store.pool_size("clock") == 0  # the pool's seed: no copy
    # The day's commitment is every attempt's.
    _cy, cy_token = register(client, "Cy")
    other, _ = start(client, cy_token)
    assert other["deal_commitment"] == game["deal_commitment"]
    assert other["piles"] == game["piles"]
    described = client.get(f"/v1/daily/clock/{day}", headers=auth(ada_token)).get_json()
    assert (described["deal_commitment"], described["seed"], described["players"],
            described["my_game"]) == (game["deal_commitment"], None, 2,
                                      f"/v1/games/{game['id']}")

    before = stored_game(redis_db, game["id"]), board_keys(redis_db, "clock", day)
    gid = game["id"]
    refusals = [
        # A second attempt: the first game answered.
        (attempt(client, ada_token), 409, "attempt_taken"),
        # Reads by anyone but its player while the day is open.
        (client.get(f"/v1/games/{gid}"), 403, "ranked_game_hidden"),
        (client.get(f"/v1/games/{gid}", headers=auth(bob_token)), 403, "ranked_game_hidden"),
        (client.get(f"/v1/games/{gid}/moves", headers=auth(bob_token)), 403,
         "ranked_game_hidden"),
        (client.get(f"/v1/games/{gid}/history"), 403, "ranked_game_hidden"),
        (client.get(f"/v1/games/{gid}/events"), 403, "ranked_game_hidden"),
        (client.get(f"/v1/games/{gid}/events", headers={"Accept": "text/event-stream"}),
         403, "ranked_game_hidden"),
        (client.get(f"/v1/games/{gid}/hint", headers=auth(bob_token)), 403,
         "ranked_game_hidden"),
        (client.get(f"/v1/games/{gid}", headers=auth("not-the-game-token")), 403,
         "ranked_game_hidden"),
        # Its own player: no hint, no analysis, no undo, no delete.
        (client.get(f"/v1/games/{gid}/hint", headers=auth(ada_token)), 409,
         "ranked_hint_refused"),
        (client.get(f"/v1/games/{gid}/analysis", headers=auth(ada_token)), 409,
         "ranked_analysis_refused"),
        (client.post(f"/v1/games/{gid}/undo", headers=auth(ada_token)), 409, "ranked_game"),
        (client.delete(f"/v1/games/{gid}", headers=auth(ada_token)), 409, "ranked_game"),
        (client.delete(f"/v1/games/{gid}", headers=auth(game_token)), 409, "ranked_game"),
        # Claimed by another player with the game's own token.
        (client.post("/v1/players/me/games", json={"game_id": gid, "game_token": game_token},
                     headers=auth(bob_token)), 409, "ranked_game"),
        # Another player's move.
        (play(client, gid, bob_token, {"type": "resign"}), 403, "wrong_token"),
    ]
    for response, status, code in refusals:
        assert (response.status_code, response.get_json()["code"]) == (status, code), \
            response.get_data(as_text=True)
    assert refusals[0][0].headers["Location"] == f"/v1/games/{gid}"
    # No route writes a board or a score.
    for method in ("post", "put", "patch", "delete"):
        response = getattr(client, method)(f"/v1/daily/clock/{day}/board",
                                           json={"score": 0}, headers=auth(ada_token))
        assert response.status_code == 405, method
        assert response.get_json()["code"] == "method_not_allowed"
    assert client.put(f"/v1/daily/clock/{day}", json={}, headers=auth(ada_token)) \
        .status_code == 405
    assert (stored_game(redis_db, gid), board_keys(redis_db, "clock", day)) == before
    # Its player reads it, its moves and its history (with their token, or the game's).
    for path in ("", "/moves", "/history", "/events"):
        for token in (ada_token, game_token):
            assert client.get(f"/v1/games/{gid}{path}", headers=auth(token)).status_code == 200
    assert board(client, "clock", day)["entries"] == []


def test_a_win_reaches_the_board_once_with_the_record_s_score(daily_app, redis_db):
    app = daily_app()
    client = app.test_client()
    app.services.solver_store.add_seed("four-corners", SEED)
    player, token = register(client, "Ada")
    game, _ = start(client, token, "four-corners")
    day = game["ranked"]["day"]
    quiet = FlaskClient(app)  # the moves' answers are the contract tests' already
    for move, _card in moves():
        response = play(quiet, game["id"], token, move.to_dict())
        assert response.status_code == 200, response.get_json()
    final = response.get_json()["game"]
    assert final["status"] == "won"
    assert (final["seed"], final["salt"]) == (None, None)  # secret until the day is over
    result = final["ranked"]["result"]
    assert (result["outcome"], result["moves"], result["cards_home"]) == ("won", 304, 104)
    assert result["score"] == score("won", 304, result["time_ms"], 104) \
        == 304 * 10**9 + result["time_ms"]
    page = board(client, "four-corners", day)
    assert page["count"] == 1
    assert page["next_cursor"] is None
    entry = page["entries"][0]
    assert entry == {"rank": 1, "player_id": player, "name": "Ada", "game_id": game["id"],
                     "game_url": f"/v1/games/{game['id']}", "outcome": "won", "moves": 304,
                     "time_ms": result["time_ms"], "cards_home": 104,
                     "score": result["score"], "ended_at": entry["ended_at"]}
    # The same event again (a retry, the sweeper): nothing changes.
    before = board_keys(redis_db, "four-corners", day)
    payload = (b'{"player":"%s","game":"%s","variant":"four-corners","day":"%s","index":%d,'
               b'"ended_ms":1,"outcome":"won","moves":1,"time_ms":1,"cards_home":104,'
               b'"score":1000000001}' % (player.encode(), game["id"].encode(), day.encode(),
                                         app.services.daily.today()))
    app.services.daily.apply_ended(game["id"], payload)
    assert board_keys(redis_db, "four-corners", day) == before
    assert app.services.projector.sweep() == 0
    # The week and the streaks.
    week = app.services.daily.calendar.week_id(app.services.daily.today())
    weekly = client.get(f"/v1/daily/four-corners/weeks/{week}/board").get_json()
    assert weekly["entries"] == [{"rank": 1, "player_id": player, "name": "Ada", "won": 1,
                                  "moves": 304}]
    streaks = client.get("/v1/daily/four-corners/streaks").get_json()
    assert streaks["entries"] == [{"rank": 1, "player_id": player, "name": "Ada",
                                   "current": 1, "longest": 1, "last_day_won": day}]
    stats = client.get("/v1/players/me/stats", headers=auth(token)).get_json()
    assert [row["won"] for row in stats["variants"] if row["variant"] == "four-corners"] == [1]


def test_the_board_pages_and_the_ranks_around_a_player(daily_app):
    app = daily_app(DAILY_LIVE_TOP=3)
    client = app.test_client()
    app.services.solver_store.add_seed("clock", 7)
    players = []
    for index in range(5):
        player, token = register(client, f"P{index}")
        game, _ = start(client, token)
        if index % 2:  # a move first: more moves, a worse loss
            listed = client.get(f"/v1/games/{game['id']}/moves", headers=auth(token))
            move = {k: v for k, v in listed.get_json()["moves"][0].items() if k != "card"}
            assert play(client, game["id"], token, move).status_code == 200
        ended = resign(client, game["id"], token)
        players.append((ended["ranked"]["result"]["score"], player))
    day = today(client)
    expected = [player for _score, player in sorted(players)]
    seen, cursor = [], None
    while True:
        page = board(client, "clock", day, limit=2, **({"cursor": cursor} if cursor else {}))
        assert page["count"] == 5
        seen += [(entry["rank"], entry["player_id"]) for entry in page["entries"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(enumerate(expected, 1))
    assert all(score_ >= LOSS_BASE for score_, _ in players)
    # The board's feed: an event for each entry that landed in the top 3, with its rank
    # then (the board as it stood when the entry landed).
    landed = [(player, sorted(players[:number + 1]).index(players[number]) + 1)
              for number, (_score, player) in enumerate(players)]
    feed = client.get(f"/v1/daily/clock/{day}/events").get_json()
    assert [(event["player_id"], event["rank"]) for event in feed["events"]] == \
        [(player, rank) for player, rank in landed if rank <= 3]
    assert len(feed["events"]) >= 3
    last = feed["last_event_id"]
    assert client.get(f"/v1/daily/clock/{day}/events", query_string={"after": last}) \
        .get_json()["events"] == []
    assert client.get(f"/v1/daily/clock/{day}/events",
                      headers={"Last-Event-ID": feed["events"][1]["id"]}) \
        .get_json()["events"] == feed["events"][2:]
    assert client.get(f"/v1/daily/clock/{day}/events", query_string={"after": "x"}) \
        .status_code == 400
    middle = expected[2]
    around = client.get(f"/v1/daily/clock/{day}/board/players/{middle}",
                        query_string={"around": 1}).get_json()
    assert (around["rank"], around["count"]) == (3, 5)
    assert [entry["player_id"] for entry in around["entries"]] == expected[1:4]
    missing = client.get(f"/v1/daily/clock/{day}/board/players/{'a' * 26}")
    assert (missing.status_code, missing.get_json()["code"]) == (404, "not_on_board")
    bad = client.get(f"/v1/daily/clock/{day}/board", query_string={"limit": 0})
    assert bad.status_code == 400


def test_a_failed_board_projection_is_swept_exactly_once(daily_app, redis_db):
    """A ranked end's two events (the player's ``ended``, the board's ``ranked-ended``,
    with the player's name) are applied in one round trip; when the board's script
    fails (its entries' key holds a string), the resign is still acknowledged, the
    player's event is applied, and both events stay in the outbox: the sweeper applies
    the board's once, and the player's again changes nothing."""
    app = daily_app()
    client = app.test_client()
    app.services.solver_store.add_seed("clock", 9)
    _player, token = register(client, "Ada")
    game, _ = start(client, token)
    day = game["ranked"]["day"]
    entries = keys.daily("clock", f"{day}:entries")
    redis_db.set(entries, "in the way")
    resign(client, game["id"], token)  # acknowledged with the game's write
    outbox = app.services.store.outbox(game["id"])
    assert sorted(outbox) == [ENDED, RANKED_ENDED]
    assert orjson.loads(outbox[RANKED_ENDED])["name"] == "Ada"
    assert _resigned(client, token) == (1, 1)  # applied in the same round trip
    with pytest.raises(StorageUnavailable):
        app.services.projector.sweep()  # the board's keys still in the way
    assert sorted(app.services.store.outbox(game["id"])) == [ENDED, RANKED_ENDED]
    redis_db.delete(entries)
    assert app.services.projector.sweep() == 2
    assert app.services.projector.sweep() == 0
    assert app.services.store.outbox(game["id"]) == {}
    assert app.services.store.pending_outboxes() == []
    page = board(client, "clock", day)
    assert [(entry["game_id"], entry["name"]) for entry in page["entries"]] == \
        [(game["id"], "Ada")]
    assert _resigned(client, token) == (1, 1)


def test_a_ranked_end_swept_without_the_name_reads_it(daily_app, monkeypatch):
    """An event written without the player's name (a day's close, or one written
    before the name travelled with it) gets it from the player's profile."""
    app = daily_app()
    client = app.test_client()
    app.services.solver_store.add_seed("clock", 9)
    player, token = register(client, "Ada")
    game, _ = start(client, token)
    day = game["ranked"]["day"]
    projector = app.services.projector
    with monkeypatch.context() as patch:  # the process died after the game's write
        patch.setattr(projector, "apply", lambda *_args, **_kwargs: None)
        resign(client, game["id"], token)
    store = app.services.store
    outbox = store.outbox(game["id"])
    data = orjson.loads(outbox[RANKED_ENDED])
    del data["name"]
    store.backend.connections.execute("HSET", keys.outbox(game["id"]), RANKED_ENDED,
                                      orjson.dumps(data))
    assert projector.sweep() == 2
    page = board(client, "clock", day)
    assert [(entry["player_id"], entry["name"]) for entry in page["entries"]] == \
        [(player, "Ada")]


def _resigned(client, token: str) -> tuple[int, int]:
    stats = client.get("/v1/players/me/stats", headers=auth(token)).get_json()
    clock = next(row for row in stats["variants"] if row["variant"] == "clock")
    return clock["played"], clock["resigned"]


def test_the_day_s_end_refuses_moves_shows_the_seed_and_closes_the_day(daily_app, redis_db):
    app = daily_app(DAILY_PERIOD_SECONDS=3, DAILY_KEEP_DAYS=2)
    client = app.test_client()
    calendar = app.services.daily.calendar
    early_in_a_day(calendar, 2000)  # the attempts and the first move fit in the day
    for variant in ("clock", "salic-law"):
        app.services.solver_store.add_seed(variant, 11)
    _ada, ada_token = register(client, "Ada")
    _bob, bob_token = register(client, "Bob")
    game, _ = start(client, ada_token)
    idle, _ = start(client, bob_token)
    listed = client.get(f"/v1/games/{game['id']}/moves", headers=auth(ada_token)).get_json()
    move = {k: v for k, v in listed["moves"][0].items() if k != "card"}
    assert play(client, game["id"], ada_token, move).status_code == 200
    day = game["ranked"]["day"]
    deadline = calendar.end_ms(calendar.parse(day))
    time.sleep(max(0, deadline - now_ms()) / 1000 + 0.05)
    before = stored_game(redis_db, game["id"])
    late = play(client, game["id"], ada_token, {"type": "resign"})
    assert (late.status_code, late.get_json()["code"]) == (409, "day_closed")
    assert stored_game(redis_db, game["id"]) == before
    late = attempt(client, ada_token, day=day)
    assert (late.status_code, late.get_json()["code"]) == (409, "day_closed")
    # The day is over: its seed and the commitment it checks.
    described = client.get(f"/v1/daily/clock/{day}").get_json()
    assert (described["open"], described["seed"]) == (False, 11)
    assert hashlib.sha256(f"clock:11:{described['salt']}".encode()).hexdigest() \
        == described["deal_commitment"] == game["deal_commitment"]
    # The close: both games still in play abandoned, onto the board, once.
    assert app.services.daily.close_due() == 2
    assert app.services.daily.close_due() == 0
    page = board(client, "clock", day)
    assert sorted(entry["outcome"] for entry in page["entries"]) == ["abandoned", "abandoned"]
    # The resign the close made counts as a move, like a player's own.
    assert sorted(entry["moves"] for entry in page["entries"]) == [1, 2]
    ended = client.get(f"/v1/games/{game['id']}").get_json()  # anyone reads it now
    assert ended["status"] == "resigned"
    assert (ended["seed"], ended["salt"]) == (11, described["salt"])
    assert ended["ranked"]["result"]["outcome"] == "abandoned"
    entry = next(e for e in page["entries"] if e["game_id"] == game["id"])
    assert entry["score"] == ended["ranked"]["result"]["score"]
    assert idle["id"] in {e["game_id"] for e in page["entries"]}
    # Past DAILY_KEEP_DAYS the day is trimmed: its keys go, its games stay (they expire).
    later = calendar.end_ms(calendar.parse(day)) + 3 * 3000 + 1
    assert app.services.daily.close_due(later) == 0
    left = [key for key in redis_db.keys("daily:*") if f":{day}:".encode() in key]
    assert left == []
    assert day.encode() not in redis_db.zrange(keys.daily("clock", "days"), 0, -1)
    assert client.get(f"/v1/games/{game['id']}").status_code == 200


def test_an_account_made_during_the_day_plays_ranked_from_the_next_day(daily_app):
    app = daily_app(DAILY_ACCOUNT_RULE="before-day", DAILY_PERIOD_SECONDS=2)
    client = app.test_client()
    for seed in (5, 6, 8):
        app.services.solver_store.add_seed("clock", seed)
    calendar = app.services.daily.calendar
    early_in_a_day(calendar, 1500)  # the account and its attempt on the same day
    _player, token = register(client, "Ada")
    refused = attempt(client, token)
    assert (refused.status_code, refused.get_json()["code"]) == (403, "account_too_new")
    time.sleep((calendar.end_ms(calendar.index(now_ms())) - now_ms()) / 1000 + 0.05)
    assert attempt(client, token).status_code == 201


def test_a_day_without_a_deal_ready_is_503_and_four_corners_falls_back(daily_app):
    app = daily_app()
    client = app.test_client()
    _player, token = register(client, "Ada")
    left = []  # the request's turn through the app, given back before the waits
    refused = client.post(f"/v1/daily/salic-law/{today(client)}", headers=auth(token),
                          environ_overrides={telemetry.LEAVE_TURN: lambda: left.append(1)})
    assert (refused.status_code, refused.get_json()["code"]) == (503, "daily_deal_unavailable")
    assert left == [1]
    app.services.solver_store.add_seed("salic-law", 11)
    made = client.post(f"/v1/daily/salic-law/{today(client)}", headers=auth(token),
                       environ_overrides={telemetry.LEAVE_TURN: lambda: left.append(2)})
    assert made.status_code == 201
    assert left == [1]  # a deal from the pool: no wait, the turn kept to the end
    assert refused.headers["Retry-After"]
    game, _ = start(client, token, "four-corners")
    assert game["winnable"] is None  # a random deal, not proved winnable
    day = client.get(f"/v1/daily/four-corners/{game['ranked']['day']}").get_json()
    assert day["winnable"] is False
    assert day["deal_commitment"] == game["deal_commitment"]
    for path in ("/v1/daily/nope/" + day["day"], "/v1/daily/clock/2026-13-40"):
        response = client.get(path)
        assert response.status_code == 404, path
    future = client.get("/v1/daily/clock/2999-01-01")
    assert (future.status_code, future.get_json()["code"]) == (409, "day_not_open")


def test_the_worker_closes_a_day_s_games_in_batches_once(daily_app, redis_db, monkeypatch):
    """Past the day's end and the grace, the worker's step abandons every game still in
    play, in batches (read, written, projected together), each onto the board and into
    its player's statistics once; a game already over is left as it is."""
    from types import SimpleNamespace

    from service.daily import boards
    from service.solver.worker import Worker

    monkeypatch.setattr(boards, "CLOSE_BATCH", 7)  # several batches
    app = daily_app(DAILY_PERIOD_SECONDS=4)
    client = FlaskClient(app)
    calendar = app.services.daily.calendar
    index = early_in_a_day(calendar, 3000)
    app.services.solver_store.add_seed("clock", 13)
    tokens, games = [], []
    for number in range(20):
        _player, token = register(client, f"P{number}")
        game, _ = start(client, token)
        tokens.append(token)
        games.append(game["id"])
    resign(client, games[0], tokens[0])  # over before the close
    day = calendar.day_id(index)
    time.sleep(max(0, calendar.end_ms(index) - now_ms()) / 1000 + 0.05)
    analyses = SimpleNamespace(
        store=SimpleNamespace(next_analysis=lambda: None),
        settings=SimpleNamespace(pool={}, cpu_share=0.02, deal_seconds=1.0))
    worker = Worker(analyses, app.services.projector, daily=app.services.daily)
    assert worker.step() == "close"
    assert app.services.daily.close_due() == 0
    assert app.services.projector.sweep() == 0
    assert app.services.store.pending_outboxes() == []
    page = board(client, "clock", day, limit=100)
    assert page["count"] == 20
    outcomes = {entry["game_id"]: entry["outcome"] for entry in page["entries"]}
    assert outcomes[games[0]] == "resigned"
    assert sorted(outcomes) == sorted(games)
    assert [outcomes[game_id] for game_id in games[1:]] == ["abandoned"] * 19
    for token in tokens[:3]:
        stats = client.get("/v1/players/me/stats", headers=auth(token)).get_json()
        clock = next(row for row in stats["variants"] if row["variant"] == "clock")
        assert (clock["resigned"], clock["in_play"]) == (1, 0)
    assert redis_db.sismember(keys.daily("clock", "closed"), day)


def test_closes_of_the_same_games_at_once_abandon_each_once(daily_app):
    """A close run again while another still runs (a second worker), or a game that a
    page of HSCAN repeats: four batches of the same twelve games at once abandon each
    once, put it on the board once and count it in its player's statistics once."""
    import threading

    app = daily_app(DAILY_PERIOD_SECONDS=4)
    client = FlaskClient(app)
    daily = app.services.daily
    calendar = daily.calendar
    index = early_in_a_day(calendar, 3000)
    app.services.solver_store.add_seed("clock", 13)
    tokens = []
    for number in range(12):
        _player, token = register(client, f"P{number}")
        start(client, token)
        tokens.append(token)
    day = calendar.day_id(index)
    time.sleep(max(0, calendar.end_ms(index) - now_ms()) / 1000 + 0.05)
    _cursor, attempts = daily.store.attempts_page("clock", day, 0, 100)
    assert len(attempts) == 12
    barrier, counts = threading.Barrier(4), []

    def close_batch():
        barrier.wait()
        counts.append(daily._close_batch(attempts))

    threads = [threading.Thread(target=close_batch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(counts) == 4
    assert sum(counts) == 12
    assert app.services.projector.sweep() == 0
    page = board(client, "clock", day, limit=100)
    assert page["count"] == 12
    assert [entry["outcome"] for entry in page["entries"]] == ["abandoned"] * 12
    for token in tokens:
        stats = client.get("/v1/players/me/stats", headers=auth(token)).get_json()
        clock = next(row for row in stats["variants"] if row["variant"] == "clock")
        assert (clock["resigned"], clock["in_play"]) == (1, 0)  # an abandoned game


def test_the_worker_chooses_today_s_deal_from_the_pool_ahead_of_the_first_attempt(daily_app):
    app = daily_app()
    client = app.test_client()
    overview = client.get("/v1/daily").get_json()
    assert [row["deal_commitment"] for row in overview["variants"]] == [None, None, None]
    app.services.solver_store.add_seed("salic-law", 21)
    assert app.services.daily.prepare() == 1  # only the variant whose pool has a seed
    assert app.services.daily.prepare() == 0  # chosen once
    assert app.services.solver_store.pool_size("salic-law") == 0
    rows = {row["variant"]: row for row in client.get("/v1/daily").get_json()["variants"]}
    assert rows["salic-law"]["deal_commitment"] is not None
    assert rows["clock"]["deal_commitment"] is None
    _player, token = register(client, "Ada")
    game, _ = start(client, token, "salic-law")
    assert game["deal_commitment"] == rows["salic-law"]["deal_commitment"]
    assert game["winnable"] is True


def test_racing_attempts_of_one_player_make_one_ranked_game(daily_app, redis_db):
    import threading

    app = daily_app()
    app.services.solver_store.add_seed("clock", 42)
    client = app.test_client()
    _player, token = register(client, "Ada")
    day = today(client)
    answers = []

    def attempt_once():
        answers.append(app.test_client().post(f"/v1/daily/clock/{day}", headers=auth(token)))

    threads = [threading.Thread(target=attempt_once) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [201, 409, 409, 409, 409, 409]
    made = next(answer for answer in answers if answer.status_code == 201)
    game_id = made.get_json()["game"]["id"]
    for answer in answers:
        if answer.status_code == 409:
            assert answer.get_json()["code"] in ("attempt_taken", "write_conflict")
            assert answer.headers["Location"] == f"/v1/games/{game_id}"
    assert redis_db.hgetall(keys.daily("clock", f"{day}:attempts")) != {}
    assert len(redis_db.hgetall(keys.daily("clock", f"{day}:attempts"))) == 1


def test_a_board_is_followed_as_a_stream_under_the_process_s_cap(daily_app):
    """``Accept: text/event-stream`` on a board's events: a stream of ``entry`` events with
    the JSON feed's ids and payloads, resumed after ``Last-Event-ID`` without a repeat,
    under the same cap of streams as a game's."""
    from tests.sse import events_only, messages

    app = daily_app(SSE_MAX_STREAMS=1, SSE_HEARTBEAT_SECONDS=0.1, SSE_MAX_SECONDS=10)
    client = app.test_client()
    sse = {"Accept": "text/event-stream"}
    day = today(client)
    path = f"/v1/daily/four-corners/{day}/events"
    created = client.post("/v1/games", json={"variant": "clock"}).get_json()
    game_stream = client.get(f"/v1/games/{created['game']['id']}/events", headers=sse)
    assert game_stream.status_code == 200
    refused = client.get(path, headers=sse)
    assert (refused.status_code, refused.get_json()["code"]) == (503, "too_many_streams")
    assert client.get(path).status_code == 200  # the JSON read is no stream
    game_stream.close()

    for bad, status in (({"Last-Event-ID": "x"}, 400), ({"Last-Event-ID": "1-2-3"}, 400)):
        assert client.get(path, headers={**sse, **bad}).status_code == status
    unknown = client.get(f"/v1/daily/nope/{day}/events", headers=sse)
    assert unknown.status_code == 404

    response = client.get(path, headers=sse)
    assert (response.status_code, response.mimetype) == (200, "text/event-stream")
    assert "Accept" in response.headers["Vary"]
    stream = events_only(messages(iter(response.response)))
    players = []
    for name in ("Ada", "Bob"):
        player, token = register(client, name)
        game, game_token = start(client, token, "four-corners")
        resign(client, game["id"], game_token)
        players.append(player)
    got = [next(stream), next(stream)]
    response.close()
    feed = client.get(path).get_json()["events"]
    assert [(m.id, m.event, m.json()) for m in got] == [(e["id"], "entry", e) for e in feed]
    assert [e["player_id"] for e in feed] == players

    resumed = client.get(path, headers={**sse, "Last-Event-ID": got[0].id})
    stream = events_only(messages(iter(resumed.response)))
    assert next(stream).id == got[1].id  # the one after, not the one before it again
    player, token = register(client, "Cyd")
    game, game_token = start(client, token, "four-corners")
    resign(client, game["id"], game_token)
    following = next(stream)
    resumed.close()
    assert following.json()["player_id"] == player
    assert client.get(path, query_string={"after": got[1].id}).get_json()["events"] == \
        [following.json()]


def _answer(load, query):
    from marshmallow import ValidationError

    try:
        return load(query)
    except ValidationError as error:
        return error.messages


@pytest.mark.parametrize("query", [
    {}, {"limit": "100"}, {"limit": "1", "cursor": "-1000000012:abcdefghijklmnopqrstuvwxyz"},
    {"limit": "007"}, {"cursor": "12:oidc-abc"}, {"other": "x"}, {"limit": "0"},
    {"limit": "101"}, {"limit": "1000"}, {"limit": " 5"}, {"limit": "5.0"}, {"limit": ""},
    {"limit": "x"}, {"limit": "٣"}, {"cursor": ""}, {"cursor": "12"}, {"cursor": "12:A"},
    {"cursor": "12:ab\n"}, {"cursor": "１２:ab"}, {"cursor": "1" * 18 + ":ab"},
    {"cursor": "1:" + "a" * 41}, {"limit": "3", "cursor": "x", "other": "y"}])
def test_the_quick_reading_of_a_board_query_answers_what_the_schema_does(query):
    from service.api.schemas import board_query_schema, load_board_query

    assert _answer(load_board_query, query) == _answer(board_query_schema.load, query)


@pytest.mark.parametrize("query", [
    {}, {"around": "0"}, {"around": "50"}, {"around": "25", "other": "x"}, {"around": "05"},
    {"around": "51"}, {"around": "-1"}, {"around": " 5"}, {"around": "5.0"},
    {"around": ""}, {"around": "x"}, {"around": "٣"}, {"around": "1000"}])
def test_the_quick_reading_of_an_around_query_answers_what_the_schema_does(query):
    from service.api.schemas import around_query_schema, load_around_query

    assert _answer(load_around_query, query) == _answer(around_query_schema.load, query)


@pytest.mark.parametrize("raw", [
    "", "around=0", "around=7", "around=07", "around=007", "around=50", "around=050",
    "around=51", "around=999", "around=1000", "around=", "around=%35", "around=5&x=1",
    "x=1", "around=-1", "around=5.0", "around=٣"])
def test_the_raw_reading_of_an_around_query_answers_what_the_schema_does(raw):
    """A query string of ``around`` alone is read as the schema reads it, or left to
    it: never another answer."""
    from urllib.parse import parse_qsl

    from service.api.schemas import around_query_schema, quick_around

    quick = quick_around(raw)
    if quick is not None:
        assert {"around": quick} == around_query_schema.load(dict(parse_qsl(raw)))
    assert (quick is not None) == (raw in ("around=0", "around=7", "around=07",
                                            "around=007", "around=50", "around=050"))


def member_entry(redis_db, entries_key: str, member: bytes) -> tuple[str, dict]:
    """A day's board member's player and entry: the entry itself after the player's id,
    or (the older form) the player alone, the entry in the entries hash."""
    player, brace, entry = member.partition(b"{")
    if not brace:
        return player.decode(), orjson.loads(redis_db.hget(entries_key, player))
    return player.decode(), orjson.loads(brace + entry)


def to_older_form(redis_db, variant: str, day: str, player: str, *, url: bool) -> None:
    """A player's entry moved into the form an older version wrote: the player alone
    in the board, the entry in the entries hash (``url``: with its ``game_url``, else
    as written before entries had it)."""
    board_key, entries_key = (keys.daily(variant, f"{day}:{part}")
                              for part in ("board", "entries"))
    (member,) = [member for member in redis_db.zrange(board_key, 0, -1)
                 if member.startswith(player.encode() + b"{")]
    score_ = redis_db.zscore(board_key, member)
    entry = orjson.loads(member[len(player):])
    if not url:
        assert entry.pop("game_url") == f"/v1/games/{entry['game_id']}"
    redis_db.zrem(board_key, member)
    redis_db.zadd(board_key, {player: score_})
    redis_db.hset(entries_key, player, orjson.dumps(entry))


@pytest.mark.parametrize("form", ["member", "hash", "older", "mixed"])
def test_the_board_answers_its_stored_entries_as_they_decode(daily_app, redis_db, form):
    """The board's entries are answered as stored, with bytes operations: each answer
    is the stored entry decoded with its rank and its game's URL added, also for names
    and game ids that need escapes, and ties of score across pages; the same for
    entries as the board's projection writes them (``form`` 'member': the entry, its
    game's URL in it, in the board's member after the player's id), in the forms
    written before ('hash': the player alone in the board and the entry in the
    entries hash; 'older': the same without the URL), and a board of all three, ties
    of score across the forms included ('mixed').  The first pages of a board whose
    entries all have their URL are kept as their answers; the others are not."""
    app = daily_app()
    client = app.test_client()
    daily = app.services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    names = ['A "quoted" \\ name', '"game_id":"forged"', "ünï ☃ \u2028", None, "x/y", "",
             "Ada"]
    game_ids = ["plainId_-0", 'an "escaped" \\ id', "g/1", "g-3", "g4", "g5", "g6"]
    scores = [5, 3, 3, 3, 9, 3, 1]  # ties across the pages of 2
    player_ids = [f"{chr(97 + n) * 26}" for n in range(len(names))]
    for player, name, game_id, score_ in zip(player_ids, names, game_ids, scores,
                                             strict=True):
        end = lost_end(daily, index, player, score_, game_id, name)
        daily.store.project_many([end], live_top=3)
    board_key, entries_key = (keys.daily("clock", f"{day}:{part}")
                              for part in ("board", "entries"))
    for number, player in enumerate(player_ids):
        kind = form if form != "mixed" else ("member", "hash", "older")[number % 3]
        if kind != "member":
            to_older_form(redis_db, "clock", day, player, url=kind == "hash")
    stored = dict(member_entry(redis_db, entries_key, member)
                  for member in redis_db.zrange(board_key, 0, -1))
    assert {"game_url" in entry for entry in stored.values()} == \
        {"member": {True}, "hash": {True}, "older": {False}, "mixed": {True, False}}[form]
    order = [player for _score, player in sorted(zip(scores, player_ids, strict=True))]

    def expected(rank: int, player: str) -> dict:
        entry = stored[player]
        return {"rank": rank, **entry, "game_url": f"/v1/games/{entry['game_id']}"}

    whole = [expected(rank, player) for rank, player in enumerate(order, 1)]
    top = keys.daily("clock", f"{day}:top")
    for _read in range(2):  # made, then (its entries in the answer's form) kept
        response = client.get(f"/v1/daily/clock/{day}/board", query_string={"limit": 100})
        assert response.data == orjson.dumps({"variant": "clock", "day": day,
                                              "count": len(order), "entries": whole,
                                              "next_cursor": None})
        assert redis_db.hexists(top, "m100") == (form in ("member", "hash"))
    seen, cursor = [], None
    while True:
        page = board(client, "clock", day, limit=2, **({"cursor": cursor} if cursor else {}))
        assert page["count"] == len(order)
        seen += page["entries"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == whole
    # A cursor whose player is not on the board with its score (a week's or the
    # streaks', whose scores change): the entries after it in order of score and player.
    ranked = sorted(zip(scores, player_ids, strict=True))
    for cursor in ((3, "c" * 26), (3, "cc"), (3, "zz"), (2, "a"), (4, "a"), (9, "e" * 26),
                   (-1, "a"), (10, "a")):
        page = board(client, "clock", day, limit=100, cursor=f"{cursor[0]}:{cursor[1]}")
        assert page["entries"] == [row for key, row in zip(ranked, whole, strict=True)
                                   if key > cursor], cursor
    for rank, player in enumerate(order, 1):
        around = client.get(f"/v1/daily/clock/{day}/board/players/{player}",
                            query_string={"around": 2})
        assert around.status_code == 200
        assert around.get_json() == {"variant": "clock", "day": day, "player_id": player,
                                     "rank": rank, "count": len(order),
                                     "entries": whole[max(0, rank - 3):rank + 2]}


def test_the_board_s_first_pages_are_kept_until_an_entry_lands_within_them(daily_app,
                                                                          redis_db):
    """A day's first pages are kept as their answers (``<day>:top``) from their first
    read, and deleted by the script of an entry that lands within the largest page or
    right after it; an entry below them leaves them (only the board's size changes).
    Every read answers the board as it is."""
    app = daily_app()
    client = app.test_client()
    daily = app.services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    board_key, entries_key, top = (keys.daily("clock", f"{day}:{part}")
                                   for part in ("board", "entries", "top"))

    def ends(*scores: tuple[int, int]) -> None:
        daily.store.project_many([lost_end(daily, index, f"{number:026d}", score_,
                                           f"g{number}", f"Player {number}")
                                  for number, score_ in scores], live_top=3)

    def read(limit: int) -> dict:
        page = board(client, "clock", day, limit=limit)
        members = redis_db.zrange(board_key, 0, limit, withscores=True)
        rows = [{"rank": rank, **member_entry(redis_db, entries_key, member)[1]}
                for rank, (member, _score) in enumerate(members[:limit], 1)]
        last = members[limit - 1] if len(members) > limit else None
        assert page == {"variant": "clock", "day": day, "count": redis_db.zcard(board_key),
                        "entries": rows, "next_cursor": None if last is None else
                        f"{int(last[1])}:{member_entry(redis_db, entries_key, last[0])[0]}"}
        return page

    ends(*((number, 1000 + 10 * number) for number in range(105)))
    first = {limit: read(limit) for limit in (100, 5)}
    assert sorted(redis_db.hkeys(top))[:4] == [b"m100", b"m100:n", b"m100:p", b"m100:s"]
    assert redis_db.hlen(top) == 8
    ends((200, 99_999))  # below the pages: they stay, the size grows
    assert redis_db.hlen(top) == 8
    assert read(100)["entries"] == first[100]["entries"]
    assert read(100)["count"] == 106
    ends((201, 1995))  # right after the largest page (rank 101): its next cursor's
    assert redis_db.exists(top) == 0
    assert read(100)["next_cursor"] == first[100]["next_cursor"]
    assert read(5) == {**first[5], "count": 107}
    ends((202, 1))  # the first
    assert redis_db.exists(top) == 0
    assert read(5)["entries"][0]["player_id"] == f"{202:026d}"
    assert sorted(redis_db.hkeys(top)) == [b"m5", b"m5:n", b"m5:p", b"m5:s"]
    # Entries written without the board's script (a process of an older version): a
    # kept page that is no longer the board's is made again.
    for number, score_, limit in ((203, 2, 5), (204, 1505, 100)):
        read(limit)  # kept
        player = f"{number:026d}"
        redis_db.hset(entries_key, player,
                      lost_end(daily, index, player, score_, f"g{number}", "Bypass")["entry"])
        redis_db.zadd(board_key, {player: score_})
        assert redis_db.hexists(top, f"m{limit}")
        assert player in [row["player_id"] for row in read(limit)["entries"]]


def test_a_kept_page_of_a_whole_board_follows_its_size(daily_app, redis_db):
    """A page that holds the whole board (fewer entries than its limit) is the board's
    while the board's size is the one it had."""
    app = daily_app()
    client = app.test_client()
    daily = app.services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    board_key, entries_key = (keys.daily("clock", f"{day}:{part}")
                              for part in ("board", "entries"))
    for number in range(4):
        player = f"{number:026d}"
        entry = lost_end(daily, index, player, 10 - number, f"g{number}", "P")
        if number < 3:
            daily.store.project_many([entry], live_top=3)
            page = board(client, "clock", day, limit=5)
            assert page == board(client, "clock", day, limit=5)  # made, then kept
            assert (page["count"], page["next_cursor"]) == (number + 1, None)
        else:  # written around the board's script: past the kept page's last entry
            redis_db.hset(entries_key, player, entry["entry"])
            redis_db.zadd(board_key, {player: 100})
    page = board(client, "clock", day, limit=5)
    assert [row["player_id"] for row in page["entries"]] == \
        [f"{number:026d}" for number in (2, 1, 0, 3)]
    assert page["count"] == 4


def board_player(number: int) -> str:
    """A player id of the service's form, made of ``number`` (in order with it)."""
    return "".join("abcdefghij"[int(digit)] for digit in f"{number:026d}")


def lost_payload(calendar, index: int, player: str, score: int) -> dict:
    """The ``ranked-ended`` event's data of a lost ranked game of the day ``index``'s
    Clock deal, with ``score``."""
    return {"player": player, "variant": "clock", "day": calendar.day_id(index),
            "index": index, "outcome": "lost", "moves": 2, "time_ms": 7, "cards_home": 3,
            "score": score, "ended_ms": 1764900000123}


def lost_end(daily, index: int, player: str, score: int, game_id: str, name: str | None
             ) -> dict:
    """What the board's script takes of that game's end (``Daily._end``)."""
    return daily._end(game_id, lost_payload(daily.calendar, index, player, score), name)


def lost_ends(daily, day: str, index: int, scores: list[int]) -> list[str]:
    """One lost ranked end per score onto the day's Clock board, by the board's
    projection (player ``n`` named ``P<n>``, with the n-th score): their players."""
    assert day == daily.calendar.day_id(index)
    players = player_ids(len(scores))
    daily.store.project_many([lost_end(daily, index, player, score_, f"g{number}", f"P{number}")
                              for number, (player, score_)
                              in enumerate(zip(players, scores, strict=True))], live_top=3)
    return players


def test_a_player_s_rank_among_many_equal_scores(daily_app, redis_db):
    """A player's rank among more entries of one score than the rank read looks through
    (the bisection of the ties), on a board of both forms: each player's rank and the
    players either side are those of the order of score, then player."""
    app = daily_app()
    client = app.test_client()
    daily = app.services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    scores = [7 if number % 9 else 3 for number in range(45)]  # 40 ties at 7
    players = lost_ends(daily, day, index, scores)
    for player in players[1::4]:
        to_older_form(redis_db, "clock", day, player, url=True)
    order = [player for _score, player in sorted(zip(scores, players, strict=True))]
    for rank, player in enumerate(order, 1):
        around = client.get(f"/v1/daily/clock/{day}/board/players/{player}",
                            query_string={"around": 1})
        assert around.status_code == 200, player
        found = around.get_json()
        assert found["rank"] == rank
        assert [(row["rank"], row["player_id"]) for row in found["entries"]] == \
            [(number, order[number - 1]) for number in range(max(1, rank - 1),
                                                              min(len(order), rank + 1) + 1)]


@pytest.mark.parametrize(("query", "around"), [
    ("", 5), ("around=0", 0), ("around=7", 7), ("around=07", 7), ("around=50", 50),
    ("around=51", None), ("around=99", None), ("around=%35", 5), ("around=5&x=1", 5),
    ("x=1&around=6", 6), ("around=", None), ("around=-1", None), ("around=5.0", None)])
def test_an_around_query_is_read_as_its_schema_reads_it(daily_app, query, around):
    """The quick reading of a query of ``around`` alone (the raw query string) answers
    what the schema's reading does: the k entries either side, or 400."""
    app = daily_app()
    client = app.test_client()
    daily = app.services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    players = lost_ends(daily, day, index, list(range(120)))
    response = client.get(f"/v1/daily/clock/{day}/board/players/{players[59]}?{query}")
    if around is None:
        assert response.status_code == 400, response.get_data(as_text=True)
        return
    assert response.status_code == 200
    assert [row["rank"] for row in response.get_json()["entries"]] == \
        list(range(60 - around, 61 + around))


def test_a_page_an_older_version_kept_is_never_answered(daily_app, redis_db):
    """The first pages an older version of the board's script kept (fields '<limit>',
    made from its entries alone) are not this version's: its pages are made from the
    board."""
    app = daily_app()
    client = app.test_client()
    daily = app.services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    lost_ends(daily, day, index, [0, 1, 2])
    redis_db.hset(keys.daily("clock", f"{day}:top"), mapping={
        "5": '{"rank":1},{"rank":2},{"rank":3}', "5:s": "", "5:p": "", "5:n": "3"})
    page = board(client, "clock", day, limit=5)
    assert [(row["rank"], row["name"]) for row in page["entries"]] == \
        [(1, "P0"), (2, "P1"), (3, "P2")]


def _board_reads(client, day: str, players: list[str]) -> list:
    """Every read of a day's Clock board: its first page twice (made, then kept), its
    pages of 2 by cursor, and each player's rank with the 2 players either side; the
    day's id left out of each."""
    def read(path: str, **query) -> dict:
        response = client.get(path, query_string=query)
        assert response.status_code == 200, response.get_data(as_text=True)
        body = response.get_json()
        assert body.pop("day") == day
        return body

    reads = [read(f"/v1/daily/clock/{day}/board", limit=100) for _read in range(2)]
    cursor = None
    while True:
        page = read(f"/v1/daily/clock/{day}/board", limit=2,
                    **({"cursor": cursor} if cursor else {}))
        reads.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    return reads + [read(f"/v1/daily/clock/{day}/board/players/{player}", around=2)
                    for player in players]


def test_a_board_written_in_the_older_form_for_an_upgrade(daily_app, redis_db):
    """``DAILY_BOARD_FORM`` 'players' (for a rolling upgrade from a version that reads
    only the older form) writes each entry as those versions did: the player alone as
    the board's member, its entry's JSON in the entries hash, the same bytes the form
    'entries' puts in the member after the player's id.  The board answers its pages,
    kept pages and ranks as it does the same ends written in the form 'entries'; and an
    end written in either form is on the board once: a process of the other form that
    applies it again (the sweeper, a retry) changes nothing.  An unknown form is
    refused when the app is made."""
    newer, older = daily_app(), daily_app(DAILY_BOARD_FORM="players")
    client = newer.test_client()
    index = newer.services.daily.today()
    new_day, old_day = (newer.services.daily.calendar.day_id(day) for day in (index,
                                                                                index - 1))
    scores = [5, 3, 3, 9, 3, 1, 7, 7]
    players = lost_ends(newer.services.daily, new_day, index, scores)
    assert lost_ends(older.services.daily, old_day, index - 1, scores) == players
    new_board, old_board = (board_keys(redis_db, "clock", day) for day in (new_day, old_day))
    entries = {member[:26].decode(): member[26:] for member, _score in new_board[0]}
    assert {player: float(score_) for player, score_ in zip(players, scores, strict=True)} \
        == {member.decode(): score_ for member, score_ in old_board[0]}
    assert old_board[1] == {player.encode(): entries[player] for player in players}
    assert new_board[1] == {player.encode(): str(score_).encode()
                            for player, score_ in zip(players, scores, strict=True)}
    assert _board_reads(client, new_day, players) == _board_reads(client, old_day, players)
    assert redis_db.hexists(keys.daily("clock", f"{old_day}:top"), "m100")

    for first, then, day in ((newer, older, index), (older, newer, index - 1)):
        before = board_keys(redis_db, "clock", first.services.daily.calendar.day_id(day))
        again = [lost_end(then.services.daily, day, board_player(number), score_,
                          f"g{number}", f"P{number}") for number, score_ in enumerate(scores)]
        assert then.services.daily.store.project_many(again, live_top=3) == \
            ["done"] * len(scores)
        assert board_keys(redis_db, "clock", first.services.daily.calendar.day_id(day)) \
            == before
    # A ranked game played through the API to its end, in the older form.
    older.services.solver_store.add_seed("clock", 42)
    player, token = register(older.test_client(), "Upgrader")
    game, token = start(older.test_client(), token)
    resign(older.test_client(), game["id"], token)
    members = [member for member, _score in board_keys(redis_db, "clock", new_day)[0]]
    assert player.encode() in members
    assert orjson.loads(board_keys(redis_db, "clock", new_day)[1][player.encode()]) \
        ["game_id"] == game["id"]
    around = client.get(f"/v1/daily/clock/{new_day}/board/players/{player}")
    assert around.status_code == 200
    assert around.get_json()["count"] == len(players) + 1
    with pytest.raises(ValueError, match="rows"):
        daily_app(DAILY_BOARD_FORM="rows")


def player_ids(count: int) -> list[str]:
    """``count`` player ids in the order of their numbers."""
    return [board_player(number) for number in range(count)]


def _wins(daily, players: list[str], index: int) -> dict[str, list[int]]:
    """Ranked wins of ``players`` over the four days up to ``index`` written to the boards
    as the projector writes them (player n wins the days of the bits of n % 16, and the
    day a week before ``index`` when 5 divides n, each in 5 + n % 2 moves): the days
    each player won, in order."""
    won = {player: [index - 7] * (number % 5 == 0)
           + [index - 3 + bit for bit in range(4) if (number % 16) >> bit & 1]
           for number, player in enumerate(players)}
    daily.store.project_many([daily._end(f"g{number}-{day}", {
        "player": player, "variant": "clock", "day": daily.calendar.day_id(day),
        "index": day, "outcome": "won", "moves": 5 + number % 2, "time_ms": 7,
        "cards_home": 104, "score": 1000, "ended_ms": 1764900000123}, f"P{number}")
        for number, player in enumerate(players) for day in won[player]], live_top=3)
    return won


def _around_rows(order: list[tuple], player: str, k: int) -> list[dict]:
    """The rows of ``order`` (each the sort key, then the row without its rank) within k
    of the player's, each with its rank."""
    at = [row[1]["player_id"] for row in order].index(player)
    return [{"rank": rank, **row} for rank, (_key, row)
            in enumerate(order, 1) if abs(rank - 1 - at) <= k]


def test_a_player_s_rank_and_neighbours_on_the_week_s_and_the_streaks_boards(daily_app):
    """A player's rank on a week's board and on the streaks' board, and the k entries
    either side, as the order of score then player gives them (many ties); the streaks
    decoded as their pages decode them (the last day won's id, a broken streak's current
    0); 404 ``not_on_board`` for a player without an entry, 404 for a malformed week."""
    app = daily_app()
    client = app.test_client()
    daily, players = app.services.daily, player_ids(34)
    index = daily.today()
    won = _wins(daily, players, index)
    week = daily.calendar.week_id(index)
    weekly = []
    for number, player in enumerate(players):
        days = [day for day in won[player] if daily.calendar.week_id(day) == week]
        if days:
            figures = {"player_id": player, "name": f"P{number}", "won": len(days),
                       "moves": len(days) * (5 + number % 2)}
            weekly.append(((-len(days), figures["moves"], player), figures))
    weekly.sort(key=lambda row: row[0])
    streaks = []
    for number, player in enumerate(players):
        current = longest = 0
        for day in won[player]:
            current = current + 1 if day - 1 in won[player] else 1
            longest = max(longest, current)
        if won[player]:
            last = won[player][-1]
            streaks.append(((-longest, player), {
                "player_id": player, "name": f"P{number}",
                "current": current if last >= index - 1 else 0, "longest": longest,
                "last_day_won": daily.calendar.day_id(last)}))
    streaks.sort(key=lambda row: row[0])
    assert 10 < len(weekly) < len(streaks) == 32
    assert any(row["current"] == 0 for _key, row in streaks)
    assert any(row["current"] not in (0, row["longest"]) for _key, row in streaks)
    for k in (0, 2):
        for _key, row in weekly:
            player = row["player_id"]
            response = client.get(f"/v1/daily/clock/weeks/{week}/board/players/{player}",
                                  query_string={"around": k})
            assert response.status_code == 200, response.get_data(as_text=True)
            rows = _around_rows(weekly, player, k)
            assert response.get_json() == {
                "variant": "clock", "week": week, "player_id": player,
                "rank": next(r["rank"] for r in rows if r["player_id"] == player),
                "count": len(weekly), "entries": rows}
        for _key, row in streaks:
            player = row["player_id"]
            response = client.get(f"/v1/daily/clock/streaks/players/{player}?around={k}")
            assert response.status_code == 200, response.get_data(as_text=True)
            rows = _around_rows(streaks, player, k)
            assert response.get_json() == {
                "variant": "clock", "player_id": player,
                "rank": next(r["rank"] for r in rows if r["player_id"] == player),
                "count": len(streaks), "entries": rows}
    # The pages of both boards give the same rows.
    assert client.get(f"/v1/daily/clock/weeks/{week}/board?limit=100").get_json()[
        "entries"] == [{"rank": rank, **row} for rank, (_key, row) in enumerate(weekly, 1)]
    assert client.get("/v1/daily/clock/streaks?limit=100").get_json()["entries"] == \
        [{"rank": rank, **row} for rank, (_key, row) in enumerate(streaks, 1)]
    # No entry: a player of no win (n % 16 == 0), a week of none, a variant of none.
    missing = [player for player in players if not won[player]]
    unseen = next(row["player_id"] for _key, row in streaks
                  if row["player_id"] not in {r["player_id"] for _k, r in weekly})
    for path in (f"/v1/daily/clock/weeks/{week}/board/players/{missing[0]}",
                 f"/v1/daily/clock/weeks/{week}/board/players/{unseen}",
                 f"/v1/daily/clock/weeks/2001-W01/board/players/{players[1]}",
                 f"/v1/daily/clock/streaks/players/{missing[1]}",
                 f"/v1/daily/salic-law/streaks/players/{players[1]}",
                 "/v1/daily/clock/streaks/players/not-a-player",
                 f"/v1/daily/clock/weeks/{week}/board/players/{'a' * 27}"):
        response = client.get(path, query_string={"around": 1})
        assert (response.status_code, response.get_json()["code"]) == \
            (404, "not_on_board"), path
    for bad in ("2026-49", "2026-W4", "W49-2026"):
        response = client.get(f"/v1/daily/clock/weeks/{bad}/board/players/{players[1]}")
        assert (response.status_code, response.get_json()["code"]) == (404, "not_found")
    assert client.get(f"/v1/daily/nope/streaks/players/{players[1]}").status_code == 404


@pytest.mark.parametrize("path", ["weeks/{week}/board/players/{player}",
                                  "streaks/players/{player}"])
@pytest.mark.parametrize(("query", "around"), [
    ("", 5), ("around=0", 0), ("around=07", 7), ("around=50", 50), ("around=51", None),
    ("around=%35", 5), ("x=1&around=6", 6), ("around=", None), ("around=-1", None),
    ("around=5.0", None)])
def test_an_around_query_of_the_week_s_and_the_streaks_boards(daily_app, path, query, around):
    """The week's and the streaks' boards read ``around`` as a day's board does: the k
    entries either side, or 400."""
    app = daily_app()
    client = app.test_client()
    daily, players = app.services.daily, player_ids(120)
    index = daily.today()
    daily.store.project_many([daily._end(f"g{number}", {
        "player": player, "variant": "clock", "day": daily.calendar.day_id(index),
        "index": index, "outcome": "won", "moves": number, "time_ms": 7,
        "cards_home": 104, "score": 1000, "ended_ms": 1764900000123}, f"P{number}")
        for number, player in enumerate(players)], live_top=3)
    url = "/v1/daily/clock/" + path.format(week=daily.calendar.week_id(index),
                                          player=players[59])
    response = client.get(f"{url}?{query}")
    if around is None:
        assert (response.status_code, response.get_json()["code"]) == \
            (400, "invalid_request"), response.get_data(as_text=True)
        return
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["rank"] == 60
    assert [row["rank"] for row in response.get_json()["entries"]] == \
        list(range(60 - around, 61 + around))
