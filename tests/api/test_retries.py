"""Idempotency-Key and lost replies: the record is written by the same Lua script as the
write it guards (Redis MONITOR shows it), it lives 24 hours, it belongs to one game, and
a write whose reply from Redis is lost is never applied twice: answered 503, and a retry
with the same key gets the first answer."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.app import close_app
from service.storage import keys
from tests.api.support import auth, create, make_app, play, snapshot, stored, stored_history
from tests.faults import RedisProxy

DAY = 24 * 60 * 60


def _record_key(game_id: str, key: str) -> str:
    return keys.write_idempotency(game_id, key)


def _problem(response, status: int, code: str) -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.get_json()["code"] == code


# --- atomic, 24 hours, per game ------------------------------------------------------------
def _monitored(redis_db, action) -> list[dict]:
    """The commands Redis ran while ``action()`` ran (MONITOR)."""
    seen: list[dict] = []
    ready = threading.Event()

    def listen():
        with redis_db.monitor() as monitor:
            ready.set()
            for command in monitor.listen():
                seen.append(command)
                if "monitor-end" in command["command"]:
                    return

    thread = threading.Thread(target=listen)
    thread.start()
    assert ready.wait(5)
    redis_db.echo("monitor-start")
    try:
        action()
    finally:
        redis_db.echo("monitor-end")
        thread.join(10)
    start = next(i for i, c in enumerate(seen) if "monitor-start" in c["command"])
    return seen[start + 1:-1]


WRITES = ("SET", "HSET", "RPUSH", "RPOP", "DEL", "EXPIRE", "XADD", "HINCRBY", "SETEX", "PUBLISH")


@pytest.mark.parametrize("kind", ["move", "undo", "autoplay", "delete"])
def test_the_record_is_stored_by_the_script_that_writes(client, redis_db, kind):
    game, token, _ = create(client, "salic-law", seed=5, undo="full")
    gid = game["id"]
    play(client, gid, token, {"type": "deal"})
    key = f"atomic-{kind}"
    request = {
        "move": lambda: play(client, gid, token, {"type": "deal"}, Idempotency_Key=key),
        "undo": lambda: client.post(f"/v1/games/{gid}/undo",
                                    headers=auth(token, Idempotency_Key=key)),
        "autoplay": lambda: client.post(f"/v1/games/{gid}/autoplay",
                                        headers=auth(token, Idempotency_Key=key)),
        "delete": lambda: client.delete(f"/v1/games/{gid}",
                                        headers=auth(token, Idempotency_Key=key)),
    }[kind]
    answers = []
    commands = _monitored(redis_db, lambda: answers.append(request()))
    assert answers[0].status_code in (200, 204)
    names = [(c["client_type"], c["command"].split(" ", 1)[0].upper()) for c in commands]
    # Nothing is written outside a script...
    assert not [name for client_type, name in names
                if client_type != "lua" and name in WRITES], names
    # ...and one script wrote both the game and the record of its key.
    record = _record_key(gid, key)
    scripts = [i for i, (client_type, name) in enumerate(names)
               if client_type != "lua" and name in ("EVALSHA", "EVAL")]
    assert scripts
    last = scripts[-1]
    inside = [c["command"] for c in commands[last + 1:] if c["client_type"] == "lua"]
    assert any(command.startswith("SET") and record in command for command in inside)
    game_write = "DEL" if kind == "delete" else "HSET"
    assert any(command.startswith(game_write) and keys.game(gid) in command
               for command in inside)
    assert 0 < redis_db.ttl(record) <= DAY
    assert redis_db.ttl(record) > DAY - 30


def test_a_replay_does_not_extend_or_rewrite_the_record(client, redis_db):
    game, token, _ = create(client, "salic-law", seed=5)
    first = play(client, game["id"], token, {"type": "deal"}, Idempotency_Key="k")
    record = _record_key(game["id"], "k")
    stored_record = redis_db.get(record)
    redis_db.expire(record, 100)
    again = play(client, game["id"], token, {"type": "deal"}, Idempotency_Key="k")
    assert again.get_data() == first.get_data()
    assert redis_db.get(record) == stored_record
    assert 90 < redis_db.ttl(record) <= 100


def test_a_key_belongs_to_its_game(client, redis_db):
    first, first_token, _ = create(client, "salic-law", seed=5)
    second, second_token, _ = create(client, "salic-law", seed=6)
    a = play(client, first["id"], first_token, {"type": "deal"}, Idempotency_Key="same")
    b = play(client, second["id"], second_token, {"type": "deal"}, Idempotency_Key="same")
    assert a.get_json()["game"]["id"] == first["id"]
    assert b.get_json()["game"]["id"] == second["id"]
    assert a.get_json()["events"] != b.get_json()["events"]
    before = snapshot(redis_db)
    assert play(client, first["id"], first_token, {"type": "deal"},
                Idempotency_Key="same").get_data() == a.get_data()
    assert play(client, second["id"], second_token, {"type": "deal"},
                Idempotency_Key="same").get_data() == b.get_data()
    assert snapshot(redis_db) == before
    # Another game's token cannot fetch a game's first answer with its key.
    _problem(play(client, second["id"], first_token, {"type": "deal"},
                  Idempotency_Key="same"), 403, "wrong_token")
    assert stored(redis_db, first["id"])[0] == stored(redis_db, second["id"])[0] == 1


def test_racing_retries_with_two_bodies_apply_one_of_them_once(app, client, redis_db):
    game, token, _ = create(client, "salic-law", seed=8)
    url = f"/v1/games/{game['id']}/moves"
    bodies = [{"type": "deal"}, {"type": "resign"}] * 4
    barrier = threading.Barrier(len(bodies))

    def send(body):
        local = app.test_client()
        barrier.wait()
        return body, local.post(url, json=body, headers=auth(token, Idempotency_Key="race"))

    with ThreadPoolExecutor(len(bodies)) as pool:
        answers = list(pool.map(send, bodies))
    winners = {a.get_data() for _body, a in answers if a.status_code == 200}
    assert len(winners) == 1
    won = next(body for body, a in answers if a.status_code == 200)
    for body, answer in answers:
        if body == won:
            assert answer.status_code == 200
            assert answer.get_data() in winners
        else:
            _problem(answer, 422, "idempotency_key_reused")
    assert stored(redis_db, game["id"])[0] == 1
    assert len(stored_history(redis_db, game["id"])) == 1


# --- lost replies ----------------------------------------------------------------------------
@pytest.fixture
def proxied(redis_server, clean_redis):
    """An app that reaches the session's Redis through a proxy that can lose replies."""
    with RedisProxy((redis_server.host, redis_server.port)) as proxy:
        app = make_app(proxy.url)
        yield app, app.test_client(), proxy
        close_app(app)
        assert 500 not in app.statuses


def test_a_lost_reply_is_a_503_and_the_move_counts_once(proxied, redis_db):
    app, client, proxy = proxied
    game, token, _ = create(client, "salic-law", seed=3)
    gid = game["id"]
    assert play(client, gid, token, {"type": "deal"}).status_code == 200
    proxy.lose_reply_to(b"EVALSHA")
    lost = play(client, gid, token, {"type": "deal"})
    assert proxy.replies_lost == 1
    _problem(lost, 503, "storage_unavailable")
    assert lost.headers["Retry-After"] == "1"
    # Redis ran the write once; the service did not run it again.
    assert stored(redis_db, gid)[0] == 2
    assert len(stored_history(redis_db, gid)) == 2
    shown = client.get(f"/v1/games/{gid}").get_json()
    assert shown["version"] == 2
    assert next(p["count"] for p in shown["piles"] if p["id"] == "stock") == 101


@pytest.mark.parametrize("write", ["move", "undo"])
def test_a_retry_after_a_lost_reply_gets_the_first_answer(proxied, redis_db, write):
    app, client, proxy = proxied
    game, token, _ = create(client, "salic-law", seed=3, undo="full")
    gid = game["id"]
    for _ in range(2):
        play(client, gid, token, {"type": "deal"})

    def send():
        if write == "move":
            return play(client, gid, token, {"type": "deal"}, Idempotency_Key="lost-1")
        return client.post(f"/v1/games/{gid}/undo", headers=auth(token, Idempotency_Key="lost-1"))

    proxy.lose_reply_to(b"EVALSHA")
    _problem(send(), 503, "storage_unavailable")
    assert stored(redis_db, gid)[0] == 3
    retried = send()
    assert retried.status_code == 200
    assert retried.get_json()["game"]["version"] == 3
    assert send().get_data() == retried.get_data()
    history = stored_history(redis_db, gid)
    assert len(history) == (3 if write == "move" else 1)
    assert stored(redis_db, gid)[0] == 3


def test_a_create_whose_reply_is_lost_is_found_again_with_its_key(proxied, redis_db):
    app, client, proxy = proxied
    proxy.lose_reply_to(b":idem:create:")  # the script storing the game and its record
    _problem(client.post("/v1/games", json={"variant": "clock"},
                         headers={"Idempotency-Key": "c-1"}), 503, "storage_unavailable")
    retried = client.post("/v1/games", json={"variant": "clock"},
                          headers={"Idempotency-Key": "c-1"})
    assert retried.status_code == 201
    game_id = retried.get_json()["game"]["id"]
    assert client.get(f"/v1/games/{game_id}").status_code == 200  # not discarded
    token = retried.get_json()["player_token"]
    assert play(client, game_id, token, {"type": "draw"}).status_code == 200
    games = [key for key in redis_db.keys("game:*") if redis_db.type(key) == b"hash"]
    assert games == [keys.game(game_id).encode()]
