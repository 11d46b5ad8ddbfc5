"""GET /v1/games/<id>/hint and POST /v1/games/<id>/autoplay through the API."""

from __future__ import annotations

import json
import random
import re

import pytest

from service.engine import Move, State, get_variant
from service.engine.cards import pile_codes
from service.engine.hints import autoplay as engine_autoplay
from service.observability import telemetry
from service.storage import keys
from tests.api.support import (
    auth,
    create,
    first_of,
    legal,
    play,
    public_piles,
    replay,
    stored,
    stored_state,
)
from tests.contract import spec
from tests.engine.positions import CLOCK_5_LOSING_STOCK, CLOCK_5_TO_A_GUESS

#: Salic Law, deal 19 after 82 deals: the eighth ace is out and three 2s can safely go
#: home (the openapi.yaml example of autoplay).
SALIC_AUTOPLAY_SEED = 19
SALIC_BEFORE_AUTOPLAY = ["deal"] * 82


def play_all(client, game_id: str, token: str, moves) -> None:
    for text in moves:
        response = play(client, game_id, token, Move.parse(text).to_dict())
        assert response.status_code == 200, response.get_data(as_text=True)


def _example(path: str, method: str, name: str):
    content = spec()["paths"][path][method]["responses"]["200"]["content"]
    return content["application/json"]["examples"][name]["value"]


def _visible(game: dict) -> dict:
    return {pile["id"]: pile["cards"] for pile in game["piles"]}


# --- hint ----------------------------------------------------------------------------------
def test_the_hint_of_clock_42_is_the_documented_one(client):
    game, _token, _ = create(client, "clock", seed=42)
    response = client.get(f"/v1/games/{game['id']}/hint")
    assert response.status_code == 200
    assert response.headers["ETag"] == '"0"'
    assert response.get_json() == _example("/v1/games/{id}/hint", "get", "clock-42")
    assert response.get_json()["move"] in legal(client, game["id"])
    cached = client.get(f"/v1/games/{game['id']}/hint", headers={"If-None-Match": '"0"'})
    assert cached.status_code == 304


def test_a_hint_gives_its_turn_through_the_app_back_before_its_search(client):
    """A request process lets its requests through the app in turns
    (service/runtime/slots.py): a hint, which may search for up to HINT_SECONDS, gives
    its turn back first so that the requests behind it need not wait for the search."""
    game, _token, _ = create(client, "clock", seed=42)
    left = []
    response = client.get(f"/v1/games/{game['id']}/hint",
                          environ_overrides={telemetry.LEAVE_TURN: lambda: left.append(1)})
    assert response.status_code == 200
    assert left == [1]
    read = client.get(f"/v1/games/{game['id']}",
                      environ_overrides={telemetry.LEAVE_TURN: lambda: left.append(2)})
    assert read.status_code == 200
    assert left == [1]  # a read keeps its turn to its end


def test_with_no_card_move_that_helps_the_hint_is_the_deal(client):
    game, _token, _ = create(client, "salic-law", seed=42)
    body = client.get(f"/v1/games/{game['id']}/hint").get_json()
    assert body == _example("/v1/games/{id}/hint", "get", "deal")


def test_a_finished_or_unknown_game_has_no_hint(client):
    game, token, _ = create(client, "four-corners", seed=1)
    assert play(client, game["id"], token, {"type": "resign"}).status_code == 200
    body = client.get(f"/v1/games/{game['id']}/hint").get_json()
    assert body == {"move": None, "reason": "the game is over (resigned)"}
    assert client.get("/v1/games/nosuchgame/hint").status_code == 404


def _shuffle_stock(redis_db, game_id: str, rng: random.Random) -> None:
    """Put the undealt cards of a stored game in another order (what the player cannot
    see), keeping everything else."""
    key = keys.game(game_id)
    record = json.loads(redis_db.hget(key, "d"))
    variant = get_variant(record["state"]["variant"])
    stock = record["state"]["piles"][variant.index["stock"]]
    cards = [stock[i:i + 2] for i in range(0, len(stock), 2)]
    rng.shuffle(cards)
    record["state"]["piles"][variant.index["stock"]] = "".join(cards)
    State.from_dict(record["state"])  # still a valid snapshot
    redis_db.hset(key, "d", json.dumps(record))


@pytest.mark.parametrize(("variant", "seed"), [("clock", 3), ("salic-law", 5),
                                               ("four-corners", 7)])
def test_the_hint_is_the_same_whatever_the_hidden_stock_order(client, redis_db, variant, seed):
    """Along a game, at every position: shuffle the undealt cards in Redis, and the
    answer of GET .../hint (and everything the player sees) stays the same."""
    game, token, _ = create(client, variant, seed=seed)
    gid = game["id"]
    rng = random.Random(seed)
    for _turn in range(8):
        seen = client.get(f"/v1/games/{gid}").get_json()
        hint = client.get(f"/v1/games/{gid}/hint").get_json()
        for _ in range(2):
            _shuffle_stock(redis_db, gid, rng)
            assert client.get(f"/v1/games/{gid}/hint").get_json() == hint
            assert _visible(client.get(f"/v1/games/{gid}").get_json()) == _visible(seen)
        if hint["move"] is None:
            break
        move = {k: v for k, v in hint["move"].items() if k != "card"}
        assert hint["move"] in legal(client, gid)
        assert play(client, gid, token, move).status_code == 200


def _set_stock(redis_db, game_id: str, stock: str) -> None:
    """Give a stored game another stock of the same cards (what the player cannot see)."""
    key = f"game:{{{game_id}}}"
    record = json.loads(redis_db.hget(key, "d"))
    index = get_variant(record["state"]["variant"]).index["stock"]
    assert sorted(pile_codes(stock)) == sorted(pile_codes(record["state"]["piles"][index]))
    record["state"]["piles"][index] = stock
    State.from_dict(record["state"])  # still a valid snapshot
    redis_db.hset(key, "d", json.dumps(record))


def test_two_games_alike_but_for_their_stock_get_the_same_hint(client, redis_db):
    """Two games of the Clock's deal 5 played to the same position; the second one's
    eight stock cards put in an order with which the position is lost (with the deal's
    own order it wins).  A hint that read the stock could tell them apart; both players
    see the same table and get the same hint."""
    games = []
    for _ in range(2):
        game, token, _ = create(client, "clock", seed=5)
        play_all(client, game["id"], token, CLOCK_5_TO_A_GUESS)
        games.append(game["id"])
    _set_stock(redis_db, games[1], CLOCK_5_LOSING_STOCK)
    stocks = [json.loads(redis_db.hget(f"game:{{{gid}}}", "d"))["state"]["piles"][24]
              for gid in games]
    assert stocks[0] != stocks[1]
    seen = [client.get(f"/v1/games/{gid}").get_json() for gid in games]
    assert _visible(seen[0]) == _visible(seen[1])
    hints = [client.get(f"/v1/games/{gid}/hint").get_json() for gid in games]
    assert hints[0] == hints[1]
    example = _example("/v1/games/{id}/hint", "get", "sampled")
    assert hints[0]["move"] == example["move"]
    # How many of the samples are won within the budget grows with the solver's strength.
    assert re.fullmatch(example["reason"].replace("7 of 8", "[1-8] of 8"), hints[0]["reason"])


def test_following_hints_through_the_api_wins_salic_law_9(client):
    """The hint bot of the benchmark, played over HTTP: every hint is a legal move, and
    deal 9 is won (as the hint bot of ``bench solver`` wins it)."""
    game, token, _ = create(client, "salic-law", seed=9)
    gid = game["id"]
    for _ in range(400):
        hint = client.get(f"/v1/games/{gid}/hint").get_json()
        if hint["move"] is None:
            break
        assert hint["reason"]
        move = {k: v for k, v in hint["move"].items() if k != "card"}
        answer = play(client, gid, token, move)
        assert answer.status_code == 200, answer.get_data(as_text=True)
    final = client.get(f"/v1/games/{gid}").get_json()
    assert final["status"] == "won"
    assert client.get(f"/v1/games/{gid}/hint").get_json()["move"] is None


# --- autoplay --------------------------------------------------------------------------
def test_autoplay_plays_the_safe_moves_one_version_each(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=SALIC_AUTOPLAY_SEED)
    gid = game["id"]
    play_all(client, gid, token, SALIC_BEFORE_AUTOPLAY)
    before = stored_state(redis_db, gid)
    response = client.post(f"/v1/games/{gid}/autoplay", headers=auth(token, If_Match='"82"'))
    assert response.status_code == 200
    assert response.headers["ETag"] == '"85"'
    body = response.get_json()
    example = _example("/v1/games/{id}/autoplay", "post", "salic-law")
    assert body["events"] == example["events"]
    assert body["game"]["piles"] == example["game"]["piles"]
    assert (body["game"]["version"], body["game"]["moves_made"]) == (85, 85)
    # The engine's autoplay, from the stored state before, lands on the stored state.
    after, steps = engine_autoplay(before)
    assert len(steps) == 3
    assert stored_state(redis_db, gid) == after
    assert body["events"] == [event.to_dict() for step in steps for event in step.events]
    # Three history entries, versions 83..85, that replay to the stored state.
    history = client.get(f"/v1/games/{gid}/history").get_json()["moves"]
    assert [entry["version"] for entry in history[-3:]] == list(range(83, 86))
    assert public_piles(replay("salic-law", SALIC_AUTOPLAY_SEED, history)) \
        == _visible(body["game"])
    # Undo takes back one autoplayed move: the last.
    undone = client.post(f"/v1/games/{gid}/undo", headers=auth(token))
    assert undone.status_code == 200
    assert undone.get_json()["events"] == [{"card": "2H", "from": "foundation-3",
                                            "to": "king-5"}]
    assert undone.get_json()["game"]["version"] == 86
    assert undone.get_json()["game"]["moves_made"] == 84


def test_autoplay_with_no_safe_move_changes_nothing(client, redis_db):
    game, token, _ = create(client, "clock", seed=42)
    gid = game["id"]
    response = client.post(f"/v1/games/{gid}/autoplay", json={}, headers=auth(token))
    assert response.status_code == 200
    assert response.headers["ETag"] == '"0"'
    assert response.get_json() == {"game": game, "events": []}
    assert stored(redis_db, gid)[0] == 0
    assert client.get(f"/v1/games/{gid}/events").get_json()["events"] == []


def test_autoplay_is_a_write_like_the_others(client):
    game, token, _ = create(client, "salic-law", seed=42)
    gid = game["id"]
    url = f"/v1/games/{gid}/autoplay"
    assert client.post(url).status_code == 401
    assert client.post(url, headers=auth("x" * 43)).status_code == 403
    assert client.post(url, headers=auth(token, If_Match='"3"')).status_code == 412
    refused = client.post(url, json={"fast": True}, headers=auth(token))
    assert refused.status_code == 400
    assert "fast" in refused.get_json()["errors"]
    assert client.post(url, data="{}", headers=auth(token, Content_Type="text/plain")) \
        .status_code == 415
    assert client.post("/v1/games/nosuchgame/autoplay", headers=auth(token)).status_code == 404
    assert play(client, gid, token, {"type": "resign"}).status_code == 200
    over = client.post(url, headers=auth(token))
    assert over.status_code == 422
    assert over.get_json()["code"] == "game_over"


def test_a_retried_autoplay_is_applied_once(client):
    game, token, _ = create(client, "salic-law", seed=SALIC_AUTOPLAY_SEED)
    gid = game["id"]
    play_all(client, gid, token, SALIC_BEFORE_AUTOPLAY)
    key = auth(token, Idempotency_Key="auto-1")
    first = client.post(f"/v1/games/{gid}/autoplay", headers=key)
    again = client.post(f"/v1/games/{gid}/autoplay", headers=key)
    assert first.status_code == again.status_code == 200
    assert first.get_data() == again.get_data()
    assert client.get(f"/v1/games/{gid}").get_json()["version"] == 85
    # Another autoplay right after has nothing left to play.
    nothing = client.post(f"/v1/games/{gid}/autoplay", headers=auth(token))
    assert nothing.get_json()["events"] == []


def test_autoplay_under_undo_safe_leaves_its_moves_undoable(client):
    """Safe moves deal nothing, so even under "safe" each can be taken back, one by one,
    down to the last move that turned a stock card (a deal)."""
    game, token, _ = create(client, "salic-law", seed=SALIC_AUTOPLAY_SEED, undo="safe")
    gid = game["id"]
    play_all(client, gid, token, SALIC_BEFORE_AUTOPLAY)
    assert client.post(f"/v1/games/{gid}/autoplay", headers=auth(token)).status_code == 200
    for _ in range(3):
        assert client.post(f"/v1/games/{gid}/undo", headers=auth(token)).status_code == 200
    blocked = client.post(f"/v1/games/{gid}/undo", headers=auth(token))
    assert blocked.status_code == 409
    assert blocked.get_json()["code"] == "undo_blocked"
    assert first_of(legal(client, gid), "deal") == {"type": "deal"}
