"""Redis faults under a real gunicorn (two workers, rate limits on), on a Redis of this
module's own (append-only, fsync on every write), reached through a proxy that can hang:

- Redis SIGKILLed in the middle of play: requests answer 503 problem details with
  Retry-After within a bounded time, /readyz 503; Redis restarted on the same AOF files:
  the same workers (no restart) serve again, and the history holds exactly every move a
  client saw acknowledged (the client retried each 503 with the same Idempotency-Key);
- Redis paused (CLIENT PAUSE), asleep (DEBUG SLEEP), or the network to it hanging: 503
  within the bound, then service resumes by itself, and a write answered 503 and retried
  with its key is applied exactly once.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from devtools.redis_server import RedisServer
from service.engine import Move, get_variant
from tests.e2e.support import Gunicorn
from tests.faults import RedisProxy

TIMEOUT = 0.4  # REDIS_SOCKET_TIMEOUT and REDIS_CONNECT_TIMEOUT of the server
BOUND = 3.5  # a generous bound on a 503 (limiter and store may each wait TIMEOUT)
FAULT = 4.0  # seconds a pause or a sleep of Redis lasts (longer than BOUND)


@pytest.fixture(scope="module")
def redis_always(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis-always"), appendonly=True,
                         appendfsync="always")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def proxy(redis_always):
    with RedisProxy((redis_always.host, redis_always.port)) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def server(proxy, tmp_path_factory):
    log = tmp_path_factory.mktemp("faults") / "gunicorn.log"
    with Gunicorn(proxy.url, log, REDIS_SOCKET_TIMEOUT=str(TIMEOUT),
                  REDIS_CONNECT_TIMEOUT=str(TIMEOUT), GUNICORN_THREADS="8") as server:
        server.first_workers = server.workers()
        yield server


@pytest.fixture
def http(server, redis_always, proxy):
    if not redis_always.running:
        redis_always.start()
    proxy.hang = False
    with redis_always.client() as raw:
        raw.flushall()
    with requests.Session() as session:
        yield server.base, session
    # The fault was survived without a restart: the same master, the same workers.
    assert server.process.poll() is None
    assert server.workers() == server.first_workers


def _unavailable(response, started: float) -> None:
    elapsed = time.monotonic() - started
    assert response.status_code == 503, response.text
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "storage_unavailable"
    assert response.json()["status"] == 503
    assert int(response.headers["Retry-After"]) >= 1
    assert elapsed < BOUND, f"the 503 took {elapsed:.2f} s"


OUTAGE_REQUESTS = [
    ("GET", "/readyz", None, {}),
    ("GET", "{game}", None, {}),
    ("GET", "{game}/moves", None, {}),
    ("GET", "{game}/history", None, {}),
    ("GET", "{game}/events", None, {}),
    ("POST", "/v1/games", {"variant": "clock"}, {}),
    # A write that cannot change anything even if Redis runs it late (a wrong token).
    ("POST", "{game}/moves", {"type": "resign"}, {"Authorization": "Bearer " + "A" * 43}),
]


def _during_outage(base: str, game_url: str, extra=()) -> list:
    """Send every kind of request that needs Redis at once; each must answer a bounded
    503; the probes and what needs no storage still answer 200."""

    def send(request):
        method, url, body, headers = request
        url = url.format(game=game_url) if url.startswith("{") else base + url
        started = time.monotonic()
        response = requests.request(method, url, json=body, headers=headers, timeout=10)
        return response, started

    with ThreadPoolExecutor(len(OUTAGE_REQUESTS) + len(extra)) as pool:
        answers = list(pool.map(send, [*OUTAGE_REQUESTS, *extra]))
    for response, started in answers:
        _unavailable(response, started)
    for path in ("/healthz", "/v1/variants"):  # no storage needed: still served
        assert requests.get(base + path, timeout=10).status_code == 200
    return answers


def _resumed(base: str) -> None:
    deadline = time.monotonic() + 10
    while requests.get(f"{base}/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "service did not resume"
        time.sleep(0.05)


class Player(threading.Thread):
    """Plays listed moves one after another, each with its own Idempotency-Key; a 503
    is retried with the same key and the same move until it is acknowledged."""

    def __init__(self, base: str, game: dict, token: str):
        super().__init__(daemon=True)
        self.base, self.url = base, f"{base}/v1/games/{game['id']}"
        self.headers = {"Authorization": f"Bearer {token}"}
        self.acknowledged: list[dict] = []  # {"version", "move", "events"}
        self.unavailable: list[requests.Response] = []
        self.slowest_503 = 0.0
        self.stop = threading.Event()
        self.rng = random.Random(7)
        self.error: BaseException | None = None

    def _until_ok(self, method: str, url: str, **kwargs) -> requests.Response:
        deadline = time.monotonic() + 30
        while True:
            started = time.monotonic()
            response = requests.request(method, url, timeout=10, **kwargs)
            if response.status_code != 503:
                return response
            self.slowest_503 = max(self.slowest_503, time.monotonic() - started)
            self.unavailable.append(response)
            assert time.monotonic() < deadline
            time.sleep(0.05)

    def run(self):
        try:
            while not self.stop.is_set():
                moves = self._until_ok("GET", f"{self.url}/moves").json()["moves"]
                if not moves:
                    return
                move = {k: v for k, v in self.rng.choice(moves).items() if k != "card"}
                key = f"move-{len(self.acknowledged)}"
                answer = self._until_ok("POST", f"{self.url}/moves", json=move,
                                        headers={**self.headers, "Idempotency-Key": key})
                assert answer.status_code == 200, answer.text
                body = answer.json()
                self.acknowledged.append({"version": body["game"]["version"], "move": move,
                                          "events": body["events"]})
                if body["game"]["status"] != "playing":
                    return
        except BaseException as error:  # reported by the test
            self.error = error

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 30
        while len(self.acknowledged) < count and self.is_alive():
            assert time.monotonic() < deadline
            time.sleep(0.01)


@pytest.mark.timeout(90)
def test_redis_killed_in_the_middle_of_play_loses_no_acknowledged_move(http, redis_always):
    base, session = http
    created = session.post(f"{base}/v1/games", json={"variant": "four-corners", "seed": 77},
                           timeout=10).json()
    game, token = created["game"], created["player_token"]
    player = Player(base, game, token)
    player.start()
    try:
        player.wait_for(8)
        redis_always.kill()  # SIGKILL while the player keeps playing
        _during_outage(base, player.url)
        time.sleep(0.5)
        assert player.is_alive()
        during = len(player.acknowledged)
        redis_always.start()  # the same port, the same append-only files
        _resumed(base)
        player.wait_for(during + 8)
    finally:
        player.stop.set()
        player.join(30)
    assert player.error is None, player.error
    assert player.unavailable, "the player never met the outage"
    assert player.slowest_503 < BOUND
    for response in player.unavailable:
        assert response.json()["code"] == "storage_unavailable"
        assert "Retry-After" in response.headers
    history = session.get(f"{player.url}/history", timeout=10).json()["moves"]
    assert history == player.acknowledged
    final = session.get(player.url, timeout=10).json()
    assert final["version"] == player.acknowledged[-1]["version"] == len(history)
    state = get_variant("four-corners").deal(77)
    for entry in history:
        state, step = state.apply(Move.from_dict(entry["move"]))
        assert [e.to_dict() for e in step.events] == entry["events"]
    assert {p["id"]: p["cards"] for p in final["piles"]} == {
        spec.id: [] if spec.kind == "stock" else [str(c) for c in cards]
        for spec, cards in zip(state.variant.layout, state.piles, strict=True)}


def _one_write_through(base: str, session, fault_start, fault_end) -> None:
    """Start a fault, see the 503s (bounded), send a keyed move into it, end the fault,
    see service resume by itself, retry the move: applied exactly once."""
    created = session.post(f"{base}/v1/games", json={"variant": "salic-law", "seed": 9},
                           timeout=10).json()
    url, token = f"{base}/v1/games/{created['game']['id']}", created["player_token"]
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "through-the-fault"}
    fault_start()
    try:
        _during_outage(base, url, [("POST", "{game}/moves", {"type": "deal"}, headers)])
    finally:
        fault_end()
    _resumed(base)
    retried = session.post(f"{url}/moves", json={"type": "deal"}, headers=headers, timeout=10)
    assert retried.status_code == 200, retried.text
    assert retried.json()["game"]["version"] == 1
    again = session.post(f"{url}/moves", json={"type": "deal"}, headers=headers, timeout=10)
    assert again.content == retried.content
    history = session.get(f"{url}/history", timeout=10).json()["moves"]
    assert [entry["version"] for entry in history] == [1]
    assert history[0]["events"] == retried.json()["events"]
    assert session.get(url, timeout=10).json()["version"] == 1


@pytest.mark.timeout(60)
def test_a_paused_redis(http, redis_always):
    base, session = http
    pauser = redis_always.client()
    until = []

    def pause():
        # Redis 6.2 pauses CLIENT UNPAUSE too: the pause ends by itself.
        pauser.execute_command("CLIENT", "PAUSE", int(FAULT * 1000), "ALL")
        until.append(time.monotonic() + FAULT)

    def wait():
        time.sleep(max(0.0, until[0] - time.monotonic()))

    _one_write_through(base, session, pause, wait)
    pauser.close()


@pytest.mark.timeout(60)
def test_a_sleeping_redis(http, redis_always):
    base, session = http
    sleeper = redis_always.client(socket_timeout=10)
    thread = threading.Thread(target=lambda: sleeper.execute_command("DEBUG", "SLEEP", str(FAULT)))

    def sleep():
        thread.start()
        time.sleep(0.1)  # DEBUG SLEEP has begun

    _one_write_through(base, session, sleep, lambda: thread.join(10))
    sleeper.close()


@pytest.mark.timeout(60)
def test_a_hanging_network_to_redis(http, proxy):
    base, session = http

    def hang():
        proxy.hang = True

    def unhang():
        proxy.hang = False

    _one_write_through(base, session, hang, unhang)



@pytest.mark.timeout(60)
def test_a_request_stuck_on_redis_holds_the_others_up_for_the_turn_s_wait_at_most(
        proxy, redis_always, tmp_path):
    """One request process with one turn through the app (REQUEST_SLOTS=1): while Redis
    hangs, every request that holds the turn waits out its timeout, and those behind it
    go in after REQUEST_SLOT_WAIT_SECONDS instead of one after the other: 8 requests at
    once all answer their 503 within about one request's timeouts, not eight's; and the
    metrics count the waits given up."""
    if not redis_always.running:
        redis_always.start()
    proxy.hang = False
    with Gunicorn(proxy.url, tmp_path / "gunicorn.log", REDIS_SOCKET_TIMEOUT=str(TIMEOUT),
                  REDIS_CONNECT_TIMEOUT=str(TIMEOUT), WEB_CONCURRENCY="1",
                  GUNICORN_THREADS="16", REQUEST_SLOTS="1",
                  REQUEST_SLOT_WAIT_SECONDS="0.05", RATELIMIT_ENABLED="false") as server:
        created = requests.post(f"{server.base}/v1/games", json={"variant": "clock"},
                                timeout=10)
        assert created.status_code == 201, created.text
        game_url = f"{server.base}/v1/games/{created.json()['game']['id']}"
        proxy.hang = True
        try:
            def read(_):
                started = time.monotonic()
                return requests.get(game_url, timeout=30), started

            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(read, range(8)))
        finally:
            proxy.hang = False
        slowest = max(time.monotonic() - started for _response, started in answers)
        for response, started in answers:
            _unavailable(response, started)
        # One request's storage timeouts, at most twice TIMEOUT each way, and the waits:
        # eight in a row would be at least 8 * TIMEOUT = 3.2 s.
        assert slowest < 2.5, f"the slowest 503 took {slowest:.2f} s"
        _resumed(server.base)
        text = requests.get(f"{server.base}/metrics", timeout=10).text
        given_up = next(float(line.split()[-1]) for line in text.splitlines()
                        if line.startswith("patience_request_slot_waits_given_up_total "))
        assert given_up >= 1, text
