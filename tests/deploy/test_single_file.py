"""docker-compose.yml on a real Docker Engine, driven as an operator drives it: built
from the Dockerfile (on the base images: official, or stand-ins), `up` once, everything through the
published port.

- a whole game played and followed over Server-Sent Events, the stream handed to the
  events container;
- Redis crashes (its process SIGKILLed: the restart policy brings it back), then is
  SIGKILLed by the engine (it stays down until started again): 503 with Retry-After
  meanwhile, then every game back at its version, nothing lost;
- `down` and `up` again keep the games (volumes).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from tests.deploy.clients import (
    Game,
    Player,
    auth,
    create,
    play_followed_game,
    recoveries,
    run_players,
    salic_law_games,
    spread,
    stop_players,
    summary,
    versions,
)
from tests.deploy.compose import DeployError, Deployment
from tests.deploy.conftest import deployment_env, project_name
from tests.deploy.figures import at_least, at_most, between, equal, record

pytestmark = pytest.mark.timeout(300)
SECTION = "single file (docker-compose.yml)"
KEPT: dict[str, int] = {}  # games and their versions, for the test of down and up
#: Seconds from `up` (or `up` after `down`) to GET /readyz answered (11 s and 22 s
#: measured on 2 loaded cores).
UP_WITHIN = 120
#: Seconds from Redis's crash to each game read and written again (about 2 s measured:
#: the restart policy, then Redis loading its append-only file).
CRASH_BACK_WITHIN = 10.0


@pytest.fixture(scope="module")
def single(base_images, app_image):
    """The deployment up, and its base URL (the published port)."""
    deployment = Deployment("docker-compose.yml", project_name("single"),
                            deployment_env(base_images, app_image, WEB_CONCURRENCY="1"))
    try:
        started = time.monotonic()
        deployment.up()
        base = f"http://{deployment.published('api', 8000)}"
        deployment.wait_ready(base)
        record(SECTION, up_to_ready_s=(round(time.monotonic() - started, 1),
                                       at_most(UP_WITHIN)))
        yield deployment, base
    finally:
        deployment.save_logs("deploy-single.log")
        deployment.remove()


def test_a_whole_game_played_and_followed_through_the_published_port(single):
    deployment, base = single
    session = requests.Session()
    game_id, final, events = play_followed_game(session, base, SECTION)
    moves = final["version"]
    # Every version once, in order (the event ids too), then the end with the final game.
    assert [message.id for message in events[:-1]] == [str(v) for v in range(1, moves + 1)]
    # The history says the same.
    history = session.get(f"{base}/v1/games/{game_id}/history", timeout=10).json()
    assert [entry["version"] for entry in history["moves"]] == list(range(1, moves + 1))
    # The stream was handed to the events container, which served it.
    assert f'"path": "/v1/games/{game_id}/events"' in deployment.logs("events")
    KEPT[game_id] = final["version"]


def test_a_redis_crash_answers_503_then_every_move_is_back(single):
    deployment, base = single
    session = requests.Session()
    games = salic_law_games(session, base, 4)
    restarts = deployment.restart_count("redis")
    stop, players = run_players(base, games, 2, pause=0.02)
    time.sleep(1.0)  # the players are under way when Redis dies
    death = deployment.crash("redis")
    killed = death.reported
    deployment.wait_for(lambda: deployment.restart_count("redis") == restarts + 1, 30,
                        "the restart policy restarting redis")
    restarted = time.monotonic()

    def every_game_back():
        answered = {(a.game, a.kind) for player in players for a in player.answers
                    if a.ok and a.started > restarted}
        return all((game.id, kind) in answered for game in games
                   for kind in ("read", "write"))

    with contextlib.suppress(DeployError):  # measured below
        deployment.wait_for(every_game_back, 30, "every game read and written again")
    time.sleep(1.0)  # and nothing fails afterwards
    answers = stop_players(stop, players)
    figures = summary(answers)
    ids = {game.id for game in games}
    # Back, game by game: the first success after the game's last failure.
    back = {kind: recoveries(answers, ids, kind) for kind in ("read", "write")}
    backs = [t - killed for found in back.values() for t in found.values() if t is not None]
    back_max, back_median = spread(backs)
    record(SECTION, **{
        # The outage was seen, and nothing but 503 with Retry-After meanwhile.
        "redis_crash: kill_issued_to_death_reported_s": (round(killed - death.issued, 2),
                                                         at_most(2.0)),
        "redis_crash: 503s_with_retry_after": (figures["answered_503_with_retry_after"],
                                               at_least(1)),
        "redis_crash: failed_before_the_kill": (
            sum(not a.ok for a in answers if a.ended < death.issued),
            equal(0)),
        "redis_crash: answers_other_than_200_or_503_with_retry_after": (
            len(figures["other_failures"]), equal(0)),
        "redis_crash: sent_again": (figures["sent_again"], equal(0)),
        "redis_crash: kept_alive_share": (figures["kept_alive_share"], at_least(0.5)),
        "redis_crash: games_whose_requests_failed": (
            len(set(back["read"]) | set(back["write"])), between(1, len(games))),
        "redis_crash: games_never_back": (
            sum(t is None for found in back.values() for t in found.values()), equal(0)),
        "redis_crash: kill_to_back_max_s": (back_max, at_most(CRASH_BACK_WITHIN)),
        "redis_crash: kill_to_back_median_s": (back_median, at_most(CRASH_BACK_WITHIN)),
    }, detail=figures["other_failures"])
    # Every write answered 200 is there, once.
    assert versions(base, games) == {game.id: game.acknowledged for game in games}
    KEPT.update(versions(base, games))


def test_redis_down_answers_503_with_retry_after_until_it_is_started(single):
    deployment, base = single
    session = requests.Session()
    game_id, token = create(session, base, variant="salic-law", seed=7)
    for version in range(3):
        answer = session.post(f"{base}/v1/games/{game_id}/moves", json={"type": "deal"},
                              headers=auth(token, **{"If-Match": f'"{version}"'}), timeout=10)
        assert answer.status_code == 200, answer.text
    deployment.kill("redis")
    for method, path, body in (("GET", f"/v1/games/{game_id}", None),
                               ("POST", f"/v1/games/{game_id}/moves", {"type": "deal"}),
                               ("GET", "/readyz", None)):
        answer = session.request(method, f"{base}{path}", json=body, timeout=10,
                                 headers=auth(token, **{"Idempotency-Key": "while-down"}))
        assert answer.status_code == 503, (path, answer.text)
        assert answer.headers.get("Retry-After"), path
        assert answer.json()["code"] == "storage_unavailable"
    assert session.get(f"{base}/healthz", timeout=10).status_code == 200
    # The operator starts it again: the game is where it was.
    deployment.start("redis")
    deployment.wait_ready(base, 60)
    assert session.get(f"{base}/v1/games/{game_id}", timeout=10).json()["version"] == 3
    KEPT[game_id] = 3


def test_down_and_up_keep_the_games(single):
    deployment, base = single
    assert KEPT, "the earlier tests of the module stored no game"
    deployment.down(volumes=False)
    started = time.monotonic()
    deployment.up()
    base = f"http://{deployment.published('api', 8000)}"
    deployment.wait_ready(base)
    record(SECTION, down_up_to_ready_s=(round(time.monotonic() - started, 1),
                                        at_most(UP_WITHIN)))
    with requests.Session() as session:
        for game_id, version in KEPT.items():
            answer = session.get(f"{base}/v1/games/{game_id}", timeout=10)
            assert answer.status_code == 200, answer.text
            assert answer.json()["version"] == version


@contextlib.contextmanager
def _scripted_server(script: list[str]) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 that handles each request it reads as ``script`` says,
    in turn: ``answer`` (200, kept alive), ``close`` (the connection closed unanswered)
    or ``partial`` (the start of a status line, then closed).  Its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    done = threading.Event()

    def serve():
        steps = iter(script)
        with contextlib.suppress(OSError, StopIteration):
            while not done.is_set():
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    continue
                connection.settimeout(10)
                with connection:
                    while True:
                        head = b""
                        while b"\r\n\r\n" not in head:
                            data = connection.recv(65536)
                            if not data:
                                break
                            head += data
                        if not head:
                            break
                        step = next(steps)
                        if step == "answer":
                            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                               b"Content-Type: application/json\r\n\r\n{}")
                            continue
                        if step == "partial":
                            connection.sendall(b"HTTP/1.1 2")
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        thread.join(10)
        listener.close()


@pytest.mark.parametrize(("script", "expected"), [
    # A kept-alive connection closed before any byte of the answer: sent again (on a
    # new connection).
    (["answer", "close", "answer"], (200, True, False, None)),
    # Part of an answer arrived: not sent again, a failure.
    (["answer", "partial", "answer"], (None, False, True, "BadStatusLine")),
])
def test_the_players_send_again_only_what_a_kept_alive_connection_lost_unanswered(
        script, expected):
    game = Game("game", "token")
    with _scripted_server(script) as base:
        player = Player(base, [game], threading.Event(), timeout=5)
        first, second = player.read(game), player.read(game)
        player.connection.close()
    assert (first.status, first.resent, first.kept_alive) == (200, False, False)
    assert (second.status, second.resent, second.kept_alive,
            (second.error or "").split(":")[0] or None) == expected


def test_the_players_never_send_again_on_a_new_connection():
    game = Game("game", "token")
    with _scripted_server(["close", "answer"]) as base:
        player = Player(base, [game], threading.Event(), timeout=5)
        answer = player.read(game)
        player.connection.close()
    assert (answer.status, answer.resent, answer.kept_alive) == (None, False, False)
    assert answer.error.startswith("RemoteDisconnected")
