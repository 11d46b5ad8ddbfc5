"""GET /v1/stats: games created, won, lost and resigned per variant, counted in the same
Lua script as the creation or the finishing write, so never twice."""

from __future__ import annotations

import threading

import pytest

from service.app import close_app
from tests.api.support import auth, create, make_app, play

ZERO = {"created": 0, "won": 0, "lost": 0, "resigned": 0, "win_rate": None}


def _stats(client) -> dict:
    response = client.get("/v1/stats")
    assert response.status_code == 200
    rows = response.get_json()["variants"]
    return {row.pop("variant"): row for row in rows}


def _hint_bot(client, variant: str, seed: int) -> dict:
    """Play deal ``seed`` through the API as the benchmark's hint bot does."""
    game, token, _ = create(client, variant, seed=seed)
    gid = game["id"]
    for _ in range(600):
        hint = client.get(f"/v1/games/{gid}/hint").get_json()
        move = hint["move"] or {"type": "resign"}
        move = {k: v for k, v in move.items() if k != "card"}
        body = play(client, gid, token, move).get_json()
        if body["game"]["status"] != "playing":
            return body["game"]
    raise AssertionError("the game did not end")


@pytest.mark.cluster
def test_no_game_yet(client):
    response = client.get("/v1/stats")
    assert list(_stats(client)) == ["clock", "salic-law", "four-corners"]
    assert all(row == ZERO for row in _stats(client).values())
    assert "ETag" not in response.headers


def test_games_are_counted_as_they_are_created_and_end(client):
    # Salic Law: deal 9 is won and deal 45 lost by the hint bot, its hints bounded by
    # positions alone (the app's HINT_SECONDS is 60 here).
    assert _hint_bot(client, "salic-law", 9)["status"] == "won"
    assert _hint_bot(client, "salic-law", 45)["status"] == "lost"
    game, token, _ = create(client, "salic-law", seed=1)
    assert play(client, game["id"], token, {"type": "resign"}).status_code == 200
    create(client, "salic-law")  # still playing
    playing, token2, _ = create(client, "clock")
    assert client.delete(f"/v1/games/{playing['id']}", headers=auth(token2)).status_code == 204
    stats = _stats(client)
    assert stats["salic-law"] == {"created": 4, "won": 1, "lost": 1, "resigned": 1,
                                  "win_rate": 1 / 3}
    assert stats["clock"] == dict(ZERO, created=1)  # deleting a game changes no count
    assert stats["four-corners"] == ZERO


@pytest.mark.cluster
def test_retries_replays_and_refusals_count_nothing(client):
    key = {"Idempotency-Key": "new-game-1"}
    first = client.post("/v1/games", json={"variant": "clock"}, headers=key)
    again = client.post("/v1/games", json={"variant": "clock"}, headers=key)
    assert first.get_data() == again.get_data()
    game, token = first.get_json()["game"], first.get_json()["player_token"]
    gid = game["id"]
    resign = auth(token, Idempotency_Key="give-up")
    assert play(client, gid, token, {"type": "resign"}, **{"Idempotency-Key": "give-up"}) \
        .status_code == 200
    assert client.post(f"/v1/games/{gid}/moves", json={"type": "resign"},
                       headers=resign).status_code == 200  # the replay
    assert play(client, gid, token, {"type": "resign"}).status_code == 422  # over
    assert client.post(f"/v1/games/{gid}/autoplay", headers=auth(token)).status_code == 422
    assert client.post("/v1/games", json={"variant": "nope"}).status_code == 400
    assert _stats(client)["clock"] == {"created": 1, "won": 0, "lost": 0, "resigned": 1,
                                       "win_rate": 0.0}


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_counts_are_right_under_concurrency(redis_url, clean_redis):
    """Threads create games, race to resign the same games, and race idempotent
    creates with one key: every game is counted once, every ending once."""
    app = make_app(redis_url)
    try:
        shared = [create(app.test_client(), "four-corners") for _ in range(6)]
        barrier = threading.Barrier(8)
        outcomes: list[int] = []
        errors: list[BaseException] = []

        def worker(number: int):
            try:
                client = app.test_client()
                barrier.wait()
                for _ in range(5):
                    create(client, "clock")
                for game, token, _response in shared:
                    outcomes.append(play(client, game["id"], token,
                                         {"type": "resign"}).status_code)
                response = client.post("/v1/games", json={"variant": "salic-law"},
                                       headers={"Idempotency-Key": "one-create"})
                assert response.status_code == 201
            except BaseException as error:  # reported below
                errors.append(error)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(50)
        assert errors == []
        assert sorted(set(outcomes)) == [200, 422]
        assert outcomes.count(200) == len(shared)  # one resign per game won the race
        stats = _stats(app.test_client())
        assert stats["clock"] == dict(ZERO, created=40)
        assert stats["four-corners"] == {"created": 6, "won": 0, "lost": 0, "resigned": 6,
                                         "win_rate": 0.0}
        assert stats["salic-law"] == dict(ZERO, created=1)  # one key, one game
        assert app.statuses.count(500) == 0
    finally:
        close_app(app)
