"""A ranked game's end reaches its day's board exactly once when the board's master
dies between the game's write and the board's (docs/daily.md, "Exactly once, across
slots"): on a Redis Cluster of its own (three masters, two replicas each: a promoted
replica still has one to confirm writes), the master of ``{daily:clock}`` is killed and
left down; the move that ends the game is answered, its ``ranked-ended`` event waits in
the game's outbox, and once a replica took the board's slots over the sweeper writes the
entry, once."""

from __future__ import annotations

import time

import pytest
from redis.crc import key_slot

from devtools.redis_server import LocalCluster
from service.app import close_app
from service.game.pipeline import RANKED_ENDED
from service.storage import keys
from service.storage.game_store import StorageUnavailable
from tests.api.support import auth, make_app, play


@pytest.mark.timeout(120)
def test_the_board_s_master_dies_between_the_game_s_write_and_the_board_s(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", masters=3, replicas=2, node_timeout_ms=1000)
    with cluster:
        app = make_app(cluster.url, DAILY_ACCOUNT_RULE="any", WINNABLE_SEARCH_SECONDS=0)
        try:
            _run(app, cluster)
        finally:
            close_app(app)
        assert 500 not in app.statuses


def _run(app, cluster):
    client = app.test_client()
    board_key = keys.daily("clock", "x")
    board_master = cluster.node_of_slot(key_slot(board_key.encode()))
    app.services.solver_store.add_seed("clock", 42)
    # A player whose game and own keys are on other masters than the board's.
    for number in range(30):
        response = client.post("/v1/players", json={"name": f"P{number}"})
        player, token = response.get_json()["player"]["id"], response.get_json()["player_token"]
        if cluster.node_of_slot(key_slot(keys.player(player).encode())) is board_master:
            continue
        day = client.get("/v1/daily").get_json()["day"]
        made = client.post(f"/v1/daily/clock/{day}", headers=auth(token))
        assert made.status_code == 201, made.get_data(as_text=True)
        game = made.get_json()["game"]
        if cluster.node_of_slot(key_slot(keys.game(game["id"]).encode())) is not board_master:
            break
    else:
        pytest.fail("no player's game and keys landed off the board's master")
    board_master.kill()  # and left down
    ended = play(client, game["id"], token, {"type": "resign"})
    assert ended.status_code == 200, ended.get_data(as_text=True)
    result = ended.get_json()["game"]["ranked"]["result"]
    assert RANKED_ENDED in app.services.store.outbox(game["id"])
    # The board's slot fails over to a replica; the sweeper then writes the entry, once.
    deadline, applied = time.monotonic() + 30, None
    while time.monotonic() < deadline:
        try:
            applied = app.services.projector.sweep()
            break
        except StorageUnavailable:
            time.sleep(0.2)
    assert applied is not None, "the board's slot never came back"
    assert applied >= 1
    assert app.services.projector.sweep() == 0
    assert app.services.store.outbox(game["id"]) == {}
    page = client.get(f"/v1/daily/clock/{day}/board").get_json()
    assert [(entry["game_id"], entry["score"]) for entry in page["entries"]] == \
        [(game["id"], result["score"])]
    assert page["count"] == 1
