"""GET and POST /v1/games/<id>/moves: listing, playing, refusals, preconditions."""

import pytest

from service.engine import Move
from service.storage import keys
from tests.api.support import (
    as_move,
    auth,
    create,
    first_of,
    legal,
    play,
    public_piles,
    snapshot,
    stored,
    stored_history,
    stored_state,
)
from tests.notation import next_deal


def test_moves_lists_every_legal_move_with_its_card(client, redis_db):
    for variant in ("clock", "salic-law", "four-corners"):
        game, _token, _ = create(client, variant, seed=5)
        response = client.get(f"/v1/games/{game['id']}/moves")
        assert response.status_code == 200
        assert response.headers["ETag"] == '"0"'
        body = response.get_json()
        assert body["version"] == 0
        state = stored_state(redis_db, game["id"])
        expected = []
        for move in state.legal_moves():
            listed = move.to_dict()
            if move.type == "move":
                listed["card"] = str(state.card_of(move))
            expected.append(listed)
        assert body["moves"] == expected
        assert all(("card" in m) == (m["type"] == "move") for m in body["moves"])


def test_moves_honours_if_none_match(client):
    game, _token, _ = create(client, seed=5)
    response = client.get(f"/v1/games/{game['id']}/moves", headers={"If-None-Match": '"0"'})
    assert response.status_code == 304
    assert response.headers["ETag"] == '"0"'


@pytest.mark.cluster
def test_a_move_is_applied_stored_and_answered_with_its_events(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=11)
    before = stored_state(redis_db, game["id"])
    response = play(client, game["id"], token, {"type": "deal"})
    assert response.status_code == 200
    assert response.headers["ETag"] == '"1"'
    body = response.get_json()
    after, step = before.apply(Move("deal"))
    assert body["events"] == [event.to_dict() for event in step.events]
    assert body["events"][0]["from"] == "stock"
    new = body["game"]
    assert (new["version"], new["moves_made"], new["status"]) == (1, 1, "playing")
    assert new["updated_at"] >= new["created_at"] == game["created_at"]
    assert {p["id"]: p["cards"] for p in new["piles"]} == public_piles(after)
    version, record = stored(redis_db, game["id"])
    assert (version, record["moves"]) == (1, 1)
    assert record["state"] == after.to_dict()
    assert stored_history(redis_db, game["id"]) == [(1, step)]
    assert client.get(f"/v1/games/{game['id']}").get_json() == new


def test_a_card_move_names_its_card_in_the_event(client, redis_db):
    game, token, _ = create(client, "clock", seed=3)
    listed = next(m for m in legal(client, game["id"]) if m["type"] == "move")
    response = play(client, game["id"], token, as_move(listed))
    assert response.status_code == 200
    assert response.get_json()["events"][0] == {"card": listed["card"], "from": listed["from"],
                                                "to": listed["to"]}


@pytest.mark.cluster
def test_write_refreshes_the_expiry(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=1)
    key = keys.game(game["id"])
    redis_db.expire(key, 100)
    assert play(client, game["id"], token, {"type": "deal"}).status_code == 200
    assert redis_db.ttl(key) > 30 * 86400 - 10
    assert redis_db.keys(f"{key}*") == [key.encode()]  # the journal is in the game's hash


@pytest.mark.parametrize(
    ("variant", "move", "code"),
    [
        ("clock", {"type": "move", "from": "stock", "to": "packet-1"}, "not_a_source"),
        ("clock", {"type": "move", "from": "packet-1", "to": "stock"}, "not_a_target"),
        ("clock", {"type": "move", "from": "packet-1", "to": "packet-1"}, "same_pile"),
        ("clock", {"type": "move", "from": "packet-99", "to": "packet-1"}, "unknown_pile"),
        ("clock", {"type": "move", "from": "talon", "to": "foundation-1"}, "empty_pile"),
        ("clock", {"type": "deal"}, "not_in_variant"),
        ("salic-law", {"type": "draw"}, "not_in_variant"),
        ("salic-law", {"type": "move", "from": "king-1", "to": "foundation-1"},
         "king_cannot_move"),
        ("four-corners", {"type": "refill"}, "not_in_variant"),
        ("four-corners", {"type": "move", "from": "ace-1", "to": "king-1"}, "not_a_source"),
    ],
)
def test_illegal_moves_are_422_with_the_rule_and_change_nothing(client, redis_db, variant,
                                                                  move, code):
    game, token, _ = create(client, variant, seed=2)
    before = snapshot(redis_db)
    response = play(client, game["id"], token, move)
    assert response.status_code == 422
    assert response.mimetype == "application/problem+json"
    problem = response.get_json()
    assert problem["code"] == code
    assert problem["type"] == f"urn:patience:problem:{code}"
    assert problem["status"] == 422
    assert problem["title"]
    assert problem["detail"]
    assert "ETag" not in response.headers
    assert snapshot(redis_db) == before


@pytest.mark.parametrize(
    ("move", "fields"),
    [
        ({}, {"type"}),
        ({"type": "jump"}, {"type"}),
        ({"type": 1}, {"type"}),
        ({"type": "move"}, {"from", "to"}),
        ({"type": "move", "from": "packet-1"}, {"to"}),
        ({"type": "move", "from": "packet-1", "to": 7}, {"to"}),
        ({"type": "move", "from": "", "to": "packet-2"}, {"from"}),
        ({"type": "move", "from": "x" * 33, "to": "packet-2"}, {"from"}),
        ({"type": "draw", "from": "stock"}, {"from"}),
        ({"type": "draw", "to": "talon"}, {"to"}),
        ({"type": "resign", "why": "bored"}, {"why"}),
        ({"type": "move", "from": "packet-1", "to": "packet-2", "card": "K"}, {"card"}),
        ({"type": "move", "from": "packet-1", "to": "packet-2", "card": None}, {"card"}),
        ({"type": "move", "from": "packet-1", "card": "KS"}, {"to"}),
        ({"type": "move", "card": 7}, {"from", "to", "card"}),
        ({"type": "draw", "card": "KS"}, {"card"}),
        ({"type": None}, {"type"}),
    ],
)
def test_malformed_moves_are_400_with_field_errors(client, redis_db, move, fields):
    game, token, _ = create(client, seed=2)
    before = snapshot(redis_db)
    response = play(client, game["id"], token, move)
    assert response.status_code == 400
    problem = response.get_json()
    assert problem["code"] == "invalid_request"
    assert set(problem["errors"]) == fields
    assert snapshot(redis_db) == before


# --- a listed move sent back as it is: its card is a precondition -----------------------
def test_a_listed_move_sent_back_with_its_card_is_applied(client, redis_db):
    game, token, _ = create(client, "clock", seed=42)
    listed = next(m for m in legal(client, game["id"]) if m["type"] == "move")
    response = play(client, game["id"], token, listed)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json()["events"][0] == {"card": listed["card"], "from": listed["from"],
                                                "to": listed["to"]}
    assert stored(redis_db, game["id"])[0] == 1
    assert [step.move.to_dict() for _version, step in stored_history(redis_db, game["id"])] \
        == [as_move(listed)]


def test_a_move_whose_card_is_not_the_one_that_would_move_is_409_card_mismatch(client,
                                                                                redis_db):
    game, token, _ = create(client, "clock", seed=42)
    gid = game["id"]
    listed = next(m for m in legal(client, gid) if m["type"] == "move")
    state = stored_state(redis_db, gid)
    other = next(str(card) for pile in state.piles for card in pile
                 if str(card) != listed["card"])
    before = snapshot(redis_db)
    response = play(client, gid, token, {**listed, "card": other}, If_Match='"0"')
    assert response.status_code == 409
    problem = response.get_json()
    assert problem["code"] == "card_mismatch"
    assert problem["type"] == "urn:patience:problem:card_mismatch"
    assert other in problem["detail"]
    assert listed["card"] in problem["detail"]
    assert snapshot(redis_db) == before
    # A stale client: the card left its pile, the listed move no longer takes it.
    assert play(client, gid, token, listed).status_code == 200
    stale = play(client, gid, token, listed)
    assert stale.status_code == 409
    assert stale.get_json()["code"] == "card_mismatch"
    assert stored(redis_db, gid)[0] == 1


def test_a_card_on_a_move_from_an_unknown_pile_is_the_rules_refusal(client):
    game, token, _ = create(client, "clock", seed=42)
    response = play(client, game["id"], token,
                    {"type": "move", "from": "nowhere", "to": "foundation-1", "card": "7C"})
    assert response.status_code == 422
    assert response.get_json()["code"] == "unknown_pile"


def test_a_move_body_must_be_a_json_object(client, redis_db):
    game, token, _ = create(client, seed=2)
    before = snapshot(redis_db)
    url = f"/v1/games/{game['id']}/moves"
    for data in (b"", b"[]", b'"deal"', b"{"):
        response = client.post(url, data=data, content_type="application/json",
                               headers=auth(token))
        assert response.status_code == 400
        assert response.get_json()["code"] == "invalid_json"
    response = client.post(url, data=b'{"type": "draw"}', headers=auth(token))
    assert response.status_code == 415
    response = client.post(url, data=b'{"type": "draw"}', content_type="text/plain",
                           headers=auth(token))
    assert response.status_code == 415
    assert snapshot(redis_db) == before


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token abc", "Bearer a b",
     "Bearer <token>", "Bearer é"],
)
def test_writes_without_a_valid_bearer_token_are_401(client, redis_db, header):
    game, token, _ = create(client, seed=2)
    before = snapshot(redis_db)
    headers = {} if header is None else {"Authorization": header}
    gid = game["id"]
    for method, url, body in (("POST", f"/v1/games/{gid}/moves", {"type": "draw"}),
                              ("POST", f"/v1/games/{gid}/undo", None),
                              ("DELETE", f"/v1/games/{gid}", None)):
        response = client.open(url, method=method, json=body, headers=headers)
        assert response.status_code == 401, (method, url)
        assert response.get_json()["code"] == "missing_token"
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert snapshot(redis_db) == before


@pytest.mark.cluster
def test_writes_with_another_token_are_403(client, redis_db):
    game, token, _ = create(client, seed=2)
    _other, other_token, _ = create(client, seed=2)
    before = snapshot(redis_db)
    gid = game["id"]
    for wrong in (other_token, token[:-1], token + "x", "bearer-token"):
        for method, url, body in (("POST", f"/v1/games/{gid}/moves", {"type": "draw"}),
                                  ("POST", f"/v1/games/{gid}/undo", None),
                                  ("DELETE", f"/v1/games/{gid}", None)):
            response = client.open(url, method=method, json=body, headers=auth(wrong))
            assert response.status_code == 403, (method, url)
            assert response.get_json()["code"] == "wrong_token"
    assert snapshot(redis_db) == before
    lower_scheme = {"Authorization": f"bearer {token}"}
    assert client.post(f"/v1/games/{gid}/moves", json={"type": "draw"},
                       headers=lower_scheme).status_code == 200


def test_write_to_an_unknown_game_is_404(client, redis_db):
    _game, token, _ = create(client, seed=2)
    before = snapshot(redis_db)
    for gid in ("AAAAAAAAAAAAAAAAAAAAAA", "bad id!"):
        response = play(client, gid, token, {"type": "draw"})
        assert response.status_code == 404
        assert response.get_json()["code"] == "game_not_found"
    assert snapshot(redis_db) == before


@pytest.mark.cluster
def test_if_match_with_the_current_version_applies(client):
    game, token, _ = create(client, "salic-law", seed=4)
    response = play(client, game["id"], token, {"type": "deal"}, If_Match='"0"')
    assert response.status_code == 200
    response = play(client, game["id"], token, {"type": "deal"}, If_Match='"7", "1"')
    assert response.status_code == 200
    response = play(client, game["id"], token, {"type": "deal"}, If_Match="*")
    assert response.status_code == 200
    assert response.get_json()["game"]["version"] == 3


@pytest.mark.parametrize("header", ['"1"', 'W/"0"', '"0x"', "garbage", '"-0"', '""'])
def test_if_match_with_another_version_is_412_and_changes_nothing(client, redis_db, header):
    game, token, _ = create(client, "salic-law", seed=4)
    before = snapshot(redis_db)
    response = play(client, game["id"], token, {"type": "deal"}, If_Match=header)
    assert response.status_code == 412
    problem = response.get_json()
    assert problem["code"] == "version_mismatch"
    assert "0" in problem["detail"]
    assert snapshot(redis_db) == before


def test_a_stale_client_without_if_match_plays_on_the_current_state(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=4)
    for expected in (1, 2):
        response = play(client, game["id"], token, {"type": "deal"})
        assert response.get_json()["game"]["version"] == expected
    assert len(stored_history(redis_db, game["id"])) == 2


@pytest.mark.cluster
def test_resign_ends_the_game_and_reveals_seed_and_salt(client, redis_db):
    game, token, _ = create(client, "four-corners")
    _version, record = stored(redis_db, game["id"])
    response = play(client, game["id"], token, {"type": "resign"})
    assert response.status_code == 200
    body = response.get_json()
    assert body["events"] == []
    over = body["game"]
    assert over["status"] == "resigned"
    assert (over["seed"], over["salt"]) == (record["seed"], record["salt"])
    assert over["next_deal"] == next_deal(stored_state(redis_db, game["id"]))
    assert legal(client, game["id"]) == []
    refused = play(client, game["id"], token, {"type": "resign"})
    assert refused.status_code == 422
    assert refused.get_json()["code"] == "game_over"
    refused = play(client, game["id"], token, {"type": "deal"})
    assert refused.get_json()["code"] == "game_over"
    assert client.get(f"/v1/games/{game['id']}").get_json() == over


def test_resign_is_accepted_but_never_listed(client):
    game, _token, _ = create(client, "clock", seed=8)
    assert all(m["type"] != "resign" for m in legal(client, game["id"]))


@pytest.mark.cluster
def test_the_draw_and_refill_of_the_clock(client, redis_db):
    game, token, _ = create(client, "clock", seed=8)
    draw = first_of(legal(client, game["id"]), "draw")
    assert draw == {"type": "draw"}
    body = play(client, game["id"], token, draw).get_json()
    talon = next(p for p in body["game"]["piles"] if p["id"] == "talon")
    assert talon["cards"] == [body["events"][0]["card"]]
    assert body["events"][0]["from"] == "stock"
    assert body["events"][0]["to"] == "talon"
