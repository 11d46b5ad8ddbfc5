"""The projection of owned games onto their players' keys, exactly once
(docs/players.md): an event applied twice counts once; one that a failure left in its
game's outbox (the player's write failed, or never came) is applied by the sweeper,
once; a create is answered only once its player's list has it, and its retry with the
same Idempotency-Key finishes it; streaks come out right when results land out of order.
On one Redis and on the Redis Cluster (a game's keys and its player's are in different
slots there)."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest

from service.engine import variants
from service.game.pipeline import CREATED, DELETED, ENDED
from service.solver.worker import Worker
from service.storage import keys
from service.storage.game_store import StorageUnavailable
from tests.api.test_players import my_stats, new_game, register, resign, walk

pytestmark = pytest.mark.cluster


def _failing(*_args, **_kwargs):
    raise StorageUnavailable("the player's shard is down")


def _outbox(app, game_id: str) -> dict:
    return app.services.store.outbox(game_id)


def test_an_event_applied_twice_counts_once(app, client):
    _, token = register(client)
    game = new_game(client, token)
    resign(client, game["id"], token)
    assert my_stats(client, token)["clock"]["resigned"] == 1
    # The same event again, as the sweeper or a retry would bring it.
    players = app.services.players.store
    player = app.services.players.identify(token).player
    summary = b'{"id":"%s"}' % game["id"].encode()
    for _ in range(2):
        outcome = players.project(player, game["id"], ENDED, summary, variant="clock",
                                  status="resigned", moves=1, ended_ms=1, win_ms=None)
        assert outcome == "done"
    clock = my_stats(client, token)["clock"]
    assert (clock["played"], clock["resigned"], clock["in_play"]) == (1, 1, 0)
    assert app.services.projector.sweep() == 0


def follows_the_list(redis_db, player: str) -> dict[str, list[str]]:
    """Assert that every index of the player holds the games of the list that match it,
    with their places in the list, and nothing else; answer each index's ids, newest
    first."""
    places = dict(redis_db.zrange(keys.player_games(player), 0, -1, withscores=True))
    summaries = {name: orjson.loads(value) for name, value
                 in redis_db.hgetall(keys.player_summaries(player)).items()}
    assert set(places) == set(summaries)
    found = {}
    for variant in [None, *(variant.id for variant in variants())]:
        for status in [None, *keys.GAME_STATUSES]:
            if variant is None and status is None:
                continue
            name = keys.player_index(player, variant, status)
            expected = {game_id: place for game_id, place in places.items()
                        if variant in (None, summaries[game_id]["variant"])
                        and status in (None, summaries[game_id]["status"])}
            held = dict(redis_db.zrange(name, 0, -1, withscores=True))
            assert held == expected, name
            found[name] = [game_id.decode() for game_id in
                           sorted(held, key=held.__getitem__, reverse=True)]
    return found


def test_events_applied_twice_and_in_any_order_index_each_game_once(
        app, client, redis_db, monkeypatch):
    """The indexes are written by the script that writes the list, with the event's
    marker: an event applied again changes none of them, and events applied out of
    order leave them as the list."""
    player, token = register(client)
    projector, players = app.services.projector, app.services.players.store
    with monkeypatch.context() as patch:
        patch.setattr(projector, "apply", lambda *_args, **_kwargs: None)
        games = [new_game(client, token, variant)
                 for variant in ("clock", "salic-law", "four-corners", "clock")]
        for game in games[:3]:
            resign(client, game["id"], token)
        assert client.delete(f"/v1/games/{games[2]['id']}",
                             headers={"Authorization": f"Bearer {token}"}).status_code == 204
    outboxes = {game["id"]: _outbox(app, game["id"]) for game in games}
    # Each game's events in reverse (deleted, ended, created), each twice.
    for game_id, events in outboxes.items():
        for event in sorted(events, key=[DELETED, ENDED, CREATED].index):
            data = orjson.loads(events[event])
            outcomes = [players.project(
                player["id"], game_id, event, orjson.dumps(data["summary"]),
                variant=data["variant"], status=data["status"], moves=data["moves"],
                ended_ms=data["ended_ms"], win_ms=data["win_ms"],
                created_ms=data["created_ms"]) for _ in range(2)]
            assert outcomes == ["applied", "done"]
    once = follows_the_list(redis_db, player["id"])
    # The sweeper brings them all again: nothing changes.
    assert projector.sweep() == 8
    assert follows_the_list(redis_db, player["id"]) == once
    ids = [game["id"] for game in games]
    # The game deleted first never entered the list, nor an index; the game resigned
    # before it was created (in this order of events) is in the resigned indexes.
    assert once[keys.player_index(player["id"], status="resigned")] == [ids[1], ids[0]]
    assert once[keys.player_index(player["id"], status="playing")] == [ids[3]]
    assert once[keys.player_index(player["id"], "clock")] == [ids[3], ids[0]]
    assert once[keys.player_index(player["id"], "four-corners")] == []
    assert [item["id"] for item in walk(client, token, status="resigned")] == [ids[1], ids[0]]


def test_a_list_written_before_its_indexes_has_them_built_on_its_first_filtered_read(
        app, client, redis_db):
    player, token = register(client)
    games = [new_game(client, token, variant)["id"]
             for variant in ("clock", "salic-law", "clock")]
    resign(client, games[0], token)
    built = follows_the_list(redis_db, player["id"])
    # As a list written before the indexes: no marker, no index.
    redis_db.hdel(keys.player(player["id"]), keys.PLAYER_INDEXED)
    for name in built:
        redis_db.delete(name)
    assert [item["id"] for item in walk(client, token)] == games[::-1]  # needs none
    assert not redis_db.hexists(keys.player(player["id"]), keys.PLAYER_INDEXED)
    assert [item["id"] for item in walk(client, token, variant="clock", limit=1)] == \
        [games[2], games[0]]
    assert redis_db.hget(keys.player(player["id"]), keys.PLAYER_INDEXED) == b"1"
    assert follows_the_list(redis_db, player["id"]) == built
    # From then on the projection keeps them.
    resign(client, games[2], token)
    after = follows_the_list(redis_db, player["id"])
    assert after[keys.player_index(player["id"], "clock", "resigned")] == [games[2], games[0]]


def test_a_failed_projection_of_an_end_is_swept_once(app, client, monkeypatch):
    _, token = register(client)
    game = new_game(client, token)
    players = app.services.players.store
    with monkeypatch.context() as patch:
        patch.setattr(players, "run_calls", _failing)
        resign(client, game["id"], token)  # acknowledged with the game's write
    assert list(_outbox(app, game["id"])) == [ENDED]
    assert app.services.store.pending_outboxes() == [game["id"]]
    assert my_stats(client, token)["clock"]["resigned"] == 0
    assert walk(client, token)[0]["status"] == "playing"
    assert app.services.projector.sweep() == 1
    assert app.services.projector.sweep() == 0
    assert _outbox(app, game["id"]) == {}
    assert app.services.store.pending_outboxes() == []
    clock = my_stats(client, token)["clock"]
    assert (clock["played"], clock["resigned"], clock["in_play"]) == (1, 1, 0)
    assert walk(client, token)[0]["status"] == "resigned"


def test_an_interrupted_projection_is_finished_by_the_sweeper_exactly_once(
        app, client, monkeypatch):
    """The game's write stored (with its outbox entry), then the process died before the
    player's write: nothing applied.  The sweeper applies it; run again, nothing more."""
    _, token = register(client)
    projector = app.services.projector
    with monkeypatch.context() as patch:
        patch.setattr(projector, "apply", lambda *_args, **_kwargs: None)
        game = new_game(client, token)
        resign(client, game["id"], token)
    assert sorted(_outbox(app, game["id"])) == ["created", "ended"]
    assert walk(client, token) == []
    assert projector.sweep() == 2
    for _ in range(3):
        assert projector.sweep() == 0
    games = walk(client, token)
    assert [(item["id"], item["status"]) for item in games] == [(game["id"], "resigned")]
    clock = my_stats(client, token)["clock"]
    assert (clock["played"], clock["resigned"], clock["in_play"]) == (1, 1, 0)


def test_a_create_is_answered_once_its_player_has_it(app, client, monkeypatch):
    _, token = register(client)
    players = app.services.players.store
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "new-1"}
    body = {"variant": "clock", "seed": 3}
    with monkeypatch.context() as patch:
        patch.setattr(players, "run_calls", _failing)
        refused = client.post("/v1/games", json=body, headers=headers)
    assert refused.status_code == 503
    assert refused.headers["Retry-After"]
    assert walk(client, token) == []
    first = client.post("/v1/games", json=body, headers=headers)
    assert first.status_code == 201
    game = first.get_json()["game"]
    assert [item["id"] for item in walk(client, token)] == [game["id"]]
    again = client.post("/v1/games", json=body, headers=headers)
    assert again.get_data() == first.get_data()
    assert app.services.projector.sweep() == 0
    assert my_stats(client, token)["clock"]["in_play"] == 1
    # The first answer is the player's only.
    _, other = register(client, "Other")
    stolen = client.post("/v1/games", json=body,
                         headers={"Authorization": f"Bearer {other}",
                                  "Idempotency-Key": "new-1"})
    assert stolen.status_code == 403


def test_events_swept_in_any_order_give_the_same_figures(app, client, monkeypatch):
    _, token = register(client)
    projector = app.services.projector
    with monkeypatch.context() as patch:
        patch.setattr(projector, "apply", lambda *_args, **_kwargs: None)
        games = [new_game(client, token) for _ in range(3)]
        for game in games[:2]:
            resign(client, game["id"], token)
        assert client.delete(f"/v1/games/{games[1]['id']}",
                             headers={"Authorization": f"Bearer {token}"}).status_code == 204
    assert projector.sweep() == 6  # 3 created, 2 ended, 1 deleted
    assert [item["id"] for item in walk(client, token)] == [games[2]["id"], games[0]["id"]]
    clock = my_stats(client, token)["clock"]
    assert (clock["played"], clock["resigned"], clock["in_play"]) == (2, 2, 1)


def test_streaks_follow_the_end_times_even_when_results_land_late(app, client):
    _, token = register(client)
    player = app.services.players.identify(token).player
    players = app.services.players.store

    def land(game_id: str, status: str, at: int):
        outcome = players.project(player, game_id, ENDED, b'{"status":"%s"}' % status.encode(),
                                  variant="clock", status=status, moves=10, ended_ms=at,
                                  win_ms=5 if status == "won" else None)
        assert outcome == "applied"

    def streaks():
        clock = my_stats(client, token)["clock"]
        return clock["current_streak"], clock["longest_streak"]

    land("a", "won", 1000)
    land("b", "won", 3000)
    assert streaks() == (2, 2)
    land("c", "lost", 2000)  # late: between the two wins
    assert streaks() == (1, 1)
    land("d", "won", 500)  # late: before them all
    assert streaks() == (1, 2)
    land("e", "won", 4000)
    assert streaks() == (2, 2)
    land("f", "won", 5000)
    assert streaks() == (3, 3)
    stats = my_stats(client, token)["clock"]
    assert (stats["won"], stats["lost"], stats["fewest_moves"], stats["fastest_win_ms"]) == \
        (5, 1, 10, 5)


def test_the_worker_sweeps_the_outboxes(app, client, monkeypatch):
    _, token = register(client)
    projector = app.services.projector
    with monkeypatch.context() as patch:
        patch.setattr(projector, "apply", lambda *_args, **_kwargs: None)
        game = new_game(client, token)
    analyses = SimpleNamespace(
        store=SimpleNamespace(next_analysis=lambda: None),
        settings=SimpleNamespace(pool={}, cpu_share=0.02, deal_seconds=1.0))
    worker = Worker(analyses, projector)
    assert worker.step() == "sweep"
    assert [item["id"] for item in walk(client, token)] == [game["id"]]


def test_an_erased_player_s_pending_events_detach_their_games(app, client, redis_db,
                                                              monkeypatch):
    _, token = register(client)
    projector = app.services.projector
    with monkeypatch.context() as patch:
        patch.setattr(projector, "apply", lambda *_args, **_kwargs: None)
        game = new_game(client, token)
    assert client.delete("/v1/players/me", headers={"Authorization": f"Bearer {token}"}) \
        .status_code == 204
    assert projector.sweep() == 1
    assert projector.sweep() == 0
    version, record = redis_db.hmget(keys.game(game["id"]), keys.VERSION, keys.RECORD)
    assert b'"owner"' not in record
    assert int(version) == 0
    assert redis_db.keys("player:*") == []
