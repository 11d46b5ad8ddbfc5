"""Players (docs/players.md): accounts and their tokens, games a player owns, claims,
"my games" (pages, filters, a walk while games come and go, NDJSON), the statistics of
known games, export and erasure, hostile names.  Every answer is checked against
openapi.yaml by the test client."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient

from service.players import accounts
from service.storage import keys
from tests.api.support import auth, create, play, stored
from tests.four_corners_won import SEED, moves


def register(client, name: str = "Ada") -> tuple[dict, str]:
    response = client.post("/v1/players", json={"name": name})
    assert response.status_code == 201, response.get_data(as_text=True)
    assert response.headers["Location"] == "/v1/players/me"
    body = response.get_json()
    return body["player"], body["player_token"]


def new_game(client, token: str, variant: str = "clock", **fields) -> dict:
    response = client.post("/v1/games", json={"variant": variant, **fields},
                           headers=auth(token))
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()["game"]


def resign(client, game_id: str, token: str) -> None:
    response = play(client, game_id, token, {"type": "resign"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["game"]["status"] == "resigned"


def my_games(client, token: str, **query) -> dict:
    response = client.get("/v1/players/me/games", query_string=query, headers=auth(token))
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


def walk(client, token: str, **query) -> list[dict]:
    found, cursor = [], None
    while True:
        page = my_games(client, token, **query, **({"cursor": cursor} if cursor else {}))
        found += page["games"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def my_stats(client, token: str) -> dict:
    response = client.get("/v1/players/me/stats", headers=auth(token))
    assert response.status_code == 200, response.get_data(as_text=True)
    return {row.pop("variant"): row for row in response.get_json()["variants"]}


def win_four_corners(app, token: str) -> dict:
    """Win the solver's Four Corners deal (304 moves) as the player: the final game."""
    client = FlaskClient(app)  # the moves' answers are the contract tests' already
    game = new_game(client, token, "four-corners", seed=SEED)
    for move, _card in moves():
        response = play(client, game["id"], token, move.to_dict())
        assert response.status_code == 200, response.get_json()
    final = response.get_json()["game"]
    assert final["status"] == "won"
    return final


# --- accounts and tokens -----------------------------------------------------------------
@pytest.mark.cluster
def test_an_account_is_made_and_read_with_its_token(client, redis_db):
    player, token = register(client, "  Ada Lovelace ")
    assert player["name"] == "Ada Lovelace"
    assert player["kind"] == "issued"
    assert token.startswith(f"pl_{player['id']}_")
    me = client.get("/v1/players/me", headers=auth(token))
    assert me.status_code == 200
    assert me.get_json() == player
    stored_profile = redis_db.hgetall(keys.player(player["id"]))
    assert token.encode() not in b"".join(stored_profile.values())  # only its hash
    assert "token" not in json.dumps(me.get_json())


def test_player_routes_refuse_a_missing_or_bad_token(client):
    _, token = register(client)
    game, game_token, _ = create(client)
    for headers, code in (({}, "missing_token"), (auth("nonsense"), "invalid_token"),
                          (auth(game_token), "invalid_token"),
                          (auth(token[:-1] + ("A" if token[-1] != "A" else "B")),
                           "invalid_token"),
                          (auth("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"), "invalid_token")):
        for path in ("/v1/players/me", "/v1/players/me/games",
                     "/v1/players/me/games?status=won&variant=clock",
                     "/v1/players/me/games?limit=0"):  # 401 before the query's 400
            response = client.get(path, headers=headers)
            assert response.status_code == 401, (path, headers)
            assert response.get_json()["code"] == code
            assert response.headers["WWW-Authenticate"].startswith('Bearer realm="patience"')
    assert client.get("/v1/players/me/games?limit=0", headers=auth(token)).status_code == 400


def test_a_rotated_token_replaces_the_old_one_at_once(client):
    player, old = register(client)
    game = new_game(client, old)
    response = client.post("/v1/players/me/token", headers=auth(old))
    assert response.status_code == 200
    new = response.get_json()["player_token"]
    assert new != old
    assert response.get_json()["player"] == player
    assert client.get("/v1/players/me", headers=auth(old)).status_code == 401
    assert client.get("/v1/players/me", headers=auth(new)).status_code == 200
    for query in ({}, {"variant": "clock"}):
        assert client.get("/v1/players/me/games", query_string=query,
                          headers=auth(old)).status_code == 401
    assert [g["id"] for g in my_games(client, new)["games"]] == [game["id"]]
    # The old token plays the player's game no more; the new one does.
    assert play(client, game["id"], old, {"type": "resign"}).status_code == 403
    resign(client, game["id"], new)


def test_a_revoked_token_is_refused_and_the_games_stay_playable(client):
    _, token = register(client)
    response = client.post("/v1/games", json={"variant": "clock"}, headers=auth(token))
    game, game_token = response.get_json()["game"], response.get_json()["player_token"]
    assert client.delete("/v1/players/me/token", headers=auth(token)).status_code == 204
    assert client.get("/v1/players/me", headers=auth(token)).status_code == 401
    assert client.post("/v1/players/me/token", headers=auth(token)).status_code == 401
    for query in ({}, {"status": "playing"}):
        response = client.get("/v1/players/me/games", query_string=query,
                              headers=auth(token))
        assert response.status_code == 401
        assert response.get_json()["code"] == "invalid_token"
    resign(client, game["id"], game_token)


@pytest.mark.parametrize("name", [
    "x" * 10_000, "", "   ", "a\u0000b", "tab\there", "new\nline", "zero\u200bwidth",
    "bidi\u202eevil", "line\u2028sep", "private\ue000use", "unassigned\U000e0fff", "x" * 41,
    42, None, ["Ada"],
])
def test_hostile_names_are_refused_and_nothing_is_stored(client, redis_db, name):
    response = client.post("/v1/players", json={"name": name})
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["code"] == "invalid_request"
    assert "name" in response.get_json()["errors"]
    assert redis_db.keys("player:*") == []


def test_names_are_nfc_normalised_and_other_fields_refused(client):
    player, _ = register(client, "Zoe\u0301")  # e + combining acute: one character in NFC
    assert player["name"] == "Zo\u00e9"
    assert len(register(client, "\u00e9" * 40)[0]["name"]) == 40
    response = client.post("/v1/players", json={"name": "Ada", "admin": True})
    assert response.status_code == 400


# --- ownership ---------------------------------------------------------------------------
@pytest.mark.cluster
def test_a_player_s_game_is_played_with_either_token_and_not_another_player_s(
        client, redis_db):
    _, mine = register(client, "Me")
    _, theirs = register(client, "Them")
    response = client.post("/v1/games", json={"variant": "clock", "seed": 42},
                           headers=auth(mine))
    body = response.get_json()
    game, game_token = body["game"], body["player_token"]
    assert "owner" not in game  # the Game is the same as an anonymous one's
    before = stored(redis_db, game["id"])
    for bearer in (theirs, "pl_" + "a" * 26 + "_" + "b" * 43):
        refused = play(client, game["id"], bearer, {"type": "resign"})
        assert refused.status_code == 403
        assert refused.get_json()["code"] == "wrong_token"
        assert client.delete(f"/v1/games/{game['id']}", headers=auth(bearer)).status_code \
            == 403
    assert stored(redis_db, game["id"]) == before  # nothing changed
    assert client.post(f"/v1/games/{game['id']}/autoplay",
                       headers=auth(mine)).status_code == 200
    assert client.post(f"/v1/games/{game['id']}/autoplay",
                       headers=auth(game_token)).status_code == 200
    resign(client, game["id"], mine)


def test_a_create_with_a_bad_player_token_is_refused(client, redis_db):
    response = client.post("/v1/games", json={"variant": "clock"},
                           headers=auth("pl_" + "a" * 26 + "_" + "b" * 43))
    assert response.status_code == 401
    assert response.get_json()["code"] == "invalid_token"
    assert redis_db.keys("game:*") == []


def test_an_anonymous_game_is_claimed_once(client):
    _, token = register(client)
    _, other = register(client, "Other")
    game, game_token, _ = create(client, "clock", seed=7)
    claim = {"game_id": game["id"], "game_token": game_token}
    wrong = client.post("/v1/players/me/games", headers=auth(token),
                        json=dict(claim, game_token=other[-43:]))
    assert wrong.status_code == 403
    missing = client.post("/v1/players/me/games", headers=auth(token),
                          json=dict(claim, game_id="nope"))
    assert missing.status_code == 404
    response = client.post("/v1/players/me/games", json=claim, headers=auth(token))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["game"]["id"] == game["id"]
    assert client.get(f"/v1/games/{game['id']}").get_json()["version"] == game["version"]
    again = client.post("/v1/players/me/games", json=claim, headers=auth(other))
    assert again.status_code == 409
    assert again.get_json()["code"] == "already_owned"
    assert [item["id"] for item in walk(client, token)] == [game["id"]]
    assert walk(client, other) == []
    resign(client, game["id"], token)  # the player's token plays it now
    assert my_stats(client, token)["clock"]["resigned"] == 1


def test_a_claim_with_an_idempotency_key_answers_its_first_answer(client):
    _, token = register(client)
    game, game_token, _ = create(client)
    claim = {"game_id": game["id"], "game_token": game_token}
    headers = auth(token, Idempotency_Key="claim-1")
    first = client.post("/v1/players/me/games", json=claim, headers=headers)
    again = client.post("/v1/players/me/games", json=claim, headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.get_data() == again.get_data()


def test_a_finished_game_claimed_counts_its_result_once(client):
    _, token = register(client)
    game, game_token, _ = create(client)
    resign(client, game["id"], game_token)
    claim = {"game_id": game["id"], "game_token": game_token}
    assert client.post("/v1/players/me/games", json=claim, headers=auth(token)) \
        .status_code == 200
    clock = my_stats(client, token)["clock"]
    assert (clock["played"], clock["resigned"], clock["in_play"]) == (1, 1, 0)


# --- my games ----------------------------------------------------------------------------
@pytest.mark.cluster
def test_my_games_newest_first_with_filters_and_pages(client):
    _, token = register(client)
    made = [new_game(client, token, variant)
            for variant in ("clock", "salic-law", "clock", "four-corners", "clock")]
    resign(client, made[0]["id"], token)
    resign(client, made[3]["id"], token)
    everything = walk(client, token, limit=2)
    assert [game["id"] for game in everything] == [game["id"] for game in reversed(made)]
    first = my_games(client, token, limit=2)
    assert len(first["games"]) == 2
    assert first["next_cursor"] is not None
    assert [g["id"] for g in walk(client, token, variant="clock")] == \
        [made[4]["id"], made[2]["id"], made[0]["id"]]
    resigned = walk(client, token, status="resigned")
    assert [g["id"] for g in resigned] == [made[3]["id"], made[0]["id"]]
    assert resigned[0]["ended"] is not None
    assert resigned[0]["moves"] == 1
    assert [g["id"] for g in walk(client, token, variant="clock", status="playing")] == \
        [made[4]["id"], made[2]["id"]]
    summary = everything[0]
    assert set(summary) == {"id", "variant", "status", "version", "moves", "created", "ended"}


def test_a_walk_stays_right_while_games_are_created_and_finished(client):
    _, token = register(client)
    made = [new_game(client, token)["id"] for _ in range(12)]
    seen, cursor, added, finished = [], None, [], set()
    while True:
        page = my_games(client, token, limit=3, **({"cursor": cursor} if cursor else {}))
        seen += [game["id"] for game in page["games"]]
        # Meanwhile: a new game, and one of those not yet seen finished.
        added.append(new_game(client, token)["id"])
        unseen = [game_id for game_id in made if game_id not in seen + list(finished)]
        if unseen:
            resign(client, unseen[0], token)
            finished.add(unseen[0])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(made))  # none twice, none skipped, no newcomer
    top = walk(client, token)
    assert [game["id"] for game in top] == list(reversed(made + added))


@pytest.mark.cluster
def test_filtered_walks_stay_right_while_games_change_status(client):
    """A filtered walk reads its own index, by creation position: a game that leaves
    the filter ahead of the cursor is not shown, one that enters it ahead is shown
    once, one that enters it behind is not, and none that matched all along is
    skipped."""
    _, token = register(client)
    made = [new_game(client, token, variant)["id"]
            for variant in ("clock", "salic-law") * 6]  # newest last
    newest_first = list(reversed(made))
    # status=playing: the first page, then games ahead of the cursor resigned.
    page = my_games(client, token, status="playing", limit=3)
    seen = [game["id"] for game in page["games"]]
    assert seen == newest_first[:3]
    left = newest_first[4]  # ahead of the cursor: leaves the filter before it is reached
    resign(client, left, token)
    resign(client, newest_first[0], token)  # behind the cursor: shown already
    later = new_game(client, token)["id"]  # newer than the walk's start
    seen += [game["id"] for game in walk_from(client, token, page["next_cursor"],
                                              status="playing", limit=3)]
    assert seen == [game for game in newest_first if game != left]
    assert later not in seen
    # status=resigned: games resigned during the walk, ahead of it and behind it.
    resigned_walk = []
    page = my_games(client, token, status="resigned", limit=1)
    resigned_walk += [game["id"] for game in page["games"]]
    assert resigned_walk == [newest_first[0]]  # the newest resigned game
    ahead, behind = newest_first[-1], later  # the oldest game; one newer than the cursor
    resign(client, ahead, token)
    resign(client, behind, token)
    resigned_walk += [game["id"] for game in walk_from(client, token, page["next_cursor"],
                                                       status="resigned", limit=1)]
    assert resigned_walk == [newest_first[0], left, ahead]  # each once, in order
    # variant and status together: the same index rules.
    clock_playing = [game["id"] for game in walk(client, token, variant="clock",
                                                   status="playing", limit=2)]
    assert clock_playing == [game for game in newest_first if game in made[::2]
                             and game not in (newest_first[0], left, ahead)]
    assert [game["id"] for game in walk(client, token, status="resigned")] == \
        [behind, newest_first[0], left, ahead]


def walk_from(client, token: str, cursor: str | None, **query) -> list[dict]:
    found = []
    while cursor is not None:
        page = my_games(client, token, **query, cursor=cursor)
        found += page["games"]
        cursor = page["next_cursor"]
    return found


def test_bad_queries_are_refused(client):
    _, token = register(client)
    for query in ({"limit": 0}, {"limit": 101}, {"limit": "x"}, {"status": "won-ish"},
                  {"variant": "spider"}, {"cursor": "abc"}, {"cursor": "-1"}):
        response = client.get("/v1/players/me/games", query_string=query,
                              headers=auth(token))
        assert response.status_code == 400, query


@pytest.mark.parametrize("query", [
    {}, {"limit": "50"}, {"limit": "1", "cursor": "1764912345678001"}, {"limit": "007"},
    {"variant": "clock", "status": "won", "limit": "100", "cursor": "0"}, {"other": "x"},
    {"limit": "0"}, {"limit": "101"}, {"limit": "1000"}, {"limit": " 5"}, {"limit": "5.0"},
    {"limit": ""}, {"limit": "x"}, {"limit": "٣"}, {"cursor": ""}, {"cursor": "-1"},
    {"cursor": "1" * 19}, {"cursor": "12\n"}, {"cursor": "１２"}, {"variant": "Clock"},
    {"variant": ""}, {"status": "in_play"}, {"status": "won", "variant": "spider"}])
def test_the_quick_reading_of_a_query_answers_what_the_schema_does(query):
    from marshmallow import ValidationError

    from service.api.schemas import games_query_schema, load_games_query

    def answer(load):
        try:
            return load(query)
        except ValidationError as error:
            return error.messages

    assert answer(load_games_query) == answer(games_query_schema.load)


def test_every_game_as_ndjson(app, client, monkeypatch):
    import service.players.accounts as accounts
    monkeypatch.setattr(accounts, "STREAM_CHUNK", 4)  # several round trips
    _, token = register(client)
    made = [new_game(client, token)["id"] for _ in range(10)]
    resign(client, made[1], token)
    response = client.get("/v1/players/me/games",
                          headers=auth(token, Accept="application/x-ndjson"))
    assert response.status_code == 200
    assert response.mimetype == "application/x-ndjson"
    lines = [json.loads(line) for line in response.get_data(as_text=True).splitlines()]
    assert [line["id"] for line in lines] == list(reversed(made))
    response = client.get("/v1/players/me/games", query_string={"status": "resigned"},
                          headers=auth(token, Accept="application/x-ndjson"))
    assert [json.loads(line)["id"] for line in response.get_data(as_text=True).splitlines()] \
        == [made[1]]


# --- statistics --------------------------------------------------------------------------
def test_statistics_of_known_games(app, client):
    _, token = register(client)
    won = win_four_corners(app, token)
    resign(client, new_game(client, token, "four-corners")["id"], token)
    second = win_four_corners(app, token)
    new_game(client, token, "four-corners")  # in play
    resign(client, new_game(client, token, "clock")["id"], token)
    stats = my_stats(client, token)
    four = stats["four-corners"]
    assert (four["played"], four["won"], four["lost"], four["resigned"], four["in_play"]) \
        == (3, 2, 0, 1, 1)
    assert four["win_rate"] == 2 / 3
    assert (four["current_streak"], four["longest_streak"]) == (1, 1)
    assert four["fewest_moves"] == won["moves_made"] == second["moves_made"] == 304
    assert isinstance(four["fastest_win_ms"], int)
    assert four["fastest_win_ms"] > 0
    assert stats["clock"]["resigned"] == 1
    assert stats["clock"]["current_streak"] == 0
    assert stats["salic-law"] == {"played": 0, "won": 0, "lost": 0, "resigned": 0,
                                  "in_play": 0, "win_rate": None, "current_streak": 0,
                                  "longest_streak": 0, "fewest_moves": None,
                                  "fastest_win_ms": None}


def test_a_streak_counts_wins_in_a_row(app, client):
    _, token = register(client)
    win_four_corners(app, token)
    win_four_corners(app, token)
    four = my_stats(client, token)["four-corners"]
    assert (four["current_streak"], four["longest_streak"]) == (2, 2)
    resign(client, new_game(client, token, "four-corners")["id"], token)
    four = my_stats(client, token)["four-corners"]
    assert (four["current_streak"], four["longest_streak"]) == (0, 2)


def test_a_deleted_game_leaves_the_list_not_the_statistics(client):
    _, token = register(client)
    ended = new_game(client, token)
    resign(client, ended["id"], token)
    playing = new_game(client, token)
    for game in (ended, playing):
        assert client.delete(f"/v1/games/{game['id']}", headers=auth(token)).status_code \
            == 204
    assert walk(client, token) == []
    clock = my_stats(client, token)["clock"]
    assert (clock["resigned"], clock["in_play"]) == (1, 0)


# --- export and erasure ------------------------------------------------------------------
def test_export_is_everything_but_the_token(client):
    player, token = register(client)
    game = new_game(client, token)
    resign(client, game["id"], token)
    response = client.get("/v1/players/me/export", headers=auth(token))
    assert response.status_code == 200
    assert response.headers["Content-Disposition"] == \
        f'attachment; filename="patience-player-{player["id"]}.json"'
    body = response.get_json()
    assert body["player"] == player
    assert [item["id"] for item in body["games"]] == [game["id"]]
    assert next(row for row in body["stats"] if row["variant"] == "clock")["resigned"] == 1
    text = response.get_data(as_text=True)
    assert token not in text
    secret = accounts.PLAYER_TOKEN.fullmatch(token).group(2)
    assert secret not in text


@pytest.mark.cluster
def test_erasing_a_player_detaches_their_games(client, redis_db):
    player, token = register(client)
    response = client.post("/v1/games", json={"variant": "clock"}, headers=auth(token))
    game, game_token = response.get_json()["game"], response.get_json()["player_token"]
    ended = new_game(client, token)
    resign(client, ended["id"], token)
    indexes = [keys.player_index(player["id"], "clock"),
               keys.player_index(player["id"], status="playing"),
               keys.player_index(player["id"], status="resigned"),
               keys.player_index(player["id"], "clock", "playing"),
               keys.player_index(player["id"], "clock", "resigned")]
    assert [redis_db.zcard(name) for name in indexes] == [2, 1, 1, 1, 1]
    assert client.delete("/v1/players/me", headers=auth(token)).status_code == 204
    assert client.get("/v1/players/me", headers=auth(token)).status_code == 401
    for query in ({}, {"status": "resigned"}):
        assert client.get("/v1/players/me/games", query_string=query,
                          headers=auth(token)).status_code == 401
    assert redis_db.keys(f"player:{{{player['id']}}}*") == []
    for game_id in (game["id"], ended["id"]):
        assert "owner" not in stored(redis_db, game_id)[1]
    resign(client, game["id"], game_token)  # still playable with its own token
    assert play(client, ended["id"], token, {"type": "resign"}).status_code == 403
    # Anonymous again: claimable by someone else.
    _, other = register(client, "Other")
    claim = {"game_id": game["id"], "game_token": game_token}
    assert client.post("/v1/players/me/games", json=claim, headers=auth(other)).status_code \
        == 200


# --- rate limits -------------------------------------------------------------------------
def test_a_player_s_requests_count_under_the_player(redis_url, clean_redis):
    from service.app import close_app
    from tests.api.support import make_app

    app = make_app(redis_url, RATELIMIT_ENABLED=True, RATELIMIT_APPLICATION="4 per minute")
    try:
        client = app.test_client()
        _, first = register(client)  # 1 of the address's 4
        _, second = register(client, "Second")  # 2
        for token in (first, second):  # each player: a budget of their own
            for _ in range(4):
                assert client.get("/v1/players/me", headers=auth(token)).status_code == 200
            assert client.get("/v1/players/me", headers=auth(token)).status_code == 429
        # A token that is not valid counts under the address: 2 more, then refused.
        bad = auth("pl_" + "a" * 26 + "_" + "b" * 43)
        assert [client.get("/v1/players/me", headers=bad).status_code
                for _ in range(3)] == [401, 401, 429]
    finally:
        close_app(app)


def test_without_a_verifier_a_jwt_is_just_a_bad_token(client):
    game, game_token, _ = create(client)
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"
    assert client.get("/v1/players/me", headers=auth(jwt)).status_code == 401
    assert play(client, game["id"], jwt, {"type": "resign"}).status_code == 403
    assert client.post("/v1/games", json={"variant": "clock"},
                       headers=auth(jwt)).status_code == 401
