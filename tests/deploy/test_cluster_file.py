"""docker-compose.cluster.yml on a real Docker Engine, driven as an operator drives it:
`up` once (nine Redis nodes, three API replicas, the events group, HAProxy), every
request through the load balancer's published port.

- a whole game played and followed over Server-Sent Events (the events group serves the
  stream), and 300 followers of one game, more than the API replicas could hold, each
  getting every move;
- a rolling restart of the API replicas, one at a time, while a client plays: what it
  cost the client;
- a Redis master SIGKILLed for good (never restarted): the time to the promotion of its
  replica and to reads and writes answered again on its shard; no request on the healthy
  shards fails, no acknowledged move is lost, nothing but 503 with Retry-After meanwhile;
- an API replica SIGKILLed for good: clients do not notice.

The cluster's node timeout is 2000 ms here (REDIS_CLUSTER_NODE_TIMEOUT; 5000 by default).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import subprocess
import threading
import time

import pytest
import requests
from redis.crc import key_slot

from tests.deploy.clients import (
    auth,
    create,
    play_followed_game,
    run_players,
    salic_law_games,
    stop_players,
    summary,
    versions,
)
from tests.deploy.compose import DeployError, Deployment, docker, free_prefix
from tests.deploy.conftest import deployment_env, project_name, record
from tests.sse import messages

pytestmark = pytest.mark.timeout(400)
SECTION = "cluster file (docker-compose.cluster.yml)"
APIS = ["api-1", "api-2", "api-3"]
NODES = [f"redis-{number}" for number in range(1, 10)]
NODE_TIMEOUT_MS = 2000
#: Followers of one game through the load balancer: more than the API replicas could
#: hold themselves (one worker each here, 48 streams a worker).
FOLLOWERS = 300
MOVES = 3
#: Issue 26's targets after a master is lost: reads and writes of its shard answered
#: again within this many seconds of its replica's promotion.
BACK_WITHIN = 3.0


def _states(deployment: Deployment) -> dict[str, str]:
    try:
        return deployment.haproxy_states(via="events")
    except DeployError:
        return {}


def _wait_in_rotation(deployment: Deployment, servers: list[str], seconds: float) -> None:
    deployment.wait_for(lambda: all(_states(deployment).get(server) == "UP"
                                    for server in servers),
                        seconds, f"HAProxy sending requests to {', '.join(servers)}",
                        pause=0.2)


def _writes_taken(base: str, creates: int = 16) -> bool:
    """``creates`` games created in a row, each answered 201 (random ids: 16 reach all
    three shards but for a 0.2 % chance)."""
    with requests.Session() as session:
        for _ in range(creates):
            answer = session.post(f"{base}/v1/games", json={"variant": "clock"}, timeout=10)
            if answer.status_code != 201:
                assert answer.status_code == 503, answer.text
                assert answer.headers.get("Retry-After"), answer.headers
                return False
    return True


@pytest.fixture(scope="module")
def cluster(base_images, app_image):
    """The deployment up with every API replica and the events group in HAProxy's
    rotation: ``(deployment, base URL, the Redis network's first three numbers)``."""
    started = time.monotonic()
    for attempt in range(3):
        prefix = free_prefix()
        deployment = Deployment("docker-compose.cluster.yml", project_name("cluster"),
                                deployment_env(base_images, app_image, WEB_CONCURRENCY="1",
                                               REDIS_NETWORK=prefix,
                                               REDIS_CLUSTER_NODE_TIMEOUT=str(NODE_TIMEOUT_MS)))
        try:
            deployment.up()
            break
        except DeployError as error:
            deployment.remove()
            # Another test run took the network's range between the choice and `up`.
            if "overlaps" not in str(error) or attempt == 2:
                raise
    try:
        base = f"http://{deployment.published('lb', 8000)}"
        _wait_in_rotation(deployment, [f"api/{name}" for name in APIS] + ["events/events"],
                          120)
        record(SECTION, up_to_ready_s=round(time.monotonic() - started, 1))
        # In rotation, a replica reaches Redis; a write also needs its shard's replica
        # in sync (REDIS_WAIT_REPLICAS), and answers 503 with Retry-After until then.
        deployment.wait_for(lambda: _writes_taken(base), 60,
                            "creates taken by every shard", pause=0.5)
        record(SECTION, up_to_writes_taken_s=round(time.monotonic() - started, 1))
        yield deployment, base, prefix
    finally:
        deployment.save_logs("deploy-cluster.log")
        deployment.remove()


def test_a_whole_game_through_the_load_balancer_followed_over_sse(cluster):
    deployment, base, _prefix = cluster
    session = requests.Session()
    game_id, _final, _events = play_followed_game(session, base, SECTION)
    # HAProxy sent the stream to the events group, and nothing else.
    events_log = deployment.logs("events")
    assert f'"path": "/v1/games/{game_id}/events"' in events_log
    assert f'"path": "/v1/games/{game_id}/moves"' not in events_log


class RawStream:
    """One Server-Sent Events stream on a socket of its own (hundreds at once cost no
    thread): the answer's head, then its chunks decoded."""

    def __init__(self, address: str, path: str):
        host, port = address.rsplit(":", 1)
        self.socket = socket.create_connection((host, int(port)), timeout=10)
        self.socket.setblocking(False)
        self.pending = (f"GET {path} HTTP/1.1\r\nHost: {address}\r\n"
                        "Accept: text/event-stream\r\n\r\n").encode()
        self.raw = b""
        self.head: bytes | None = None
        self.body = b""

    def send(self) -> None:
        sent = self.socket.send(self.pending)
        self.pending = self.pending[sent:]

    def receive(self) -> bool:
        """Reads what arrived; False once the server closed the stream."""
        data = self.socket.recv(65536)
        self.raw += data
        if self.head is None and b"\r\n\r\n" in self.raw:
            self.head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        if self.head is not None:
            while b"\r\n" in self.raw:
                size_text, rest = self.raw.split(b"\r\n", 1)
                size = int(size_text, 16)
                if len(rest) < size + 2:
                    break
                self.body += rest[:size]
                self.raw = rest[size + 2:]
        return bool(data)

    def status(self) -> int | None:
        return None if self.head is None else int(self.head.split(b" ", 2)[1])

    def events(self) -> list:
        return [message for message in messages([self.body]) if message.event is not None]


def _pump(streams: list[RawStream], done, seconds: float, what: str) -> None:
    """Sends and reads every stream until ``done(stream)`` holds for all of them."""
    selector = selectors.DefaultSelector()
    for stream in streams:
        selector.register(stream.socket, selectors.EVENT_READ | selectors.EVENT_WRITE, stream)
    deadline = time.monotonic() + seconds
    try:
        while not all(done(stream) for stream in streams):
            assert time.monotonic() < deadline, \
                f"{what}: {sum(not done(s) for s in streams)} of {len(streams)} streams not yet"
            for key, mask in selector.select(0.2):
                stream = key.data
                if mask & selectors.EVENT_WRITE:
                    if stream.pending:
                        stream.send()
                    if not stream.pending:
                        selector.modify(stream.socket, selectors.EVENT_READ, stream)
                if mask & selectors.EVENT_READ and not stream.receive():
                    selector.unregister(stream.socket)
    finally:
        selector.close()


def test_followers_through_the_load_balancer_beyond_what_the_api_replicas_hold(cluster):
    """More streams than the three API replicas could hold themselves (one worker each,
    48 streams a worker): HAProxy sends them to the events group, and every one gets
    every move."""
    deployment, base, _prefix = cluster
    session = requests.Session()
    game_id, token = create(session, base, variant="salic-law", seed=42)
    address = base.removeprefix("http://")
    streams = [RawStream(address, f"/v1/games/{game_id}/events") for _ in range(FOLLOWERS)]
    try:
        started = time.monotonic()
        _pump(streams, lambda s: s.head is not None and b"retry:" in s.body, 120, "opening")
        opened = time.monotonic() - started
        assert {stream.status() for stream in streams} == {200}
        for version in range(MOVES):
            answer = session.post(f"{base}/v1/games/{game_id}/moves", json={"type": "deal"},
                                  headers=auth(token, **{"If-Match": f'"{version}"'}),
                                  timeout=10)
            assert answer.status_code == 200, answer.text
        moved = time.monotonic()
        _pump(streams, lambda s: f"id: {MOVES}\n".encode() in s.body, 60, "every move")
        record(SECTION, followers_through_the_load_balancer=(
            f"{FOLLOWERS} streams opened in {opened:.1f} s, each got all {MOVES} moves "
            f"within {time.monotonic() - moved:.2f} s of the last"))
        for stream in streams:
            events = stream.events()
            assert [message.id for message in events] == [str(v) for v in range(1, MOVES + 1)]
        # The events group holds them all, the API replicas none.
        metrics = deployment.execute("events", "python", "-c",
                                     "import urllib.request; print(urllib.request.urlopen("
                                     "'http://127.0.0.1:8001/metrics', timeout=5).read()"
                                     ".decode())")
        gauge = [line for line in metrics.splitlines()
                 if line.startswith("patience_event_streams ")]
        assert gauge == [f"patience_event_streams {float(FOLLOWERS)}"], gauge
    finally:
        for stream in streams:
            stream.socket.close()


def _replica_answers(deployment: Deployment, name: str) -> bool:
    try:
        deployment.execute(name, "python", "-c",
                           "import urllib.request; urllib.request.urlopen("
                           "'http://127.0.0.1:8000/readyz', timeout=2)")
    except DeployError:
        return False
    return True


def test_a_rolling_restart_of_the_api_replicas_costs_a_playing_client_nothing(cluster):
    deployment, base, _prefix = cluster
    games = salic_law_games(requests.Session(), base, 3)
    stop, players = run_players(base, games, 1)
    started = time.monotonic()
    steps = []
    try:
        time.sleep(1.0)  # the client is under way
        for name in APIS:
            # Graceful: SIGTERM, gunicorn ends what it serves, then the container starts.
            began = time.monotonic()
            deployment.compose("restart", "-t", "30", name)
            restarted = time.monotonic()
            deployment.wait_for(lambda name=name: _replica_answers(deployment, name), 90,
                                f"{name} answering again after its restart", pause=0.2)
            answering = time.monotonic()
            _wait_in_rotation(deployment, [f"api/{name}"], 60)
            steps.append(f"{name}: restarted {restarted - began:.1f} s, answering "
                         f"{answering - restarted:.1f} s later, in HAProxy's rotation "
                         f"{time.monotonic() - answering:.1f} s later")
        time.sleep(1.0)
    finally:
        answers = stop_players(stop, players)
    figures = summary(answers)
    record(SECTION, rolling_restart=f"3 replicas restarted one at a time in "
                                    f"{time.monotonic() - started:.1f} s while a client "
                                    f"made {figures['requests']} requests: "
                                    f"{figures['failed']} failed "
                                    f"({figures['answered_503_with_retry_after']} were 503 "
                                    f"with Retry-After, sent again), max latency "
                                    f"{figures['max_latency_s']} s, median "
                                    f"{figures['median_latency_s']} s",
           rolling_restart_steps=steps)
    assert figures["other_failures"] == [], figures
    assert versions(base, games) == {game.id: game.acknowledged for game in games}


def _cluster_nodes(deployment: Deployment, via: str) -> list[dict]:
    """``CLUSTER NODES`` as a node sees it: address, flags, master id, slot ranges."""
    nodes = []
    for line in deployment.execute(via, "redis-cli", "cluster", "nodes").splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        ranges = []
        for text in fields[8:]:
            if text.startswith("["):
                continue  # a slot being migrated
            low, _, high = text.partition("-")
            ranges.append((int(low), int(high or low)))
        nodes.append({"id": fields[0], "ip": fields[1].split(":")[0],
                      "flags": set(fields[2].split(",")), "master": fields[3],
                      "slots": ranges})
    return nodes


def _service_of(ip: str, prefix: str) -> str:
    return f"redis-{int(ip.removeprefix(prefix + '.')) - 10}"


class PromotionWatch(threading.Thread):
    """Asks the killed master's replicas for their role every 50 ms (redis-cli in the
    container of one of them, so no request of this machine goes to the Redis network)
    and notes the time (monotonic) at which one of them answers ``master``."""

    def __init__(self, deployment: Deployment, prefix: str, replicas: list[str]):
        super().__init__(daemon=True)
        script = ("i=0; while [ $i -lt 800 ]; do for h in " + " ".join(replicas) +
                  "; do if [ \"$(redis-cli -h $h role 2>/dev/null | head -1)\" = master ];"
                  " then echo $h; exit 0; fi; done; sleep 0.05; i=$((i+1)); done; exit 1")
        self.command = ["docker", "exec", deployment.container(_service_of(replicas[0], prefix)),
                        "sh", "-c", script]
        self.promoted: float | None = None
        self.node: str | None = None

    def run(self) -> None:
        with subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True) as process:
            line = process.stdout.readline()
            if line.strip():
                self.promoted = time.monotonic()
                self.node = line.strip()
            process.wait()


def test_a_master_lost_for_good_stops_nothing_else(cluster):
    deployment, base, prefix = cluster
    session = requests.Session()
    games = salic_law_games(session, base, 24)
    nodes = _cluster_nodes(deployment, "redis-5")
    masters = {node["id"]: node for node in nodes if "master" in node["flags"]}
    # redis-1, the first node of REDIS_URL, is the master lost (it took the whole service
    # down before, issue 26).
    victim = next(node for node in masters.values() if node["ip"] == f"{prefix}.11")
    replicas = [node["ip"] for node in nodes if node["master"] == victim["id"]]
    assert len(replicas) == 2, nodes

    def on_victim(game_id: str) -> bool:
        slot = key_slot(f"game:{{{game_id}}}".encode())
        return any(low <= slot <= high for low, high in victim["slots"])

    lost = {game.id for game in games if on_victim(game.id)}
    assert 0 < len(lost) < len(games), "the games are not spread over the shards"
    stop, players = run_players(base, games, 4)
    watch = PromotionWatch(deployment, prefix, replicas)
    try:
        time.sleep(1.5)  # the players are under way
        watch.start()
        killed = deployment.kill_for_good("redis-1")

        def lost_shard_back():
            answered = {(a.game, a.kind) for player in players for a in player.answers
                        if a.ok and a.started > killed}
            return all((game, kind) in answered for game in lost for kind in ("read", "write"))

        with contextlib.suppress(DeployError):  # measured below
            deployment.wait_for(lost_shard_back, 45, "every game of the lost shard read and "
                                "written again", pause=0.1)
        time.sleep(3.0)  # and nothing fails afterwards
    finally:
        answers = stop_players(stop, players)
        watch.join(60)
    assert docker("inspect", "--format", "{{.State.Status}}",
                  deployment.container("redis-1")).stdout.strip() == "exited"
    assert watch.promoted is not None, "no replica of the killed master was promoted"
    promoted = watch.promoted - killed

    def back(kind: str) -> float | None:
        """Seconds from the promotion until every lost game had a 200 of ``kind``."""
        firsts = []
        for game in lost:
            first = next((a.ended for a in answers if a.game == game and a.kind == kind
                          and a.ok and a.started > killed), None)
            if first is None:
                return None
            firsts.append(first)
        return max(firsts) - watch.promoted

    reads_back, writes_back = back("read"), back("write")
    healthy_failed = [a for a in answers if a.game not in lost and not a.ok]
    lost_failed = [a for a in answers if a.game in lost and not a.ok]
    unacceptable = [a for a in answers if not a.ok and not a.acceptable_failure]
    found = versions(base, games)
    acknowledged = {game.id: game.acknowledged for game in games}
    moves_lost = sum(max(0, acknowledged[g] - found[g]) for g in found)
    applied_twice = sum(max(0, found[g] - acknowledged[g]) for g in found)

    def seconds(value):
        return None if value is None else round(value, 2)

    record(SECTION, master_lost_for_good={
        "cluster_node_timeout_ms": NODE_TIMEOUT_MS,
        "kill_to_promotion_s": seconds(promoted),
        "promotion_to_reads_back_s": seconds(reads_back),
        "promotion_to_writes_back_s": seconds(writes_back),
        "games_on_lost_shard": f"{len(lost)} of {len(games)}",
        "requests": len(answers),
        "sent_again_after_a_closed_connection": sum(a.resent for a in answers),
        "failed_on_healthy_shards": len(healthy_failed),
        "failed_on_lost_shard": len(lost_failed),
        "acknowledged_moves": sum(acknowledged.values()),
        "acknowledged_moves_lost": moves_lost,
        "moves_applied_twice": applied_twice,
        "answers_other_than_200_or_503_with_retry_after": len(unacceptable),
        "examples": [f"{a.kind} {a.status} {a.error}" for a in unacceptable[:3]]
                    or [f"{a.kind} {a.status} {a.error}" for a in healthy_failed[:3]],
    })
    assert moves_lost == 0, (acknowledged, found)
    assert applied_twice == 0, (acknowledged, found)
    assert unacceptable == [], [f"{a.kind} {a.status} {a.error}" for a in unacceptable[:5]]
    assert healthy_failed == [], \
        f"{len(healthy_failed)} requests failed on the healthy shards"
    assert reads_back is not None, "a game of the lost shard was never read again"
    assert reads_back <= BACK_WITHIN
    assert writes_back is not None, "a game of the lost shard was never written again"
    assert writes_back <= BACK_WITHIN


def test_an_api_replica_killed_for_good_goes_unnoticed(cluster):
    deployment, base, _prefix = cluster
    games = salic_law_games(requests.Session(), base, 6)
    stop, players = run_players(base, games, 2)
    try:
        time.sleep(1.5)
        killed = deployment.kill_for_good("api-2")
        deployment.wait_for(lambda: _states(deployment).get("api/api-2", "UP") != "UP", 30,
                            "HAProxy taking api-2 out", pause=0.2)
        out = time.monotonic() - killed
        time.sleep(2.0)
    finally:
        answers = stop_players(stop, players)
    after = [answer for answer in answers if answer.started >= killed]
    figures = summary(after)
    record(SECTION, api_replica_killed=f"out of HAProxy's rotation {out:.1f} s after the "
                                       f"kill; {figures['requests']} requests after it: "
                                       f"{figures['failed']} failed, "
                                       f"{figures['sent_again_after_a_closed_connection']} "
                                       f"sent again after a closed connection, max "
                                       f"latency {figures['max_latency_s']} s")
    assert docker("inspect", "--format", "{{.State.Status}}",
                  deployment.container("api-2")).stdout.strip() == "exited"
    assert figures["failed"] == 0, figures
    assert versions(base, games) == {game.id: game.acknowledged for game in games}
