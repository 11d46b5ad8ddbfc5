"""End to end on the session's Redis Cluster (3 masters, 3 replicas): two gunicorn
servers of the service (the command of `make run`) in front of it.

- whole games played with every request alternating between the two servers, with
  idempotent retries sent to the other one;
- If-Match writes racing on both servers at once: exactly one wins;
- a stream opened on one server sees every move made through the other, in order;
- a game's slot migrated to another master while it is being played (MOVED, ASK and
  TRYAGAIN along the way): every move is answered 200 and applied once.
"""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from redis.crc import key_slot

from devtools.launch import new_secret_key
from tests.e2e.support import Gunicorn
from tests.e2e.test_events_e2e import Follower

STREAM = {"Accept": "text/event-stream"}


@pytest.fixture(scope="module")
def servers(redis_cluster, tmp_path_factory):
    """Two servers (one worker each) on the cluster: their base URLs."""
    logs = tmp_path_factory.mktemp("gunicorn-cluster")
    # A hint only picks the whole games' next move here: a short search (its fallback,
    # the rules of thumb, picks one when it finds no win in time) plays them 4x sooner.
    shared = {"WEB_CONCURRENCY": "1", "SSE_HEARTBEAT_SECONDS": "0.5", "HINT_SECONDS": "0.05",
              "SECRET_KEY": new_secret_key()}  # replicas share their server key
    with Gunicorn(redis_cluster.url, logs / "a.log", **shared) as first, \
            Gunicorn(redis_cluster.url, logs / "b.log", **shared) as second:
        yield first.base, second.base


@pytest.fixture
def cluster_db(redis_cluster):
    redis_cluster.flushall()
    from tests.conftest import cluster_client

    client = cluster_client(redis_cluster)
    yield client
    client.close()


def _auth(token: str, **headers: str) -> dict:
    return {"Authorization": f"Bearer {token}", **headers}


def _create(base: str, variant: str, **fields) -> tuple[str, str]:
    answer = requests.post(f"{base}/v1/games", json={"variant": variant, **fields}, timeout=5)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body["game"]["id"], body["player_token"]


def _next_move(base: str, game_id: str) -> dict:
    """The hint's move if there is one, else the first listed move (no resign)."""
    hint = requests.get(f"{base}/v1/games/{game_id}/hint", timeout=5)
    assert hint.status_code == 200, hint.text
    if hint.json()["move"] is not None:
        return {key: value for key, value in hint.json()["move"].items() if key != "card"}
    listed = requests.get(f"{base}/v1/games/{game_id}/moves", timeout=5)
    assert listed.status_code == 200, listed.text
    move = listed.json()["moves"][0]
    return {key: value for key, value in move.items() if key != "card"}


def _stored_version(db, game_id: str) -> int:
    return int(db.hget(f"game:{{{game_id}}}", "v"))


@pytest.mark.timeout(120)
def test_whole_games_alternate_between_servers(servers, cluster_db):
    ends = {}
    for variant, seed in (("clock", 3), ("salic-law", 11)):
        game_id, token = _create(servers[0], variant, seed=seed)
        turn = itertools.cycle(servers)
        version = 0
        for number in itertools.count():
            base = next(turn)
            move = _next_move(base, game_id) if number < 300 else {"type": "resign"}
            key = f"{game_id}-{number}"
            answer = requests.post(f"{base}/v1/games/{game_id}/moves", json=move,
                                   headers=_auth(token, **{"Idempotency-Key": key,
                                                           "If-Match": f'"{version}"'}),
                                   timeout=5)
            assert answer.status_code == 200, (move, answer.text)
            # The retry, through the other server, answers the same and applies nothing.
            again = requests.post(f"{next(turn)}/v1/games/{game_id}/moves", json=move,
                                  headers=_auth(token, **{"Idempotency-Key": key,
                                                          "If-Match": f'"{version}"'}),
                                  timeout=5)
            assert again.status_code == 200
            assert again.content == answer.content
            game = answer.json()["game"]
            assert game["version"] == version + 1
            version = game["version"]
            if game["status"] != "playing":
                break
        assert _stored_version(cluster_db, game_id) == version
        history = requests.get(f"{servers[1]}/v1/games/{game_id}/history", timeout=5).json()
        assert [entry["version"] for entry in history["moves"]] == list(range(1, version + 1))
        ends[variant] = game["status"]
    stats = {row["variant"]: row for row in
             requests.get(f"{servers[0]}/v1/stats", timeout=5).json()["variants"]}
    for variant, status in ends.items():
        assert stats[variant]["created"] == 1
        assert stats[variant][status] == 1


@pytest.mark.timeout(60)
def test_racing_if_match_writes_on_both_servers_one_wins(servers, cluster_db):
    game_id, token = _create(servers[0], "salic-law", seed=8)
    barrier = threading.Barrier(2)

    def send(base: str, version: int):
        barrier.wait()
        return requests.post(f"{base}/v1/games/{game_id}/moves", json={"type": "deal"},
                             headers=_auth(token, **{"If-Match": f'"{version}"'}), timeout=5)

    with ThreadPoolExecutor(2) as pool:
        for version in range(5):
            answers = list(pool.map(send, servers, [version, version]))
            assert sorted(answer.status_code for answer in answers) == [200, 412]
            loser = next(answer for answer in answers if answer.status_code == 412)
            assert loser.json()["code"] == "version_mismatch"
    assert _stored_version(cluster_db, game_id) == 5


@pytest.mark.timeout(60)
def test_a_stream_on_one_server_sees_every_move_made_on_the_other(servers, cluster_db):
    game_id, token = _create(servers[0], "salic-law", seed=42, undo="full")
    follower = Follower(f"{servers[1]}/v1/games/{game_id}/events")
    follower.start()
    assert follower.opened.wait(10)
    url = f"{servers[0]}/v1/games/{game_id}"
    with requests.Session() as session:
        for _ in range(12):
            assert session.post(f"{url}/moves", json={"type": "deal"}, headers=_auth(token),
                                timeout=5).status_code == 200
        assert session.post(f"{url}/undo", headers=_auth(token), timeout=5).status_code == 200
        deadline = time.monotonic() + 10
        while len(follower.events()) < 13 and time.monotonic() < deadline:
            time.sleep(0.05)
        feed = session.get(f"{url}/events?after=0", timeout=5).json()["events"]
        assert [m.json() for m in follower.events()] == feed
        assert [m.id for m in follower.events()] == [str(v) for v in range(1, 14)]
        assert session.delete(url, headers=_auth(token), timeout=5).status_code == 204
    follower.join(10)
    assert follower.error is None, repr(follower.error)
    assert follower.events()[-1].event == "deleted"


def _migrate(nodes, slot: int, pause: float, to_port: int | None = None) -> tuple[int, int]:
    """Move ``slot`` to another master (the one on ``to_port`` if given) as
    ``redis-cli --cluster reshard`` does, pausing ``pause`` seconds once the slot is
    marked as migrating; (source port, target port)."""
    source = nodes.node_of_slot(slot)
    target = next(node for node in nodes.masters() if node is not source
                  and to_port in (None, node.port))
    clients = {node.port: nodes.client(node) for node in nodes.masters()}
    try:
        source_id = clients[source.port].execute_command("CLUSTER", "MYID").decode()
        target_id = clients[target.port].execute_command("CLUSTER", "MYID").decode()
        clients[target.port].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        clients[source.port].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        # Until its keys have moved, a write that creates a key (an idempotency record)
        # is sent on to the target (ASK), which answers TRYAGAIN: the game's hash is
        # still on the source.
        time.sleep(pause)
        while True:  # ten keys at a time, as redis-cli does
            keys = clients[source.port].execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10)
            if not keys:
                break
            clients[source.port].execute_command("MIGRATE", target.host, target.port, "", 0,
                                                 5000, "KEYS", *keys)
        for port in (target.port, source.port, *clients):
            clients[port].execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    finally:
        for client in clients.values():
            client.close()
    return source.port, target.port


@pytest.mark.timeout(90)
def test_a_game_keeps_being_played_while_its_slot_migrates(servers, redis_cluster,
                                                           cluster_db):
    game_id, token = _create(servers[0], "salic-law", seed=42, undo="full")
    slot = key_slot(f"game:{{{game_id}}}".encode())
    statuses: list[int] = []
    stop = threading.Event()

    def play():
        """Deal, undo, deal, undo... each through the other server, each keyed."""
        turn = itertools.cycle(servers)
        for number in range(400):
            if stop.is_set():
                break
            base = next(turn)
            path = "moves" if number % 2 == 0 else "undo"
            answer = requests.post(
                f"{base}/v1/games/{game_id}/{path}",
                json={"type": "deal"} if path == "moves" else None,
                headers=_auth(token, **{"Idempotency-Key": f"w-{number}"}), timeout=5)
            statuses.append(answer.status_code)
            statuses.append(requests.get(f"{base}/v1/games/{game_id}", timeout=5).status_code)

    player = threading.Thread(target=play)
    player.start()
    try:
        time.sleep(0.3)
        source, target = _migrate(redis_cluster, slot, pause=0.15)
        time.sleep(0.3)
        moved_back = _migrate(redis_cluster, slot, pause=0.15, to_port=source)
        time.sleep(0.2)
        deadline = time.monotonic() + 20  # a few writes more, however slow the machine
        while len(statuses) < 2 * 11 and player.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        player.join(30)
    assert moved_back == (target, source)
    assert redis_cluster.node_of_slot(slot).port == source
    assert set(statuses) == {200}, statuses
    writes = len(statuses) // 2
    assert writes > 10
    # Every acknowledged deal and undo applied once: the version counts them all.
    assert _stored_version(cluster_db, game_id) == writes
