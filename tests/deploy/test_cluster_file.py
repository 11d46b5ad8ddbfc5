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
  and 200 players who own the games, create and resign theirs meanwhile: once the
  cluster has healed and the sweeper is done, each one's list holds exactly the games
  whose create was acknowledged to it, and its statistics are those of its games;
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
    COUNTED,
    auth,
    create,
    join_owners,
    play_followed_game,
    player_views,
    read_games,
    recoveries,
    register_many,
    run_owners,
    run_players,
    salic_law_games,
    spread,
    stop_players,
    summary,
    tally,
    versions,
    writes_taken,
)
from tests.deploy.compose import ROOT, DeployError, Deployment, docker, up_on_a_free_network
from tests.deploy.conftest import deployment_env, project_name
from tests.deploy.figures import at_least, at_most, between, equal, record
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
#: again within this many seconds of its replica's promotion, game by game.
BACK_WITHIN = 3.0
#: Seconds from a master's death to its replica's promotion, at most: the node timeout,
#: the failure reports' gossip and the election (3.1 to 4.7 s measured), with room for
#: a loaded machine.
PROMOTED_WITHIN = 12.0
#: Seconds by which the promotion's watch may see a promotion late: a round of its
#: polling (50 ms and two redis-cli) on a loaded machine.
PROMOTION_SEEN_WITHIN = 0.5
#: Seconds the deployment may take from `up` to every server in HAProxy's rotation
#: (48 s measured on 2 loaded cores), then to take writes on every shard (the wait's own
#: limit).
UP_WITHIN, WRITES_WITHIN = 180, 60
#: Seconds a request of a playing client may take while a part of the deployment is
#: restarted or lost (HAProxy's connect timeout is 1 s, with 2 retries).
LATENCY_WITHIN = 5.0
#: Players with an account while a master is lost: the first ones own the games played
#: throughout, each of the others creates one or two games and resigns one.
PLAYERS = 200
PLAYED_GAMES = 24
VARIANTS = ("clock", "salic-law", "four-corners")
#: The players' lists and statistics are settled once they have not changed for this
#: many seconds (the worker sweeps the outboxes every 2 s)...
SETTLED_AFTER = 3.0
#: ...which they must be within this many seconds of the last acknowledgement.
SWEEPER_WAIT_WITHIN = 30.0


def _states(deployment: Deployment) -> dict[str, str]:
    try:
        return deployment.haproxy_states()
    except DeployError:
        return {}


def _wait_in_rotation(deployment: Deployment, servers: list[str], seconds: float) -> None:
    deployment.wait_for(lambda: all(_states(deployment).get(server) == "UP"
                                    for server in servers),
                        seconds, f"HAProxy sending requests to {', '.join(servers)}",
                        pause=0.2)


@pytest.fixture(scope="module")
def cluster(base_images, app_image):
    """The deployment up with every API replica and the events group in HAProxy's
    rotation: ``(deployment, base URL, the Redis network's first three numbers)``."""
    started = time.monotonic()
    deployment, prefix = up_on_a_free_network(
        "docker-compose.cluster.yml", project_name("cluster"),
        lambda prefix: deployment_env(base_images, app_image, WEB_CONCURRENCY="1",
                                      REDIS_NETWORK=prefix,
                                      REDIS_CLUSTER_NODE_TIMEOUT=str(NODE_TIMEOUT_MS)))
    try:
        base = f"http://{deployment.published('lb', 8000)}"
        _wait_in_rotation(deployment, [f"api/{name}" for name in APIS]
                          + ["events/events-1", "events/events-2"], 120)
        ready = time.monotonic()
        # In rotation, a replica reaches Redis; a write also needs its shard's replica
        # in sync (REDIS_WAIT_REPLICAS), and answers 503 with Retry-After until then.
        deployment.wait_for(lambda: writes_taken(base), WRITES_WITHIN,
                            "creates taken by every shard", pause=0.5)
        record(SECTION, up_to_ready_s=(round(ready - started, 1), at_most(UP_WITHIN)),
               ready_to_writes_taken_s=(round(time.monotonic() - ready, 1),
                                        at_most(WRITES_WITHIN)))
        yield deployment, base, prefix
    finally:
        deployment.save_logs("deploy-cluster.log")
        deployment.remove()


def test_a_whole_game_through_the_load_balancer_followed_over_sse(cluster):
    deployment, base, _prefix = cluster
    session = requests.Session()
    game_id, _final, _events = play_followed_game(session, base, SECTION)
    # HAProxy sent the stream to the events group, and nothing else.
    events_log = deployment.logs("events-1") + deployment.logs("events-2")
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
        record(SECTION, **{
            f"followers: {FOLLOWERS}_streams_opened_s": (round(opened, 1), at_most(60.0)),
            f"followers: each_got_all_{MOVES}_moves_within_s_of_the_last": (
                round(time.monotonic() - moved, 2), at_most(5.0))})
        for stream in streams:
            events = stream.events()
            assert [message.id for message in events] == [str(v) for v in range(1, MOVES + 1)]
        # The events containers hold them all between them, the API replicas none.
        held = 0.0
        for service in ("events-1", "events-2"):
            metrics = deployment.execute(service, "python", "-c",
                                         "import urllib.request; print(urllib.request.urlopen("
                                         "'http://127.0.0.1:8001/metrics', timeout=5).read()"
                                         ".decode())")
            gauge = [line for line in metrics.splitlines()
                     if line.startswith("patience_event_streams ")]
            assert len(gauge) == 1, gauge
            held += float(gauge[0].split()[1])
        assert held == float(FOLLOWERS), held
    finally:
        for stream in streams:
            stream.socket.close()


#: Seconds each step of a replica's restart may take (the restart's 30 s grace, and the
#: waits' own limits: 90 s to answer, 60 s to be in the rotation).
STEP_WITHIN = 90.0


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
    steps = {}
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
            steps[f"{name}_restarted_s"] = round(restarted - began, 1)
            steps[f"{name}_then_answering_s"] = round(answering - restarted, 1)
            steps[f"{name}_then_in_rotation_s"] = round(time.monotonic() - answering, 1)
        time.sleep(1.0)
    finally:
        answers = stop_players(stop, players)
    figures = summary(answers)
    record(SECTION, detail=figures["other_failures"], **{
        "rolling_restart: total_s": (round(time.monotonic() - started, 1), at_most(180.0)),
        **{f"rolling_restart: {name}": (step, at_most(STEP_WITHIN))
           for name, step in steps.items()},
        "rolling_restart: requests": (figures["requests"], at_least(50)),
        "rolling_restart: failed": (figures["failed"], equal(0)),
        "rolling_restart: sent_again": (figures["sent_again"], equal(0)),
        "rolling_restart: kept_alive_share": (figures["kept_alive_share"], at_least(0.9)),
        "rolling_restart: max_latency_s": (figures["max_latency_s"], at_most(LATENCY_WITHIN)),
        "rolling_restart: median_latency_s": (figures["median_latency_s"], at_most(0.5)),
    })
    assert versions(base, games) == {game.id: game.acknowledged for game in games}


def _cluster_nodes(deployment: Deployment, via: str) -> list[dict]:
    """``CLUSTER NODES`` as a node sees it: address, flags, master id, slot ranges (and
    as the node writes them)."""
    nodes = []
    for line in deployment.execute(via, "sh", "-c", 'REDISCLI_AUTH="$(cat /run/secrets/'
                                   'redis_password)" redis-cli cluster nodes').splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        ranges, texts = [], []
        for text in fields[8:]:
            if text.startswith("["):
                continue  # a slot being migrated
            low, _, high = text.partition("-")
            ranges.append((int(low), int(high or low)))
            texts.append(text)
        nodes.append({"id": fields[0], "ip": fields[1].split(":")[0],
                      "flags": set(fields[2].split(",")), "master": fields[3],
                      "slots": ranges, "slot_texts": texts})
    return nodes


def _service_of(ip: str, prefix: str) -> str:
    return f"redis-{int(ip.removeprefix(prefix + '.')) - 10}"


class PromotionWatch(threading.Thread):
    """Asks the killed master's replicas for their own line of ``CLUSTER NODES`` every
    50 ms (redis-cli in the container of one of them, so no request of this machine goes
    to the Redis network) and notes the time (monotonic) at which one of them first says
    it is a master serving every slot range the killed master served."""

    def __init__(self, deployment: Deployment, prefix: str, replicas: list[str],
                 slots: list[str]):
        super().__init__(daemon=True)
        promoted = ("awk -v want='" + " ".join(slots) + "' '$3 ~ /myself/ && $3 ~ /master/ "
                    "{ n = split(want, w, \" \"); for (i = 9; i <= NF; i++) have[$i] = 1; "
                    "found = 1; for (j = 1; j <= n; j++) if (!(w[j] in have)) found = 0 } "
                    "END { exit !found }'")
        script = ('export REDISCLI_AUTH="$(cat /run/secrets/redis_password)"; '
                  "echo watching; i=0; while [ $i -lt 1200 ]; do for h in "
                  + " ".join(replicas) + "; do if redis-cli -h $h cluster nodes 2>/dev/null "
                  f"| {promoted}; then echo $h; exit 0; fi; done; sleep 0.05; "
                  "i=$((i+1)); done; exit 1")
        self.command = ["docker", "exec", deployment.container(_service_of(replicas[0], prefix)),
                        "sh", "-c", script]
        self.watching = threading.Event()
        self.promoted: float | None = None
        self.node: str | None = None

    def run(self) -> None:
        with subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True) as process:
            if process.stdout.readline().strip() == "watching":
                self.watching.set()
                line = process.stdout.readline()
                if line.strip():
                    self.promoted = time.monotonic()
                    self.node = line.strip()
            process.wait()


def test_a_master_lost_for_good_stops_nothing_else(cluster):
    """Times from the engine and the cluster themselves: the master's death as Docker
    reports it, the promotion when a replica first says it serves the dead master's slots.
    The lost shard's games are back, game by game, at their first success after their
    last failure; the outage must have been seen (503s on the lost shard), the healthy
    shards must not have seen it (no failure, no request sent again)."""
    deployment, base, prefix = cluster
    session = requests.Session()
    accounts = register_many(base, PLAYERS)
    games = salic_law_games(session, base, PLAYED_GAMES, owners=accounts[:PLAYED_GAMES])
    # The others create a game each now, then, from the kill on, half of them a second
    # one; each resigns one of its games, half of them with the game's own token (no read
    # of the player's keys: acknowledged while those are lost, and left to the sweeper).
    creators = accounts[PLAYED_GAMES:]
    for number, account in enumerate(creators):
        account.plan = [("create", VARIANTS[number % 3])]
    join_owners(run_owners(base, creators, 4, pause=0.0))
    for number, account in enumerate(creators):
        account.plan = [("create", VARIANTS[(number + 1) % 3])] if number % 2 else []
        account.plan.append(("resign" if number // 4 % 2 else "resign with the game's token",
                             number // 2 % (1 + number % 2)))
    go = threading.Event()
    nodes = _cluster_nodes(deployment, "redis-5")
    masters = {node["id"]: node for node in nodes if "master" in node["flags"]}
    # redis-1, the first node of REDIS_URL, is the master lost (it took the whole service
    # down before, issue 26).
    victim = next(node for node in masters.values() if node["ip"] == f"{prefix}.11")
    replicas = [node["ip"] for node in nodes if node["master"] == victim["id"]]
    assert len(replicas) == 2, nodes

    def on_victim(game_id: str, kind: str = "game") -> bool:
        slot = key_slot(f"{kind}:{{{game_id}}}".encode())
        return any(low <= slot <= high for low, high in victim["slots"])

    lost = {game.id for game in games if on_victim(game.id)}
    assert 0 < len(lost) < len(games), "the games are not spread over the shards"
    stop, players = run_players(base, games, 4)
    owners = run_owners(base, creators, 4, go=go)
    watch = PromotionWatch(deployment, prefix, replicas, victim["slot_texts"])
    try:
        time.sleep(1.5)  # the players are under way
        watch.start()
        assert watch.watching.wait(30), "the promotion's watch did not start"
        death = deployment.kill_for_good("redis-1")
        go.set()
        killed = death.reported
        deployment.wait_for(lambda: watch.promoted or not watch.is_alive(), 60,
                            "a replica of the killed master promoted", pause=0.05)

        def lost_shard_back():
            answered = {(a.game, a.kind) for player in players for a in player.answers
                        if a.ok and a.started > watch.promoted}
            return all((game, kind) in answered for game in lost for kind in ("read", "write"))

        if watch.promoted is not None:
            with contextlib.suppress(DeployError):  # measured below
                deployment.wait_for(lost_shard_back, 45, "every game of the lost shard "
                                    "read and written again", pause=0.1)
        time.sleep(3.0)  # and nothing fails afterwards
    finally:
        answers = stop_players(stop, players)
        go.set()
        owners_answers = join_owners(owners)
        acknowledged_all = time.monotonic()
        watch.join(60)
    assert docker("inspect", "--format", "{{.State.Status}}",
                  deployment.container("redis-1")).stdout.strip() == "exited"
    assert watch.promoted is not None, "no replica of the killed master was promoted"
    promoted = watch.promoted
    lost_answers = [a for a in answers if a.game in lost]
    healthy_answers = [a for a in answers if a.game not in lost]
    found = versions(base, games)
    acknowledged = {game.id: game.acknowledged for game in games}
    back = {kind: recoveries(answers, lost, kind) for kind in ("read", "write")}
    reads_max, reads_median = spread([t - promoted for t in back["read"].values()
                                      if t is not None])
    writes_max, writes_median = spread([t - promoted for t in back["write"].values()
                                        if t is not None])
    # The requests of the game back last, from the kill on (in the failure's message, and
    # in tests/artifacts/deploy-master-lost.txt).
    slowest = max(((t, game) for per_game in back.values() for game, t in per_game.items()
                   if t is not None), default=(None, None))[1]
    detail = "the game back last, its requests (seconds from the promotion): " + ", ".join(
        f"{a.kind} {a.status or a.error} {a.started - promoted:+.2f}..{a.ended - promoted:+.2f}"
        for a in answers if a.game == slowest and a.ended > killed)
    (ROOT / "tests" / "artifacts").mkdir(parents=True, exist_ok=True)
    (ROOT / "tests" / "artifacts" / "deploy-master-lost.txt").write_text(detail + "\n")
    record(SECTION, detail=detail[:2000], **{
        "master_lost: kill_issued_to_death_reported_s": (round(killed - death.issued, 2),
                                                         at_most(2.0)),
        "master_lost: kill_to_promotion_s": (round(promoted - killed, 2),
                                             between(NODE_TIMEOUT_MS / 1000, PROMOTED_WITHIN)),
        "master_lost: games_on_lost_shard": (len(lost), between(1, len(games) - 1)),
        "master_lost: requests": (len(answers), at_least(len(games) * 4)),
        # The outage was seen, by every game of the lost shard, and by nothing else.
        "master_lost: lost_shard_503s_with_retry_after": (
            sum(a.acceptable_failure for a in lost_answers), at_least(1)),
        "master_lost: lost_shard_games_whose_reads_failed": (len(back["read"]),
                                                              between(1, len(lost))),
        "master_lost: lost_shard_games_whose_writes_failed": (len(back["write"]),
                                                               between(1, len(lost))),
        # (the watch sees a promotion up to a round of its polling late)
        "master_lost: lost_shard_answered_200_between_kill_and_promotion": (
            sum(a.ok for a in lost_answers
                if killed < a.started and a.ended < promoted - PROMOTION_SEEN_WITHIN),
            equal(0)),
        "master_lost: failed_before_the_kill": (
            sum(not a.ok for a in answers if a.ended < death.issued),
            equal(0)),
        "master_lost: failed_on_healthy_shards": (
            sum(not a.ok for a in healthy_answers), equal(0)),
        "master_lost: sent_again_on_healthy_shards": (
            sum(a.resent for a in healthy_answers), equal(0)),
        "master_lost: sent_again_on_lost_shard": (sum(a.resent for a in lost_answers),
                                                  equal(0)),
        # HAProxy keeps the players' connections alive: resending was possible.
        "master_lost: kept_alive_share": (summary(answers)["kept_alive_share"],
                                          at_least(0.9)),
        "master_lost: answers_other_than_200_or_503_with_retry_after": (
            sum(not a.ok and not a.acceptable_failure for a in answers), equal(0)),
        # Back, game by game: the first success after the game's last failure.
        "master_lost: lost_shard_games_never_read_again": (
            sum(t is None for t in back["read"].values()), equal(0)),
        "master_lost: lost_shard_games_never_written_again": (
            sum(t is None for t in back["write"].values()), equal(0)),
        "master_lost: promotion_to_reads_back_max_s": (reads_max, at_most(BACK_WITHIN)),
        "master_lost: promotion_to_reads_back_median_s": (reads_median, at_most(BACK_WITHIN)),
        "master_lost: promotion_to_writes_back_max_s": (writes_max, at_most(BACK_WITHIN)),
        "master_lost: promotion_to_writes_back_median_s": (writes_median,
                                                           at_most(BACK_WITHIN)),
        "master_lost: acknowledged_moves": (sum(acknowledged.values()), at_least(len(games))),
        "master_lost: acknowledged_moves_lost": (
            sum(max(0, acknowledged[g] - found[g]) for g in found), equal(0)),
        "master_lost: moves_applied_twice": (
            sum(max(0, found[g] - acknowledged[g]) for g in found), equal(0)),
    })
    _players_exactly_once(base, accounts, owners_answers, on_victim, killed, promoted,
                          acknowledged_all)


def _settled_views(base: str, accounts: list) -> tuple[dict, dict, float | None]:
    """The players' lists and statistics as first read, then once they stopped changing
    (unchanged for :data:`SETTLED_AFTER` seconds), and the seconds from the start of the
    first read to the end of the read that found them as they stayed (None: still
    changing after :data:`SWEEPER_WAIT_WITHIN` seconds)."""
    begun = time.monotonic()
    first = views = None
    changed = begun
    while True:
        found = player_views(base, accounts)
        first = first or found
        now = time.monotonic()
        if found != views:
            views, changed = found, now
        elif now - changed >= SETTLED_AFTER:
            return first, views, round(changed - begun, 1)
        if now - begun > SWEEPER_WAIT_WITHIN:
            return first, views, None
        time.sleep(max(0.2, changed + SETTLED_AFTER - time.monotonic()))


def _players_exactly_once(base: str, accounts: list, answers: list, on_victim,
                          killed: float, promoted: float, acknowledged_all: float) -> None:
    """Every player's list and statistics against what was acknowledged to it and the
    games themselves, once the sweeper is done."""
    owned = [game_id for account in accounts for game_id in account.games]
    games = read_games(base, owned)
    first, views, waited = _settled_views(base, accounts)
    missing = extra = twice = summaries_behind = 0
    counted_twice = not_counted = players_miscounted = 0
    for account in accounts:
        summaries, stats = views[account.id]
        listed = [summary["id"] for summary in summaries]
        missing += len(set(account.games) - set(listed))
        extra += len(set(listed) - set(account.games))
        twice += len(listed) - len(set(listed))
        summaries_behind += sum(summary["status"] != games[summary["id"]]["status"]
                                for summary in summaries if summary["id"] in games)
        expected = tally([games[game_id] for game_id in account.games])
        differences = [stats.get(variant, {}).get(name, 0)
                       - expected.get(variant, {}).get(name, 0)
                       for variant in set(stats) | set(expected) for name in COUNTED]
        counted_twice += sum(max(0, difference) for difference in differences)
        not_counted += sum(max(0, -difference) for difference in differences)
        players_miscounted += any(differences)
    refused = [a for a in answers if a.acceptable_failure]
    owner_of = {game_id: account for account in accounts for game_id in account.games}
    record(SECTION, detail=[f"{a.kind} {a.status} {a.error}" for a in answers
                            if a.status not in (200, 201) and not a.acceptable_failure][:10],
           **{
        "players: accounts": (len(accounts), equal(PLAYERS)),
        "players: accounts_on_lost_shard": (
            sum(on_victim(account.id, "player") for account in accounts),
            between(PLAYERS // 10, PLAYERS - PLAYERS // 10)),
        "players: creates_acknowledged": (len(owned), at_least(PLAYERS)),
        "players: games_on_lost_shard": (sum(on_victim(game_id) for game_id in owned),
                                         between(len(owned) // 10, len(owned) - len(owned) // 10)),
        "players: games_with_game_or_player_on_lost_shard": (
            sum(on_victim(game_id) or on_victim(account.id, "player")
                for account in accounts for game_id in account.games), at_least(len(owned) // 4)),
        "players: resigned": (sum(game["status"] == "resigned" for game in games.values()),
                              equal(PLAYERS - PLAYED_GAMES)),
        # The outage was seen by the players' creates and resignations, and none was
        # answered otherwise than acknowledged or 503 with Retry-After.
        "players: requests_from_the_kill_on": (len(answers), at_least(PLAYERS - PLAYED_GAMES)),
        "players: requests_sent_between_kill_and_promotion": (
            sum(killed < a.started < promoted for a in answers), at_least(1)),
        "players: creates_answered_503_with_retry_after": (
            sum(a.kind == "create" for a in refused), at_least(1)),
        "players: resignations_answered_503_with_retry_after": (
            sum(a.kind == "resign" for a in refused), at_least(0)),
        "players: answers_other_than_acknowledged_or_503_with_retry_after": (
            sum(a.status not in (200, 201) and not a.acceptable_failure for a in answers),
            equal(0)),
        "players: last_acknowledged_after_the_promotion_s": (
            round(acknowledged_all - promoted, 1), at_most(60.0)),
        # A resignation acknowledged while its player's keys were on no master: the
        # request could not project it, the sweeper did.
        "players: resignations_left_to_the_sweeper": (
            sum(a.kind == "resign" and a.ok and killed < a.started and a.ended < promoted
                and on_victim(owner_of[a.game].id, "player") for a in answers),
            at_least(0)),
        "players: sweeper_wait_s": (waited, at_most(SWEEPER_WAIT_WITHIN)),
        # Players whose list or statistics the sweeper completed after they were first
        # read (projections the requests left in the outboxes).
        "players: players_completed_while_waiting": (
            sum(first[account.id] != views[account.id] for account in accounts),
            between(0, PLAYERS)),
        # Each list is exactly the games acknowledged to its player...
        "players: listed_games_missing": (missing, equal(0)),
        "players: listed_games_extra": (extra, equal(0)),
        "players: listed_games_twice": (twice, equal(0)),
        "players: summaries_behind_their_game": (summaries_behind, equal(0)),
        # ...and its statistics are those of its games.
        "players: stats_counted_twice": (counted_twice, equal(0)),
        "players: stats_not_counted": (not_counted, equal(0)),
        "players: players_whose_stats_differ": (players_miscounted, equal(0)),
    })


#: Players while an API replica is killed for good.
PLAYERS_OF_A_KILLED_REPLICA = 2


def test_an_api_replica_killed_for_good_goes_unnoticed(cluster):
    deployment, base, _prefix = cluster
    games = salic_law_games(requests.Session(), base, 6)
    stop, players = run_players(base, games, PLAYERS_OF_A_KILLED_REPLICA)
    try:
        time.sleep(1.5)
        killed = deployment.kill_for_good("api-2").reported
        deployment.wait_for(lambda: _states(deployment).get("api/api-2", "UP") != "UP", 30,
                            "HAProxy taking api-2 out", pause=0.2)
        out = time.monotonic() - killed
        time.sleep(2.0)
    finally:
        answers = stop_players(stop, players)
    after = [answer for answer in answers if answer.started >= killed]
    figures, since_kill = summary(answers), summary(after)
    failures = [f"{a.kind} {a.status} {a.error} {a.started - killed:+.2f}..{a.ended - killed:+.2f} "
                f"s from the kill" for a in answers if not a.ok]
    record(SECTION, detail=failures[:10], **{
        "api_replica_killed: out_of_rotation_after_the_kill_s": (round(out, 1),
                                                                 at_most(10.0)),
        "api_replica_killed: requests_after_the_kill": (since_kill["requests"], at_least(20)),
        "api_replica_killed: failed": (figures["failed"], equal(0)),
        # A player's kept-alive connection to HAProxy may close, no byte answered, as the
        # replica behind it dies (1 in 2 of 3 full runs): HAProxy hands a client's next
        # request to the server connection its last went on (`http-reuse safe`), and when
        # that one is closed under it, it closes the client's so that the client sends it
        # again, as browsers do; once at most a player, and nothing failed (above).
        "api_replica_killed: sent_again": (figures["sent_again"],
                                           at_most(PLAYERS_OF_A_KILLED_REPLICA)),
        "api_replica_killed: kept_alive_share": (figures["kept_alive_share"], at_least(0.9)),
        "api_replica_killed: max_latency_after_the_kill_s": (since_kill["max_latency_s"],
                                                             at_most(LATENCY_WITHIN)),
    })
    assert docker("inspect", "--format", "{{.State.Status}}",
                  deployment.container("api-2")).stdout.strip() == "exited"
    assert versions(base, games) == {game.id: game.acknowledged for game in games}
