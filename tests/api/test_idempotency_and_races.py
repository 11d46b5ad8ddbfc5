"""Idempotency-Key on every write, and racing writers (threads on one app)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.storage import keys
from tests.api.support import (
    auth,
    create,
    play,
    replay,
    snapshot,
    stored,
    stored_history,
    stored_state,
)

pytestmark = pytest.mark.cluster

KEY = "retry-7f3a"


def _idem(token, key=KEY, **headers):
    return auth(token, Idempotency_Key=key, **headers)


def _same_answer(first, second):
    assert second.status_code == first.status_code
    assert second.get_data() == first.get_data()
    assert second.headers.get("ETag") == first.headers.get("ETag")
    assert second.headers.get("Location") == first.headers.get("Location")


def test_a_retried_move_gets_the_first_answer_and_is_applied_once(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=5)
    gid = game["id"]
    url = f"/v1/games/{gid}/moves"
    first = client.post(url, json={"type": "deal"}, headers=_idem(token))
    assert first.status_code == 200
    state_after_first = snapshot(redis_db)
    again = client.post(url, data=b'{ "type" : "deal" }', content_type="application/json",
                        headers=_idem(token))
    _same_answer(first, again)
    assert snapshot(redis_db) == state_after_first
    assert stored(redis_db, gid)[0] == 1
    assert len(stored_history(redis_db, gid)) == 1
    record_key = keys.write_idempotency(gid, KEY)
    assert 86400 - 10 < redis_db.ttl(record_key) <= 86400


def test_the_first_answer_comes_back_even_after_later_moves(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=5)
    url = f"/v1/games/{game['id']}/moves"
    first = client.post(url, json={"type": "deal"}, headers=_idem(token, If_Match='"0"'))
    assert play(client, game["id"], token, {"type": "deal"}).status_code == 200
    before = snapshot(redis_db)
    again = client.post(url, json={"type": "deal"}, headers=_idem(token, If_Match='"0"'))
    _same_answer(first, again)
    assert again.get_json()["game"]["version"] == 1
    assert snapshot(redis_db) == before


def test_the_same_key_with_another_body_is_422_and_changes_nothing(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=5)
    url = f"/v1/games/{game['id']}/moves"
    client.post(url, json={"type": "deal"}, headers=_idem(token))
    before = snapshot(redis_db)
    for body in ({"type": "resign"}, {"type": "move", "from": "king-1", "to": "king-2"}):
        response = client.post(url, json=body, headers=_idem(token))
        assert response.status_code == 422
        assert response.get_json()["code"] == "idempotency_key_reused"
    response = client.post(f"/v1/games/{game['id']}/undo", headers=_idem(token))
    assert response.get_json()["code"] == "idempotency_key_reused"
    assert snapshot(redis_db) == before


def test_a_replay_needs_the_token_of_the_game(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=5)
    _other, other_token, _ = create(client, "salic-law", seed=5)
    url = f"/v1/games/{game['id']}/moves"
    client.post(url, json={"type": "deal"}, headers=_idem(token))
    before = snapshot(redis_db)
    wrong = client.post(url, json={"type": "deal"}, headers=_idem(other_token))
    assert wrong.status_code == 403
    missing = client.post(url, json={"type": "deal"}, headers={"Idempotency-Key": KEY})
    assert missing.status_code == 401
    assert snapshot(redis_db) == before


def test_keys_are_scoped_to_their_game(client, redis_db):
    first, first_token, _ = create(client, "salic-law", seed=5)
    second, second_token, _ = create(client, "salic-law", seed=5)
    a = play(client, first["id"], first_token, {"type": "deal"}, Idempotency_Key=KEY)
    b = play(client, second["id"], second_token, {"type": "deal"}, Idempotency_Key=KEY)
    assert a.status_code == b.status_code == 200
    assert a.get_json()["game"]["id"] != b.get_json()["game"]["id"]
    assert stored(redis_db, second["id"])[0] == 1


def test_a_refused_write_is_not_remembered(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=5)
    illegal = play(client, game["id"], token, {"type": "draw"}, Idempotency_Key=KEY)
    assert illegal.status_code == 422
    assert illegal.get_json()["code"] == "not_in_variant"
    legal = play(client, game["id"], token, {"type": "deal"}, Idempotency_Key=KEY)
    assert legal.status_code == 200


def test_undo_and_delete_are_idempotent_too(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=5, undo="full")
    gid = game["id"]
    play(client, gid, token, {"type": "deal"})
    play(client, gid, token, {"type": "deal"})
    first = client.post(f"/v1/games/{gid}/undo", headers=_idem(token, "undo-1"))
    again = client.post(f"/v1/games/{gid}/undo", json={}, headers=_idem(token, "undo-1"))
    _same_answer(first, again)
    assert stored(redis_db, gid)[1]["undos"] == 1
    assert len(stored_history(redis_db, gid)) == 1
    gone = client.delete(f"/v1/games/{gid}", headers=_idem(token, "delete-1"))
    assert gone.status_code == 204
    _same_answer(gone, client.delete(f"/v1/games/{gid}", headers=_idem(token, "delete-1")))
    assert client.delete(f"/v1/games/{gid}", headers=_idem("x" * 43, "delete-1")).status_code \
        == 403
    assert client.delete(f"/v1/games/{gid}", headers=_idem(token, "delete-2")).status_code \
        == 404


@pytest.mark.parametrize("key", ["", "k" * 65, "clé", "tab\there"])
def test_a_malformed_key_is_400_invalid_header(client, redis_db, key):
    game, token, _ = create(client, "salic-law", seed=5)
    before = snapshot(redis_db)
    response = play(client, game["id"], token, {"type": "deal"}, Idempotency_Key=key)
    assert response.status_code == 400
    assert response.get_json()["code"] == "invalid_header"
    assert snapshot(redis_db) == before
    assert client.post("/v1/games", json={"variant": "clock"},
                       headers={"Idempotency-Key": key}).status_code == 400


def test_keys_of_1_to_64_printable_characters_are_accepted(client):
    game, token, _ = create(client, "salic-law", seed=5)
    for key in ("k", "k" * 64, "a b~!{}\"'", "00000000-0000-4000-8000-000000000000"):
        assert play(client, game["id"], token, {"type": "deal"},
                    Idempotency_Key=key).status_code == 200


def test_a_retried_create_gets_the_same_game_and_token(client, redis_db):
    body = {"variant": "four-corners", "undo": "full"}
    first = client.post("/v1/games", json=body, headers={"Idempotency-Key": KEY})
    assert first.status_code == 201
    again = client.post("/v1/games", json=dict(reversed(body.items())),
                        headers={"Idempotency-Key": KEY})
    _same_answer(first, again)
    assert len(redis_db.keys("game:{*}")) == 1
    token = first.get_json()["player_token"]
    values = snapshot(redis_db).values()
    assert not any(token.encode() in value for value in values if isinstance(value, bytes))
    # The record lives in the game's slot; the key's first request claimed the id.
    game_id = first.get_json()["game"]["id"]
    record_key = keys.create_idempotency(game_id, KEY)
    assert record_key.startswith(f"game:{{{game_id}}}:")
    assert redis_db.type(record_key) == b"string"
    assert 86400 - 10 < redis_db.ttl(record_key) <= 86400
    other = client.post("/v1/games", json={"variant": "clock"}, headers={"Idempotency-Key": KEY})
    assert other.status_code == 422
    assert other.get_json()["code"] == "idempotency_key_reused"
    assert len(redis_db.keys("game:{*}")) == 1
    fresh = client.post("/v1/games", json=body, headers={"Idempotency-Key": "another"})
    assert fresh.get_json()["game"]["id"] != first.get_json()["game"]["id"]


def _race(app, count, request):
    """Run ``request(client)`` in ``count`` threads released together."""
    barrier = threading.Barrier(count)

    def run(_):
        client = app.test_client()
        barrier.wait()
        return request(client)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def test_racing_retries_of_one_move_apply_it_once(app, client, redis_db):
    game, token, _ = create(client, "salic-law", seed=8)
    url = f"/v1/games/{game['id']}/moves"
    answers = _race(app, 8, lambda c: c.post(url, json={"type": "deal"}, headers=_idem(token)))
    assert {a.status_code for a in answers} == {200}
    assert len({a.get_data() for a in answers}) == 1
    assert stored(redis_db, game["id"])[0] == 1
    assert len(stored_history(redis_db, game["id"])) == 1


def test_racing_retries_of_one_create_make_one_game(app, redis_db):
    answers = _race(app, 8, lambda c: c.post("/v1/games", json={"variant": "clock"},
                                             headers={"Idempotency-Key": KEY}))
    assert {a.status_code for a in answers} == {201}
    assert len({a.get_data() for a in answers}) == 1
    assert len(redis_db.keys("game:{*}")) == 1


def test_racing_if_match_writes_exactly_one_wins(app, client, redis_db):
    game, token, _ = create(client, "salic-law", seed=8)
    url = f"/v1/games/{game['id']}/moves"
    answers = _race(app, 8, lambda c: c.post(url, json={"type": "deal"},
                                             headers=auth(token, If_Match='"0"')))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [412] * 7
    assert all(a.get_json()["code"] == "version_mismatch" for a in answers if a.status_code == 412)
    assert stored(redis_db, game["id"])[0] == 1
    assert len(stored_history(redis_db, game["id"])) == 1


def test_racing_writes_without_if_match_lose_nothing_and_apply_nothing_twice(app, client,
                                                                            redis_db):
    game, token, _ = create(client, "salic-law", seed=8)
    url = f"/v1/games/{game['id']}/moves"

    def deal_three_times(c):
        return [c.post(url, json={"type": "deal"}, headers=auth(token)) for _ in range(3)]

    answers = [a for batch in _race(app, 6, deal_three_times) for a in batch]
    applied = [a for a in answers if a.status_code == 200]
    assert all(a.get_json()["code"] == "write_conflict" for a in answers if a.status_code != 200)
    assert len(applied) >= 12
    versions = sorted(a.get_json()["game"]["version"] for a in applied)
    assert versions == list(range(1, len(applied) + 1))
    version, record = stored(redis_db, game["id"])
    assert version == record["moves"] == len(applied)
    history = client.get(f"/v1/games/{game['id']}/history").get_json()["moves"]
    assert [entry["version"] for entry in history] == versions
    by_version = {a.get_json()["game"]["version"]: a.get_json()["events"] for a in applied}
    assert [entry["events"] for entry in history] == [by_version[v] for v in versions]
    assert replay("salic-law", 8, history) == stored_state(redis_db, game["id"])


def test_racing_undo_and_moves_keep_history_and_state_in_step(app, client, redis_db):
    game, token, _ = create(client, "salic-law", seed=8, undo="full")
    gid = game["id"]
    for _ in range(4):
        play(client, gid, token, {"type": "deal"})

    def undo_or_deal(c):
        return [c.post(f"/v1/games/{gid}/undo", headers=auth(token)),
                c.post(f"/v1/games/{gid}/moves", json={"type": "deal"}, headers=auth(token))]

    answers = [a for batch in _race(app, 6, undo_or_deal) for a in batch]
    assert {a.status_code for a in answers} <= {200, 409}
    undone = sum(1 for a in answers if a.status_code == 200 and "/undo" in a.request.path)
    dealt = sum(1 for a in answers if a.status_code == 200 and "/moves" in a.request.path)
    version, record = stored(redis_db, gid)
    assert version == 4 + undone + dealt
    assert record["undos"] == undone
    history = client.get(f"/v1/games/{gid}/history").get_json()["moves"]
    assert len(history) == record["moves"] == 4 + dealt - undone
    assert replay("salic-law", 8, history) == stored_state(redis_db, gid)
