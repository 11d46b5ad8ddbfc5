"""Writes confirmed by replicas (REDIS_WAIT_REPLICAS): a write the replicas do not
confirm in time answers 503 with Retry-After although the master applied it; its retry
with the same Idempotency-Key answers the first answer once a replica has it, and never
applies the write twice.  On one Redis with a replica started and stopped by the test."""

from __future__ import annotations

import time

import pytest
import redis

from devtools.redis_server import RedisServer
from service.app import close_app
from service.storage import keys
from service.storage.backend import Script
from service.storage.game_store import confirmed
from tests.api.support import auth, make_app, stored


def _wait_for(condition, what: str, seconds: float = 10):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def master(tmp_path):
    server = RedisServer(tmp_path / "master").start()
    server.replicas = []
    yield server
    for replica in server.replicas:
        replica.kill()
    server.stop()


def _replica(master: RedisServer, folder) -> RedisServer:
    replica = RedisServer(folder, appendonly=False,
                          extra_args=("--replicaof", master.host, str(master.port)))
    master.replicas.append(replica)
    replica.start()
    with master.client() as client:
        _wait_for(lambda: client.info("replication")["connected_slaves"] == 1
                  and client.info("replication")["slave0"]["state"] == "online",
                  "the replica did not come online")
    return replica


def _problem(response, status, code):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.get_json()["code"] == code
    return response.get_json()


@pytest.mark.timeout(60)
def test_an_unconfirmed_write_is_503_and_its_retry_replays_once_confirmed(master, tmp_path):
    app = make_app(master.url, REDIS_WAIT_REPLICAS=1, REDIS_WAIT_TIMEOUT_MS=500)
    client = app.test_client()
    db = master.client()
    try:
        # No replica: the create's claim of an id is on the master only, so it stops
        # there, unacknowledged, before the game is stored.
        create = {"variant": "salic-law", "seed": 3, "undo": "full"}
        refused = client.post("/v1/games", json=create, headers={"Idempotency-Key": "c"})
        _problem(refused, 503, "storage_unavailable")
        assert refused.headers["Retry-After"] == "1"
        claimed = db.get(keys.create_target("c"))
        assert claimed is not None
        assert db.keys("game:{*}") == []
        # Still no replica: the retry finds the record but cannot confirm it either.
        _problem(client.post("/v1/games", json=create, headers={"Idempotency-Key": "c"}),
                 503, "storage_unavailable")

        replica = _replica(master, tmp_path / "replica")
        created = client.post("/v1/games", json=create, headers={"Idempotency-Key": "c"})
        assert created.status_code == 201, created.get_data(as_text=True)
        game_id, token = created.get_json()["game"]["id"], created.get_json()["player_token"]
        assert game_id.encode() == claimed  # the id the first request claimed
        assert db.keys("game:{*}") == [keys.game(game_id).encode()]  # one game
        assert stored(db, game_id)[0] == 0
        with replica.client() as copy:
            assert copy.hget(f"game:{{{game_id}}}", "v") == b"0"

        deal = {"type": "deal"}
        headers = auth(token, Idempotency_Key="d-1")
        first = client.post(f"/v1/games/{game_id}/moves", json=deal, headers=headers)
        assert first.status_code == 200

        replica.kill()  # the next write reaches the master only
        _wait_for(lambda: db.info("replication")["connected_slaves"] == 0, "replica gone")
        headers = auth(token, Idempotency_Key="d-2")
        _problem(client.post(f"/v1/games/{game_id}/moves", json=deal, headers=headers),
                 503, "storage_unavailable")
        assert stored(db, game_id)[0] == 2  # applied on the master
        _problem(client.post(f"/v1/games/{game_id}/moves", json=deal, headers=headers),
                 503, "storage_unavailable")

        replica = _replica(master, tmp_path / "replica")
        again = client.post(f"/v1/games/{game_id}/moves", json=deal, headers=headers)
        assert again.status_code == 200, again.get_data(as_text=True)
        assert again.get_json()["game"]["version"] == 2
        assert stored(db, game_id)[0] == 2  # not applied twice
        assert client.post(f"/v1/games/{game_id}/moves", json=deal,
                           headers=headers).get_data() == again.get_data()
        with replica.client() as copy:
            assert copy.hget(f"game:{{{game_id}}}", "v") == b"2"
        replica.kill()
        assert 500 not in app.statuses
    finally:
        db.close()
        close_app(app)


def test_without_confirmation_writes_do_not_wait(master):
    app = make_app(master.url)  # one Redis: REDIS_WAIT_REPLICAS defaults to 0
    try:
        assert app.services.store.wait_replicas == 0
        created = app.test_client().post("/v1/games", json={"variant": "clock"})
        assert created.status_code == 201
    finally:
        close_app(app)


def test_a_write_waits_out_the_whole_wait_however_short_the_socket_s_timeout(master):
    """The replicas' confirmation has its own time (``REDIS_WAIT_TIMEOUT_MS``), beyond
    the socket's (``REDIS_SOCKET_TIMEOUT``, what any other command may take): a write is
    refused for want of the replicas, never cut short by the socket."""
    app = make_app(master.url, REDIS_WAIT_REPLICAS=1, REDIS_WAIT_TIMEOUT_MS=2000,
                   REDIS_SOCKET_TIMEOUT=0.5)
    db = master.client()
    try:
        started = time.monotonic()
        refused = app.test_client().post("/v1/games", json={"variant": "clock"},
                                         headers={"Idempotency-Key": "w"})
        assert time.monotonic() - started >= 2.0
        _problem(refused, 503, "storage_unavailable")
        assert db.get(keys.create_target("w")) is not None  # the write the WAIT followed
        assert 500 not in app.statuses
    finally:
        db.close()
        close_app(app)


def test_a_stalled_master_is_found_out_within_the_socket_s_timeout(master):
    """Only the WAIT's reply has the WAIT's time: a write's own reply comes at once from
    a master that works, so a master that answers nothing (SIGSTOP, a host gone without
    closing its connections) is found out within the socket's timeout, not the WAIT's."""
    app = make_app(master.url, REDIS_WAIT_REPLICAS=1, REDIS_WAIT_TIMEOUT_MS=5000,
                   REDIS_SOCKET_TIMEOUT=0.5)
    connections = app.services.backend.connections
    write = Script("return redis.call('INCR', KEYS[1])")
    try:
        assert connections.execute("PING")  # the connection made
        master.freeze()
        started = time.monotonic()
        with pytest.raises(redis.TimeoutError):
            confirmed(connections, write, ["n"], (), 1, 5000)
        assert time.monotonic() - started < 4.0  # 5.5 s were it read with the WAIT's time
    finally:
        close_app(app)
