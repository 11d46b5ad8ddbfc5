"""``python -m bench cluster``: the service on a Redis Cluster against one Redis.

Two measurements, each on real processes started here (redis-server nodes of the
harness, gunicorn with the production config):

- the round (default): a move (``POST .../moves``) and a game read (``GET
  /v1/games/<id>``), one request at a time on one keep-alive connection, against one
  Redis, a Redis Cluster of 3 masters and 3 replicas with writes confirmed by a replica
  (``REDIS_WAIT_REPLICAS=1``, the default there), and the same cluster without
  confirmation; in turns, each ratio the median of the same-turn ratios;
- ``--failover``: games played, read and followed by clients while a master dies for
  good (killed, or frozen as a host that vanished): how long until the replica's
  promotion and until the lost shard's reads and writes are back, what the other
  shards' clients saw, moves lost or applied twice, whether the process stayed ready.
  :func:`failover` is also what ``tests/e2e/test_cluster_failover.py`` runs.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from devtools import launch
from devtools.redis_server import LocalCluster, RedisServer, free_port

HOST = "127.0.0.1"


class Server(launch.Gunicorn):
    """The service's gunicorn (:mod:`devtools.launch`, production config, ``workers``
    workers) on a free port with ``env``, ready once ``/readyz`` answers."""

    def __init__(self, redis_url: str, log: Path, *, workers: int = 1, threads: int = 8,
                 **env: str):
        self.port = free_port(HOST)
        environ = dict(os.environ, HOST=HOST, PORT=str(self.port), REDIS_URL=redis_url,
                       WEB_CONCURRENCY=str(workers), GUNICORN_THREADS=str(threads),
                       RATELIMIT_ENABLED="false", LOG_LEVEL="WARNING")
        environ.update(env)
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
    """What the clients saw while a master died for good and its replica took over."""

    wait_replicas: int
    replicas: int  # replicas per master
    fault: str  # "kill" (SIGKILL) or "freeze" (SIGSTOP): how the master died
    acknowledged: int = 0  # writes answered 200
    lost: int = 0  # acknowledged writes missing from the cluster afterwards
    extra: int = 0  # writes in the cluster that no client saw acknowledged
    unavailable: int = 0  # answers 503 (on the lost shard's games)
    without_retry_after: int = 0  # 503 answers without Retry-After
    other: dict[int, int] = field(default_factory=dict)  # the lost shard: other statuses
    healthy_requests: int = 0  # requests for games of the other shards
    healthy_failed: dict[int, int] = field(default_factory=dict)  # their non-200 answers
    healthy_reasons: dict[str, int] = field(default_factory=dict)  # ... by problem detail
    #: the server's log: why it answered 503 (a lost connection, a WAIT that fell short)
    logged_reasons: dict[str, int] = field(default_factory=dict)
    healthy_slowest: float = 0.0  # their slowest answer after the kill (s)
    promoted_after: float = 0.0  # seconds from the kill to the replica's promotion
    reads_back_after: float = 0.0  # from the promotion to the lost shard's reads back
    writes_back_after: float = 0.0  # ... and its writes back
    games_hit: int = 0  # games on the killed master's slots
    games: int = 0
    feed_gaps: int = 0  # followed games whose stream missed or repeated a version
    resumed: int = 0  # streams the followers opened again (Last-Event-ID)
    silent_streams: int = 0  # streams that went silent (the follower gave up on them)
    not_ready: dict[int, int] = field(default_factory=dict)  # /readyz: non-200 answers
    readyz_slowest: float = 0.0  # /readyz: its slowest answer (s)

    def summary(self) -> str:
        return (f"{self.replicas} replica(s) per master, REDIS_WAIT_REPLICAS="
                f"{self.wait_replicas}: a master {_FAULTS[self.fault]} for good; replica "
                f"promoted "
                f"{self.promoted_after:.2f} s after the kill; the lost shard's reads back "
                f"{self.reads_back_after:.2f} s and writes back {self.writes_back_after:.2f} s "
                f"after the promotion ({self.games_hit} of {self.games} games on it: "
                f"{self.unavailable} answers 503, {self.without_retry_after} of them without "
                f"Retry-After, other statuses {self.other or 'none'}); the other shards: "
                f"{self.healthy_requests} requests, failed {self.healthy_failed or 'none'}"
                f"{' ' + str(self.healthy_reasons) if self.healthy_reasons else ''}, "
                f"slowest {self.healthy_slowest * 1000:.0f} ms after the kill; "
                f"{self.acknowledged} moves acknowledged, {self.lost} lost, {self.extra} "
                f"applied unacknowledged; two games followed over SSE: {self.feed_gaps} "
                f"with a gap, {self.resumed} resumptions, {self.silent_streams} streams "
                f"silent for {SILENT:g} s; /readyz not ready {self.not_ready or 'never'}, slowest "
                f"{self.readyz_slowest * 1000:.0f} ms; the log's 503 reasons "
                f"{self.logged_reasons or 'none'}")


_FAULTS = {"kill": "SIGKILLed", "freeze": "frozen (SIGSTOP)"}


class _Game:
    """What one game's clients saw: answers as (seconds since the start, kind, status)."""

    def __init__(self, game_id: str, token: str, lost_shard: bool):
        self.game_id, self.token, self.lost_shard = game_id, token, lost_shard
        self.acknowledged = 0
        self.answers: list[tuple[float, str, int, float]] = []  # when, kind, status, took


class _Client(threading.Thread):
    """Plays (``kind`` "write": deal and undo alternately, each write with its own
    Idempotency-Key, sent again with the same key until answered 200) or reads (``kind``
    "read": ``GET /v1/games/<id>`` over and over) one game, every ``pause`` seconds."""

    def __init__(self, port: int, game: _Game, kind: str, result: Failover,
                 lock: threading.Lock, stop: threading.Event, pause: float, epoch: float):
        super().__init__(daemon=True)
        self.port, self.game, self.kind, self.result = port, game, kind, result
        self.lock, self.stop, self.pause, self.epoch = lock, stop, pause, epoch
        self.error: BaseException | None = None

    def run(self):
        try:
            with Http(self.port, timeout=10) as client:
                number = 0
                while not self.stop.is_set():
                    if self.kind == "read":
                        self._send(client, "GET", f"/v1/games/{self.game.game_id}", None, {})
                    else:
                        self._write(client, number)
                        number += 1
                    time.sleep(self.pause)
        except BaseException as error:  # the caller reports it
            self.error = error

    def _write(self, client: Http, number: int) -> None:
        path = f"/v1/games/{self.game.game_id}/" + ("moves" if number % 2 == 0 else "undo")
        body = {"type": "deal"} if number % 2 == 0 else None
        headers = {"Authorization": f"Bearer {self.game.token}",
                   "Idempotency-Key": f"{number}"}
        while True:
            status = self._send(client, "POST", path, body, headers)
            if status == 200:
                break
            if status not in (0, 503):
                return  # a refusal (counted as a failure): nothing to send again
            time.sleep(self.pause)
        with self.lock:
            self.game.acknowledged += 1
            self.result.acknowledged += 1

    def _send(self, client: Http, method: str, path: str, body, headers) -> int:
        """One request, recorded; its status (0: no answer)."""
        started = time.monotonic()
        try:
            status, answer_headers, answer = client.call(method, path, body, headers)
        except (OSError, http.client.HTTPException) as error:
            status, answer_headers, answer = 0, {}, {"detail": type(error).__name__}
        took = time.monotonic() - started
        with self.lock:
            self.game.answers.append((started - self.epoch, self.kind, status, took))
            if status != 200 and not self.game.lost_shard:
                reason = f"{status} {(answer or {}).get('detail', '')}"
                self.result.healthy_reasons[reason] = \
                    self.result.healthy_reasons.get(reason, 0) + 1
            if status == 503 and self.game.lost_shard:
                self.result.unavailable += 1
                if "Retry-After" not in answer_headers:
                    self.result.without_retry_after += 1
        return status


#: Seconds after which a follower gives up on a stream that sends nothing (the server
#: sends a heartbeat every second during a failover measurement).
SILENT = 10.0


class _Follower(threading.Thread):
    """Follows one game's events stream (Server-Sent Events), resuming with
    ``Last-Event-ID`` whenever the stream ends or breaks: the ids it got, in order."""

    def __init__(self, port: int, game_id: str, stop: threading.Event):
        super().__init__(daemon=True)
        self.port, self.game_id, self.stop = port, game_id, stop
        self.ids: list[int] = []
        self.streams = 0  # streams opened (1 + resumptions)
        self.silent = 0  # streams that sent nothing, not even a heartbeat, for SILENT s

    def run(self):
        while not self.stop.is_set():
            headers = {"Accept": "text/event-stream"}
            if self.ids:
                headers["Last-Event-ID"] = str(self.ids[-1])
            connection = http.client.HTTPConnection(HOST, self.port, timeout=SILENT)
            try:
                connection.request("GET", f"/v1/games/{self.game_id}/events", headers=headers)
                response = connection.getresponse()
                self.streams += 1
                if response.status != 200:
                    response.read()
                    time.sleep(0.1)
                    continue
                while not self.stop.is_set():
                    line = response.readline()
                    if not line:
                        break  # the stream ended: resume
                    if line.startswith(b"id:"):
                        self.ids.append(int(line[3:].strip()))
            except TimeoutError:
                self.silent += 1
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.1)
            finally:
                connection.close()


class _Prober(threading.Thread):
    """Asks ``GET /readyz`` every ``pause`` seconds, as a load balancer does: the
    statuses it got other than 200, and its slowest answer."""

    def __init__(self, port: int, stop: threading.Event, pause: float = 0.1):
        super().__init__(daemon=True)
        self.port, self.stop, self.pause = port, stop, pause
        self.failed: dict[int, int] = {}
        self.slowest = 0.0

    def run(self):
        with Http(self.port, timeout=5) as client:
            while not self.stop.is_set():
                started = time.monotonic()
                try:
                    status = client.call("GET", "/readyz")[0]
                except (OSError, http.client.HTTPException):
                    status = 0
                self.slowest = max(self.slowest, time.monotonic() - started)
                if status != 200:
                    self.failed[status] = self.failed.get(status, 0) + 1
                time.sleep(self.pause)


#: A 503's reason in the server's log: the exception's name, or a WAIT that fell short.
_UNAVAILABLE = re.compile(r"storage unavailable: ([^:\"\n]+)")


def _back_after(games: list[_Game], kind: str, promoted: float) -> float:
    """Seconds from ``promoted`` to the first answer 200 of ``kind`` after the last
    failed one, at the latest over ``games`` (0 if none failed after the promotion)."""
    back = promoted
    for game in games:
        answers = [answer for answer in game.answers if answer[1] == kind]
        failed = [index for index, answer in enumerate(answers) if answer[2] != 200]
        if not failed:
            continue
        later = answers[failed[-1] + 1:]
        if not later:
            raise RuntimeError(f"{game.game_id}: no {kind} answered after its last failure")
        back = max(back, later[0][0] + later[0][3])
    return back - promoted


def failover(work: Path, *, wait_replicas: int, replicas: int = 2, games: int = 12,
             before: float = 1.5, after: float = 1.5, node_timeout_ms: int = 1000,
             pause: float = 0.05, workers: int = 2, limiter: bool = False,
             fault: str = "kill") -> Failover:
    """Start a cluster (3 masters, ``replicas`` replicas each) and a gunicorn; each of
    ``games`` games (a third of them on its slots) has a client that writes and one that
    reads, and one game of each shard is followed over Server-Sent Events.  After
    ``before`` seconds the first master of REDIS_URL dies for good: ``fault`` "kill"
    SIGKILLs it (its connections close at once, as a crashed process's), "freeze"
    SIGSTOPs it (it answers nothing and closes nothing, as a host that vanished); it
    never comes back.  Play goes on until the lost shard's games answer reads and writes
    again and every game has been written twice more, then ``after`` more seconds; then
    every game's stored version is compared with the writes its client saw acknowledged,
    every answer is sorted by shard, and the followers must have every version once."""
    nodes = LocalCluster(work / "cluster", replicas=replicas, node_timeout_ms=node_timeout_ms)
    result = Failover(wait_replicas, replicas, fault, games=games)
    nodes.start()
    try:
        # Streams send a heartbeat every second: a follower whose stream stays silent
        # for SILENT seconds has lost its server, not merely waited for a move.
        env = {"REDIS_WAIT_REPLICAS": str(wait_replicas), "SSE_HEARTBEAT_SECONDS": "1"}
        if limiter:
            env["RATELIMIT_ENABLED"] = "true"
            env["RATELIMIT_DEFAULT"] = "1000000 per minute"
        with Server(nodes.url, work / f"failover-{wait_replicas}.log", workers=workers,
                    threads=32, **env) as server:
            # The victim: the first master of REDIS_URL, whose nodes every process asks
            # in turn (the live feed subscribes on the first that answers): the worst case.
            victim = next(node for node in nodes.nodes if nodes.role(node) == "master")
            heirs = nodes.replicas_of(victim)
            played: list[_Game] = []
            with Http(server.port) as client:
                # Games until a third of them (two at least) are on the victim's slots.
                while len(played) < games or \
                        sum(game.lost_shard for game in played) < max(2, games // 3):
                    status, _headers, body = client.call(
                        "POST", "/v1/games", {"variant": "salic-law", "undo": "full"})
                    assert status == 201, body
                    game_id = body["game"]["id"]
                    lost = nodes.node_of_slot(key_slot(f"game:{{{game_id}}}".encode())) \
                        is victim
                    if len(played) >= games and not lost:
                        continue
                    played.append(_Game(game_id, body["player_token"], lost))
                    if len(played) > games:  # one game of the other shards fewer
                        played.remove(next(game for game in played if not game.lost_shard))
            result.games_hit = sum(game.lost_shard for game in played)
            lock, stop = threading.Lock(), threading.Event()
            epoch = time.monotonic()
            team = [_Client(server.port, game, kind, result, lock, stop, pause, epoch)
                    for game in played for kind in ("write", "read")]
            followers = [_Follower(server.port, game.game_id, stop)
                         for game in (next(g for g in played if g.lost_shard),
                                      next(g for g in played if not g.lost_shard))]
            prober = _Prober(server.port, stop)
            for member in [*team, *followers, prober]:
                member.start()
            time.sleep(before)
            killed = time.monotonic()
            if fault == "kill":
                victim.kill()  # for good
            else:
                victim.freeze()  # for good
            while not any(nodes.role(heir) == "master" for heir in heirs):
                if time.monotonic() - killed > 30:
                    raise RuntimeError("no replica was promoted within 30 s")
                time.sleep(0.01)
            promoted = time.monotonic()
            result.promoted_after = promoted - killed
            deadline = promoted + 30
            while True:
                with lock:
                    written = [game.acknowledged for game in played]
                    recent = [game.answers[-1][2] for game in played if game.answers]
                if all(status == 200 for status in recent) and \
                        time.monotonic() - promoted > 1.0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("the lost shard did not recover within 30 s")
                time.sleep(0.05)
            while True:
                with lock:
                    if all(game.acknowledged >= count + 2
                           for game, count in zip(played, written, strict=True)):
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("the games were not written again within 30 s")
                time.sleep(0.05)
            time.sleep(after)
            writing_stopped = threading.Event()
            for member in team:
                member.stop = writing_stopped
            writing_stopped.set()
            for member in team:
                member.join(30)
                if member.error is not None:
                    raise member.error
            for follower in followers:  # the last versions reach them
                final = next(g for g in played if g.game_id == follower.game_id).acknowledged
                while (follower.ids[-1:] or [0])[0] < final:
                    if time.monotonic() > deadline + 30:
                        raise RuntimeError(f"{follower.game_id}: the stream stopped at "
                                           f"{follower.ids[-1:]}, the game at {final}")
                    time.sleep(0.05)
            stop.set()
            prober.join(10)
            result.not_ready, result.readyz_slowest = prober.failed, prober.slowest
            for follower in followers:
                follower.join(10)
                if follower.ids != list(range(follower.ids[0], follower.ids[-1] + 1)):
                    result.feed_gaps += 1
                result.resumed += follower.streams - 1
                result.silent_streams += follower.silent
        log = (work / f"failover-{wait_replicas}.log").read_text(errors="replace")
        for reason in _UNAVAILABLE.findall(log):
            reason = re.sub(r"\d+", "N", reason)
            result.logged_reasons[reason] = result.logged_reasons.get(reason, 0) + 1
        lost_games = [game for game in played if game.lost_shard]
        result.reads_back_after = _back_after(lost_games, "read", promoted - epoch)
        result.writes_back_after = _back_after(lost_games, "write", promoted - epoch)
        for game in played:
            for when, _kind, status, took in game.answers:
                if game.lost_shard:
                    if status not in (200, 503):
                        result.other[status] = result.other.get(status, 0) + 1
                    continue
                result.healthy_requests += 1
                if status != 200:
                    result.healthy_failed[status] = result.healthy_failed.get(status, 0) + 1
                if when + epoch >= killed:
                    result.healthy_slowest = max(result.healthy_slowest, took)
        client = RedisCluster(startup_nodes=[ClusterNode(n.host, n.port)
                                             for n in nodes.nodes if n.running])
        try:
            for game in played:
                stored = int(client.hget(f"game:{{{game.game_id}}}", "v") or 0)
                result.lost += max(0, game.acknowledged - stored)
                result.extra += max(0, stored - game.acknowledged)
        finally:
            client.close()
    finally:
        nodes.stop()
    return result


@contextlib.contextmanager
def _busy(count: int):
    """``count`` processes spinning on the CPU while the block runs."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--failover", action="store_true",
                        help="a master dies for good while games are played: killed, then "
                             "frozen, with two replicas per master and WAIT 1; then killed "
                             "with one replica per master and WAIT 0")
    parser.add_argument("--games", type=int, default=12, help="--failover: games played")
    parser.add_argument("--pause", type=float, default=0.05,
                        help="--failover: seconds each client waits between requests")
    parser.add_argument("--processes", type=int, default=2,
                        help="--failover: the gunicorn's request processes")
    parser.add_argument("--rounds", type=int, default=1,
                        help="--failover: how many times each failover is run")
    parser.add_argument("--busy", type=int, default=0,
                        help="--failover: processes that spin on the CPU meanwhile (a loaded "
                             "machine)")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200,
                        help="moves (and as many reads) per backend and turn")
    args = parser.parse_args(argv)
    if args.failover:
        with _busy(args.busy):
            for _round in range(args.rounds):
                for wait, replicas, fault in ((1, 2, "kill"), (1, 2, "freeze"), (0, 1, "kill")):
                    with tempfile.TemporaryDirectory(prefix="bench-failover-") as folder:
                        print(failover(Path(folder), wait_replicas=wait, replicas=replicas,
                                       fault=fault, games=args.games, pause=args.pause,
                                       workers=args.processes).summary(), flush=True)
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
