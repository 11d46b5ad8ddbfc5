"""POST .../undo (policies full, safe, off), GET .../history, DELETE /v1/games/<id>."""

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
    replay,
    snapshot,
    stored,
    stored_history,
    stored_state,
)
from tests.notation import cards_on


def undo(client, game_id, token, *, headers=None, **kwargs):
    return client.post(f"/v1/games/{game_id}/undo", headers={**auth(token), **(headers or {})},
                       **kwargs)


def _card_move(client, game_id):
    return first_of(legal(client, game_id), "move")


@pytest.mark.cluster
def test_undo_takes_back_the_last_move_with_reversed_events(client, redis_db):
    game, token, _ = create(client, "clock", seed=3, undo="full")
    gid = game["id"]
    before = stored_state(redis_db, gid)
    played = play(client, gid, token, _card_move(client, gid)).get_json()
    response = undo(client, gid, token)
    assert response.status_code == 200
    assert response.headers["ETag"] == '"2"'
    body = response.get_json()
    assert body["events"] == [{"card": e["card"], "from": e["to"], "to": e["from"]}
                              for e in reversed(played["events"])]
    back = body["game"]
    assert (back["version"], back["undos"], back["moves_made"]) == (2, 1, 0)
    assert {p["id"]: p["cards"] for p in back["piles"]} == public_piles(before)
    version, record = stored(redis_db, gid)
    assert (version, record["undos"], record["moves"]) == (2, 1, 0)
    assert record["state"] == before.to_dict()
    assert stored_history(redis_db, gid) == []
    assert client.get(f"/v1/games/{gid}/history").get_json() == {"moves": []}


def test_full_undo_takes_back_a_reveal_and_events_come_last_first(client, redis_db):
    game, token, _ = create(client, "clock", seed=3, undo="full")
    gid = game["id"]
    before = stored_state(redis_db, gid)
    played = play(client, gid, token, {"type": "draw"}).get_json()
    assert played["events"][0]["from"] == "stock"
    body = undo(client, gid, token, json={}).get_json()
    assert body["events"][0] == {"card": played["events"][0]["card"], "from": "talon",
                                 "to": "stock"}
    assert stored_state(redis_db, gid) == before


def test_undo_accepts_an_empty_body_or_an_empty_object_only(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=3, undo="full")
    gid = game["id"]
    for _ in range(3):
        play(client, gid, token, {"type": "deal"})
    assert undo(client, gid, token, data=b"").status_code == 200
    assert undo(client, gid, token, json={}).status_code == 200
    assert undo(client, gid, token, data=b"{}", content_type="application/json").status_code == 200
    play(client, gid, token, {"type": "deal"})
    before = snapshot(redis_db)
    response = undo(client, gid, token, json={"steps": 2})
    assert response.status_code == 400
    assert response.get_json()["errors"] == {"steps": ["Unknown field."]}
    assert undo(client, gid, token, data=b"[]", content_type="application/json").status_code == 400
    assert undo(client, gid, token, data=b"{}", content_type="text/plain").status_code == 415
    assert undo(client, gid, token, data=b"x").status_code == 415
    assert snapshot(redis_db) == before


def test_nothing_to_undo_is_409(client, redis_db):
    game, token, _ = create(client, "clock", seed=3, undo="full")
    before = snapshot(redis_db)
    response = undo(client, game["id"], token)
    assert response.status_code == 409
    assert response.get_json()["code"] == "nothing_to_undo"
    assert snapshot(redis_db) == before


def test_off_refuses_every_undo(client, redis_db):
    game, token, _ = create(client, "clock", seed=3, undo="off")
    play(client, game["id"], token, _card_move(client, game["id"]))
    before = snapshot(redis_db)
    response = undo(client, game["id"], token)
    assert response.status_code == 409
    assert response.get_json()["code"] == "undo_disabled"
    assert snapshot(redis_db) == before


@pytest.mark.parametrize(("variant", "reveal"), [("clock", "draw"), ("salic-law", "deal"),
                                                 ("four-corners", "deal")])
def test_safe_never_takes_back_a_reveal_nor_anything_before_it(client, redis_db, variant,
                                                               reveal):
    game, token, _ = create(client, variant, seed=12)  # "safe" is the default
    assert game["undo"] == "safe"
    gid = game["id"]
    assert play(client, gid, token, {"type": reveal}).status_code == 200
    before = snapshot(redis_db)
    response = undo(client, gid, token)
    assert response.status_code == 409
    assert response.get_json()["code"] == "undo_blocked"
    assert snapshot(redis_db) == before
    # A later move that reveals nothing can be taken back, but then the reveal blocks.
    move = next((as_move(m) for m in legal(client, gid) if m["type"] == "move"
                 and not _reveals(redis_db, gid, m)), None)
    if move is not None:
        assert play(client, gid, token, move).status_code == 200
        assert undo(client, gid, token).status_code == 200
        assert undo(client, gid, token).get_json()["code"] == "undo_blocked"


def _reveals(redis_db, gid, listed) -> bool:
    _state, step = stored_state(redis_db, gid).apply(Move.from_dict(as_move(listed)))
    return step.reveals


def test_safe_undo_never_shows_a_card_twice_from_the_stock(client, redis_db):
    """Under "safe", every stock card turned up stays turned up: the sequence of cards
    that leave the stock, over any calls, is the stock read from the top once."""
    game, token, _ = create(client, "salic-law", seed=21)
    gid = game["id"]
    stock = cards_on(stored_state(redis_db, gid), "stock")
    seen = []
    for _ in range(12):
        for response in (play(client, gid, token, {"type": "deal"}),
                         undo(client, gid, token), undo(client, gid, token)):
            seen += [e["card"] for e in response.get_json().get("events", [])
                     if e["from"] == "stock"]
    assert seen == [str(card) for card in reversed(stock)][:12]


def test_undo_of_a_finished_game_is_422_game_over_like_a_move(client, redis_db):
    game, token, _ = create(client, "clock", seed=3, undo="full")
    play(client, game["id"], token, _card_move(client, game["id"]))
    play(client, game["id"], token, {"type": "resign"})
    before = snapshot(redis_db)
    response = undo(client, game["id"], token)
    assert response.status_code == 422
    assert response.get_json()["code"] == "game_over"
    assert snapshot(redis_db) == before
    moved = play(client, game["id"], token, {"type": "resign"})
    assert (moved.status_code, moved.get_json()["code"]) == (422, "game_over")


@pytest.mark.cluster
def test_undo_with_if_match(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=3, undo="full")
    play(client, game["id"], token, {"type": "deal"})
    before = snapshot(redis_db)
    stale = undo(client, game["id"], token, headers={"If-Match": '"0"'})
    assert stale.status_code == 412
    assert snapshot(redis_db) == before
    fresh = undo(client, game["id"], token, headers={"If-Match": '"1"'})
    assert fresh.status_code == 200


@pytest.mark.cluster
def test_history_lists_accepted_moves_in_order_without_undone_ones(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=6, undo="full")
    gid = game["id"]
    answers = [play(client, gid, token, {"type": "deal"}).get_json() for _ in range(3)]
    undo(client, gid, token)
    answers.append(play(client, gid, token, {"type": "deal"}).get_json())
    response = client.get(f"/v1/games/{gid}/history")
    assert response.status_code == 200
    assert response.headers["ETag"] == '"5"'
    moves = response.get_json()["moves"]
    kept = answers[:2] + answers[3:]
    assert [m["version"] for m in moves] == [1, 2, 5]
    assert [m["events"] for m in moves] == [a["events"] for a in kept]
    assert all(m["move"] == {"type": "deal"} for m in moves)
    seed = stored(redis_db, gid)[1]["seed"]
    assert public_piles(replay("salic-law", seed, moves)) == {
        p["id"]: p["cards"] for p in client.get(f"/v1/games/{gid}").get_json()["piles"]}
    assert client.get(f"/v1/games/{gid}/history",
                      headers={"If-None-Match": '"5"'}).status_code == 304


@pytest.mark.cluster
def test_delete_removes_the_game_and_its_history(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=6)
    _other, _other_token, _ = create(client, "salic-law", seed=6)
    gid = game["id"]
    play(client, gid, token, {"type": "deal"})
    response = client.delete(f"/v1/games/{gid}", headers=auth(token))
    assert response.status_code == 204
    assert response.get_data() == b""
    assert "Content-Type" not in response.headers
    # Nothing of it is left: the other game and the statistics only (one hash on one
    # Redis; on a cluster one per slot, next to the games it counts).
    assert not redis_db.keys(f"*{gid}*")
    left = {key.decode() for key in redis_db.keys("*")}
    assert {key for key in left if not key.startswith(keys.STATS)} == {keys.game(_other["id"])}
    assert 1 <= len(left) - 1 <= 2
    assert redis_db.dbsize() == len(left)
    for suffix in ("", "/moves", "/history"):
        assert client.get(f"/v1/games/{gid}{suffix}").status_code == 404
    again = client.delete(f"/v1/games/{gid}", headers=auth(token))
    assert again.status_code == 404
    assert again.get_json()["code"] == "game_not_found"
    assert play(client, gid, token, {"type": "deal"}).status_code == 404


@pytest.mark.cluster
def test_delete_with_a_stale_if_match_is_412(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=6)
    play(client, game["id"], token, {"type": "deal"})
    before = snapshot(redis_db)
    response = client.delete(f"/v1/games/{game['id']}", headers=auth(token, If_Match='"0"'))
    assert response.status_code == 412
    assert snapshot(redis_db) == before
