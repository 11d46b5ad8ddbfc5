"""End to end: the real gunicorn command of `make run` and docker-compose, on a free port,
against the harness's Redis, exercised over HTTP with requests."""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time

import pytest
import requests

from tests.e2e.support import Gunicorn


@pytest.fixture(scope="module")
def server(redis_server, tmp_path_factory):
    """gunicorn with two workers sharing Prometheus metrics through a directory."""
    metrics_dir = tmp_path_factory.mktemp("prometheus")
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    with Gunicorn(redis_server.url, log, GUNICORN_THREADS="4",
                  PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)) as running:
        yield running.base


@pytest.fixture
def http(server, clean_redis):
    with requests.Session() as session:
        yield server, session


def _auth(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.timeout(60)
def test_a_game_is_played_to_its_end_over_http(http):
    base, session = http
    created = session.post(f"{base}/v1/games", json={"variant": "four-corners"}, timeout=5)
    assert created.status_code == 201
    assert created.headers["Location"].startswith("/v1/games/")
    assert created.headers["ETag"] == '"0"'
    assert int(created.headers["RateLimit-Limit"]) == 100000
    assert "RateLimit-Remaining" in created.headers
    assert "RateLimit-Reset" in created.headers
    assert len(created.headers["X-Request-ID"]) == 32
    body = created.json()
    game, token = body["game"], body["player_token"]
    url = f"{base}{created.headers['Location']}"
    rng = random.Random(5)
    for _ in range(600):
        moves = session.get(f"{url}/moves", timeout=5).json()["moves"]
        if not moves:
            break
        move = {k: v for k, v in rng.choice(moves).items() if k != "card"}
        answer = session.post(f"{url}/moves", json=move, headers=_auth(token), timeout=5)
        assert answer.status_code == 200, answer.text
        assert answer.headers["ETag"] == f'"{answer.json()["game"]["version"]}"'
        if answer.json()["game"]["status"] != "playing":
            break
    else:
        session.post(f"{url}/moves", json={"type": "resign"}, headers=_auth(token), timeout=5)
    final = session.get(url, timeout=5).json()
    assert final["status"] in ("won", "lost", "resigned")
    commitment = f"four-corners:{final['seed']}:{final['salt']}"
    assert hashlib.sha256(commitment.encode()).hexdigest() == game["deal_commitment"]
    history = session.get(f"{url}/history", timeout=5).json()["moves"]
    assert len(history) == final["moves_made"] == final["version"]
    assert session.get(url, headers={"If-None-Match": f'"{final["version"]}"'},
                       timeout=5).status_code == 304
    assert session.delete(url, headers=_auth(token), timeout=5).status_code == 204
    assert session.get(url, timeout=5).status_code == 404


def _padded(size: int) -> bytes:
    head = b'{"variant": "salic-law"'
    return head + b" " * (size - len(head) - 1) + b"}"


def test_chunked_bodies_are_limited_to_16_kib(http):
    base, session = http
    headers = {"Content-Type": "application/json"}

    def chunks(data):
        for i in range(0, len(data), 1000):
            yield data[i:i + 1000]

    fits = session.post(f"{base}/v1/games", data=chunks(_padded(16384)), headers=headers,
                        timeout=5)
    assert fits.status_code == 201, fits.text
    too_big = session.post(f"{base}/v1/games", data=chunks(_padded(16385)), headers=headers,
                           timeout=5)
    assert too_big.status_code == 413
    assert too_big.json()["code"] == "body_too_large"
    declared = session.post(f"{base}/v1/games", data=_padded(20000), headers=headers, timeout=5)
    assert declared.status_code == 413


def test_racing_if_match_writes_through_gunicorn_one_wins(http):
    base, session = http
    body = session.post(f"{base}/v1/games", json={"variant": "salic-law"}, timeout=5).json()
    url = f"{base}/v1/games/{body['game']['id']}/moves"
    headers = {**_auth(body["player_token"]), "If-Match": '"0"'}
    barrier = threading.Barrier(8)
    statuses = []

    def write():
        barrier.wait()
        statuses.append(requests.post(url, json={"type": "deal"}, headers=headers,
                                      timeout=10).status_code)

    threads = [threading.Thread(target=write) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] + [412] * 7
    assert session.get(url.removesuffix("/moves"), timeout=5).json()["version"] == 1


def _sample(text: str, prefix: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(prefix))


def test_metrics_add_up_every_worker(http):
    base, session = http
    label = 'patience_games_created_total{variant="clock"}'
    before = _sample(session.get(f"{base}/metrics", timeout=5).text, label)
    for _ in range(6):
        assert requests.post(f"{base}/v1/games", json={"variant": "clock"},
                             timeout=5).status_code == 201  # new connections: both workers
    text = session.get(f"{base}/metrics", timeout=5).text
    assert _sample(text, label) == before + 6
    assert "patience_http_request_duration_seconds_bucket" in text


def test_request_lines_wait_in_batches_and_a_worker_that_stops_writes_them(redis_server,
                                                                             tmp_path):
    log = tmp_path / "gunicorn.log"
    ids = [f"batched-{n}" for n in range(12)]
    with Gunicorn(redis_server.url, log, LOG_LEVEL="INFO", LOG_FLUSH_SECONDS="600") as server:
        for request_id in ids:  # new connections: both workers
            assert requests.get(f"{server.base}/healthz", timeout=5,
                                headers={"X-Request-ID": request_id}).status_code == 200
        time.sleep(0.5)
        assert not any(request_id in server.log() for request_id in ids)  # in the batches
    lines = [json.loads(line) for line in log.read_text().splitlines()
             if line.startswith('{"level": "INFO", "logger": "patience.request"')]
    assert sorted(line["request_id"] for line in lines if line["request_id"] in ids) == \
        sorted(ids)  # written as the workers stopped


@pytest.mark.parametrize("events", [False, True], ids=["request group", "events group"])
def test_the_metrics_directory_a_group_made_is_removed_when_it_stops(redis_server, tmp_path,
                                                                      events):
    """Without PROMETHEUS_MULTIPROC_DIR, a group's arbiter makes the directory of its
    processes' metrics (in the temporary folder) and removes it when it stops: a restart
    leaves none behind."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    with Gunicorn(redis_server.url, tmp_path / "gunicorn.log", events=events,
                  TMPDIR=str(folder)) as server:
        assert requests.get(f"{server.base}/healthz", timeout=5).status_code == 200
        made = list(folder.glob("patience-metrics-*"))
        assert len(made) == 1, made
        assert any(made[0].glob("*.db"))  # the processes' metrics files
    assert list(folder.iterdir()) == []
