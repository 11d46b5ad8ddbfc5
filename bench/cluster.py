"""``python -m bench cluster``: the service on a Redis Cluster against one Redis.

Two measurements, each on real processes started here (redis-server nodes of the
harness, gunicorn with the production config):

- the round (default): a move (``POST .../moves``) and a game read (``GET
  /v1/games/<id>``), one request at a time on one keep-alive connection, against one
  Redis, a Redis Cluster of 3 masters and 3 replicas with writes confirmed by a replica
  (``REDIS_WAIT_REPLICAS=1``, the default there), and the same cluster without
  confirmation; in turns, each ratio the median of the same-turn ratios;
- ``--failover``: games played by several clients while a master is killed (SIGKILL):
  moves acknowledged, moves lost, seconds of 503, for ``REDIS_WAIT_REPLICAS`` 1 and 0.
  :func:`failover` is also what ``tests/e2e/test_cluster_failover.py`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from service import launch
from service.redis_server import LocalCluster, RedisServer, free_port

HOST = "127.0.0.1"


class Server(launch.Gunicorn):
    """The service's gunicorn (:mod:`service.launch`, production config, ``workers``
    workers) on a free port with ``env``, ready once ``/readyz`` answers."""

    def __init__(self, redis_url: str, log: Path, *, workers: int = 1, threads: int = 8,
                 **env: str):
        self.port = free_port(HOST)
        environ = dict(os.environ, HOST=HOST, PORT=str(self.port), REDIS_URL=redis_url,
                       WEB_CONCURRENCY=str(workers), GUNICORN_THREADS=str(threads),
                       RATELIMIT_ENABLED="false", LOG_LEVEL="WARNING", **env)
        environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        super().__init__(environ, output=log, ready_path="/readyz", workers=workers)


class Http:
    """One keep-alive connection: ``call`` answers (status, headers, parsed body)."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.connection = http.client.HTTPConnection(HOST, port, timeout=timeout)

    def __enter__(self) -> Http:
        return self

    def __exit__(self, *_exc_info) -> None:
        self.connection.close()

    def call(self, method: str, path: str, body=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        headers = dict(headers or {})
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            self.connection.request(method, path, body=data, headers=headers)
            response = self.connection.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()  # the next call reconnects
            raise
        parsed = json.loads(raw) if raw and raw[:1] in (b"{", b"[") else None
        return response.status, dict(response.getheaders()), parsed


# --- the round ------------------------------------------------------------------------
def _timed(client: Http, requests: list[tuple], expect: int) -> list[float]:
    seconds = []
    for method, path, body, headers in requests:
        started = time.perf_counter()
        status, _headers, answer = client.call(method, path, body, headers)
        seconds.append(time.perf_counter() - started)
        if status != expect:
            raise RuntimeError(f"{method} {path}: {status} {answer}")
    return seconds


def _deals(client: Http, games: int) -> list[tuple]:
    """``games`` new Salic Law games' 22 deals each, as requests."""
    found = []
    for _ in range(games):
        status, _headers, body = client.call("POST", "/v1/games",
                                             {"variant": "salic-law", "undo": "off"})
        assert status == 201, body
        path = f"/v1/games/{body['game']['id']}/moves"
        auth = {"Authorization": f"Bearer {body['player_token']}"}
        found += [("POST", path, {"type": "deal"}, auth)] * 22
    return found


def run_round(turns: int = 3, requests: int = 200) -> dict:
    """Median latencies (ms) of a move and a read per backend, and the ratios."""
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as folder:
        work = Path(folder)
        single = RedisServer(work / "redis", appendfsync="everysec").start()
        nodes = LocalCluster(work / "cluster", appendfsync="everysec")
        try:
            nodes.start()
            backends = {"one Redis": (single.url, {}),
                        "cluster, WAIT 1": (nodes.url, {"REDIS_WAIT_REPLICAS": "1"}),
                        "cluster, WAIT 0": (nodes.url, {"REDIS_WAIT_REPLICAS": "0"})}
            with contextlib.ExitStack() as stack:
                servers = {name: stack.enter_context(Server(url, work / f"{index}.log", **env))
                           for index, (name, (url, env)) in enumerate(backends.items())}
                return _measure_round(servers, turns, requests)
        finally:
            nodes.stop()
            single.stop()


def _measure_round(servers: dict[str, Server], turns: int, requests: int) -> dict:
    samples = {name: {"move": [], "read": []} for name in servers}
    ratios = {name: {"move": [], "read": []} for name in servers}
    for _turn in range(turns):
        medians = {}
        for name, server in servers.items():
            with Http(server.port) as client:
                moves = _deals(client, requests // 22 + 1)[:requests]
                reads = [("GET", path.removesuffix("/moves"), None, {})
                         for _method, path, _body, _auth in moves]
                _timed(client, reads[:20], 200)  # warm up the connections
                move = _timed(client, moves, 200)
                read = _timed(client, reads, 200)
            samples[name]["move"] += move
            samples[name]["read"] += read
            medians[name] = {"move": statistics.median(move), "read": statistics.median(read)}
        for name in servers:
            for kind in ("move", "read"):
                ratios[name][kind].append(medians[name][kind] / medians["one Redis"][kind])
    return {name: {kind: {"median_ms": statistics.median(values) * 1000,
                          "p99_ms": _p99(values) * 1000,
                          "ratio": statistics.median(ratios[name][kind])}
                   for kind, values in kinds.items()}
            for name, kinds in samples.items()}


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


# --- failover -------------------------------------------------------------------------
@dataclass
class Failover:
    """What the clients saw while a master was killed and its replica took over."""

    wait_replicas: int
    acknowledged: int = 0  # writes answered 200
    lost: int = 0  # acknowledged writes missing from the cluster afterwards
    extra: int = 0  # writes in the cluster that no client saw acknowledged
    unavailable: int = 0  # answers 503
    without_retry_after: int = 0  # 503 answers without Retry-After
    other: dict[int, int] = field(default_factory=dict)  # any other status: count
    first_503: float | None = None
    last_503: float | None = None
    promoted_after: float = 0.0  # seconds from the kill to the replica's promotion
    games_hit: int = 0  # games on the killed master's slots

    @property
    def seconds_of_503(self) -> float:
        if self.first_503 is None:
            return 0.0
        return self.last_503 - self.first_503

    def summary(self) -> str:
        return (f"REDIS_WAIT_REPLICAS={self.wait_replicas}: {self.acknowledged} moves "
                f"acknowledged, {self.lost} lost, {self.extra} applied unacknowledged; "
                f"503 answers {self.unavailable} over {self.seconds_of_503:.2f} s "
                f"(replica promoted {self.promoted_after:.2f} s after the kill; "
                f"{self.games_hit} of the games on the killed master); "
                f"other statuses {self.other or 'none'}")


class _Player(threading.Thread):
    """Plays its games in turn, deal and undo alternately, every write with its own
    Idempotency-Key; a 503 is sent again (same key) until it is answered."""

    def __init__(self, port: int, games: list[tuple[str, str]], result: Failover,
                 lock: threading.Lock, stop: threading.Event, pause: float):
        super().__init__(daemon=True)
        self.port, self.games, self.result, self.lock = port, games, result, lock
        self.stop, self.pause = stop, pause
        self.acknowledged = {game_id: 0 for game_id, _token in games}
        self.error: BaseException | None = None

    def run(self):
        try:
            with Http(self.port, timeout=10) as client:
                number = 0
                while not self.stop.is_set():
                    for game_id, token in self.games:
                        self._write(client, game_id, token, number)
                    number += 1
        except BaseException as error:  # the caller reports it
            self.error = error

    def _write(self, client: Http, game_id: str, token: str, number: int) -> None:
        path = f"/v1/games/{game_id}/" + ("moves" if number % 2 == 0 else "undo")
        body = {"type": "deal"} if number % 2 == 0 else None
        headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": f"{number}"}
        while True:
            try:
                status, answer_headers, _answer = client.call("POST", path, body, headers)
            except (OSError, http.client.HTTPException):
                status, answer_headers = 0, {}
            now = time.monotonic()
            with self.lock:
                if status == 200:
                    self.result.acknowledged += 1
                    self.acknowledged[game_id] += 1
                    return
                if status == 503:
                    self.result.unavailable += 1
                    if "Retry-After" not in answer_headers:
                        self.result.without_retry_after += 1
                    if self.result.first_503 is None:
                        self.result.first_503 = now
                    self.result.last_503 = now
                else:
                    self.result.other[status] = self.result.other.get(status, 0) + 1
                    if status != 0:
                        return  # a refusal: nothing to retry
            # Retry-After says 1 s; the clients retry sooner to time the gap finely.
            time.sleep(self.pause)


def failover(work: Path, *, wait_replicas: int, games: int = 12, players: int = 4,
             before: float = 1.5, after: float = 1.5, node_timeout_ms: int = 1000,
             pause: float = 0.05) -> Failover:
    """Start a cluster (3+3) and a gunicorn; ``players`` clients play ``games`` games;
    after ``before`` seconds the master serving the first game is SIGKILLed; once its
    replica is promoted the killed node is started again (an orchestrator's restart:
    it comes back as a replica); play goes on until every game has been written again
    and ``after`` more seconds, then every game's stored version is compared with the
    writes its client saw acknowledged."""
    nodes = LocalCluster(work / "cluster", node_timeout_ms=node_timeout_ms)
    result = Failover(wait_replicas)
    nodes.start()
    try:
        with Server(nodes.url, work / f"failover-{wait_replicas}.log", threads=16,
                    REDIS_WAIT_REPLICAS=str(wait_replicas)) as server:
            made = []
            with Http(server.port) as client:
                for _ in range(games):
                    status, _headers, body = client.call(
                        "POST", "/v1/games", {"variant": "salic-law", "undo": "full"})
                    assert status == 201, body
                    made.append((body["game"]["id"], body["player_token"]))
            lock, stop = threading.Lock(), threading.Event()
            team = [_Player(server.port, made[index::players], result, lock, stop, pause)
                    for index in range(players)]
            for player in team:
                player.start()
            time.sleep(before)
            victim = nodes.node_of_slot(key_slot(f"game:{{{made[0][0]}}}".encode()))
            heir = nodes.replicas_of(victim)[0]
            result.games_hit = sum(
                nodes.node_of_slot(key_slot(f"game:{{{game_id}}}".encode())) is victim
                for game_id, _token in made)
            killed = time.monotonic()
            victim.kill()
            while nodes.role(heir) != "master":
                if time.monotonic() - killed > 30:
                    raise RuntimeError("the replica was not promoted within 30 s")
                time.sleep(0.02)
            result.promoted_after = time.monotonic() - killed
            victim.start()  # back as a replica of its heir
            nodes.wait_until_healthy(30)
            recovered = result.acknowledged
            deadline = time.monotonic() + 30
            while result.acknowledged < recovered + games * 2:
                if time.monotonic() > deadline:
                    raise RuntimeError("the service did not recover within 30 s")
                time.sleep(0.05)
            time.sleep(after)
            stop.set()
            for player in team:
                player.join(30)
                if player.error is not None:
                    raise player.error
        client = RedisCluster(startup_nodes=[ClusterNode(n.host, n.port) for n in nodes.nodes])
        try:
            for player in team:
                for game_id, acknowledged in player.acknowledged.items():
                    stored = int(client.hget(f"game:{{{game_id}}}", "v") or 0)
                    result.lost += max(0, acknowledged - stored)
                    result.extra += max(0, stored - acknowledged)
        finally:
            client.close()
    finally:
        nodes.stop()
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--failover", action="store_true",
                        help="kill a master while games are played (WAIT 1, then 0)")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200,
                        help="moves (and as many reads) per backend and turn")
    args = parser.parse_args(argv)
    if args.failover:
        for wait in (1, 0):
            with tempfile.TemporaryDirectory(prefix="bench-failover-") as folder:
                print(failover(Path(folder), wait_replicas=wait).summary(), flush=True)
        return 0
    results = run_round(args.turns, args.requests)
    print(f"one request at a time, {args.turns} turns of {args.requests} moves and "
          f"{args.requests} reads per backend (median ms, p99 ms, ratio to one Redis)")
    for name, kinds in results.items():
        cells = ", ".join(f"{kind} {value['median_ms']:.2f} / {value['p99_ms']:.2f} ms "
                          f"x{value['ratio']:.2f}" for kind, value in kinds.items())
        print(f"  {name:16} {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
