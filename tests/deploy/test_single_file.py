"""docker-compose.yml on a real Docker Engine, driven as an operator drives it: built
from the Dockerfile (on the stand-in base images), `up` once, everything through the
published port.

- a whole game played and followed over Server-Sent Events, the stream handed to the
  events container;
- Redis crashes (its process SIGKILLed: the restart policy brings it back), then is
  SIGKILLed by the engine (it stays down until started again): 503 with Retry-After
  meanwhile, then every game back at its version, nothing lost;
- `down` and `up` again keep the games (volumes).
"""

from __future__ import annotations

import time

import pytest
import requests

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
from tests.deploy.compose import Deployment
from tests.deploy.conftest import deployment_env, project_name, record

pytestmark = pytest.mark.timeout(300)
SECTION = "single file (docker-compose.yml)"
KEPT: dict[str, int] = {}  # games and their versions, for the test of down and up


def _wait_ready(deployment: Deployment, base: str, seconds: float = 90) -> None:
    def ready():
        try:
            return requests.get(f"{base}/readyz", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    deployment.wait_for(ready, seconds, "GET /readyz through the published port")


@pytest.fixture(scope="module")
def single(base_images, app_image):
    """The deployment up, and its base URL (the published port)."""
    deployment = Deployment("docker-compose.yml", project_name("single"),
                            deployment_env(base_images, app_image, WEB_CONCURRENCY="1"))
    try:
        started = time.monotonic()
        deployment.up()
        base = f"http://{deployment.published('api', 8000)}"
        _wait_ready(deployment, base)
        record(SECTION, up_to_ready_s=round(time.monotonic() - started, 1))
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
    killed = deployment.crash("redis")
    deployment.wait_for(lambda: deployment.restart_count("redis") == restarts + 1, 30,
                        "the restart policy restarting redis")
    back = deployment.wait_for(
        lambda: next((a.ended for player in players for a in player.answers[-4:]
                      if a.ok and a.kind == "write" and a.started > killed), None),
        30, "a write answered 200 after the crash")
    time.sleep(1.0)
    answers = stop_players(stop, players)
    figures = summary(answers)
    after = [answer for answer in answers if answer.started >= killed]
    failed = [answer for answer in after if not answer.ok]
    record(SECTION, redis_crash=f"restarted by its policy; first write answered 200 "
                                f"{back - killed:.2f} s after the kill; "
                                f"{len(failed)} of {len(after)} requests after the kill "
                                f"answered 503 with Retry-After "
                                f"(max latency {figures['max_latency_s']} s)")
    assert figures["other_failures"] == [], figures
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
    _wait_ready(deployment, base, 60)
    assert session.get(f"{base}/v1/games/{game_id}", timeout=10).json()["version"] == 3
    KEPT[game_id] = 3


def test_down_and_up_keep_the_games(single):
    deployment, base = single
    assert KEPT, "the earlier tests of the module stored no game"
    deployment.down(volumes=False)
    started = time.monotonic()
    deployment.up()
    base = f"http://{deployment.published('api', 8000)}"
    _wait_ready(deployment, base)
    record(SECTION, down_up_to_ready_s=round(time.monotonic() - started, 1))
    with requests.Session() as session:
        for game_id, version in KEPT.items():
            answer = session.get(f"{base}/v1/games/{game_id}", timeout=10)
            assert answer.status_code == 200, answer.text
            assert answer.json()["version"] == version
