"""End to end: the events feed through real gunicorn servers (the command of `make run`
and docker-compose, gthread workers) on the harness's Redis.

- 50 Server-Sent Events streams held open at once on one server of two workers while
  moves are still answered (each within a generous 5 s), and every stream receives
  every event; the streams outlive gunicorn's worker `timeout`;
- a stream opened on one server (replica) follows moves, undos, autoplay and the
  deletion made through another;
- a gracefully stopping server ends its streams instead of waiting for them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from pathlib import Path

import pytest
import requests

from service.engine import Move
from tests.e2e.support import Gunicorn
from tests.sse import Message, messages

STREAMS = 50
HEARTBEAT = 0.5
WORKER_TIMEOUT = 3  # gunicorn's worker timeout: the streams must outlive it
STREAM = {"Accept": "text/event-stream"}


@contextlib.contextmanager
def _gunicorn(redis_url: str, log: Path, **env: str):
    """gunicorn with a short heartbeat and worker timeout: ``(base url, process)``."""
    with Gunicorn(redis_url, log, SSE_HEARTBEAT_SECONDS=str(HEARTBEAT),
                  GUNICORN_TIMEOUT=str(WORKER_TIMEOUT), **env) as running:
        yield running.base, running.process


@pytest.fixture(scope="module")
def server(redis_server, tmp_path_factory):
    """Two gthread workers of 64 threads; each admits up to 56 streams (so that all 50
    may land on one worker and still leave it threads for moves)."""
    log = tmp_path_factory.mktemp("gunicorn-events") / "gunicorn.log"
    with _gunicorn(redis_server.url, log, WEB_CONCURRENCY="2", GUNICORN_THREADS="64",
                   SSE_MAX_STREAMS="56") as (base, _process):
        yield base


def _auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def _create(base: str, variant: str, **fields) -> tuple[str, str]:
    answer = requests.post(f"{base}/v1/games", json={"variant": variant, **fields}, timeout=5)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return f"{base}/v1/games/{body['game']['id']}", body["player_token"]


class Follower(threading.Thread):
    """Reads one stream over HTTP in a thread until it closes (or ``stop()``)."""

    def __init__(self, url: str, **headers: str):
        super().__init__(daemon=True)
        self.url, self.headers = url, headers
        self.opened = threading.Event()
        self.received: list[Message] = []
        self.error: BaseException | None = None
        self.status: int | None = None
        self.response: requests.Response | None = None

    def run(self):
        try:
            with requests.get(self.url, headers={**STREAM, **self.headers}, stream=True,
                              timeout=(5, 10)) as response:
                self.response = response
                self.status = response.status_code
                assert response.status_code == 200, response.text
                assert response.headers["Content-Type"].startswith("text/event-stream")
                for message in messages(response.iter_content(chunk_size=None)):
                    if message.retry is not None:
                        self.opened.set()
                    self.received.append(message)
        except BaseException as error:  # the test reports it
            self.error = error
        finally:
            self.opened.set()

    def events(self) -> list[Message]:
        return [message for message in self.received if message.event is not None]


def _metric(base: str, name: str) -> float:
    text = requests.get(f"{base}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith((name + " ", name + "{")))


def _wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.timeout(90)
def test_fifty_open_streams_do_not_stop_moves(server, clean_redis):
    url, token = _create(server, "salic-law", seed=42, undo="full")
    started = time.monotonic()
    followers = [Follower(f"{url}/events") for _ in range(STREAMS)]
    for follower in followers:
        follower.start()
    for follower in followers:
        assert follower.opened.wait(15), "a stream did not open"
    assert [f.error for f in followers if f.error] == []
    # All 50 are held open at once (the gauge adds up both workers).
    _wait_for(lambda: _metric(server, "patience_event_streams") == STREAMS, 10,
              "the server does not count 50 open streams")

    moves = [{"type": "deal"}] * 12
    with requests.Session() as session:
        for index, move in enumerate(moves):
            before = time.monotonic()
            answer = session.post(f"{url}/moves", json=move, headers=_auth(token), timeout=5)
            assert answer.status_code == 200, answer.text
            assert session.get(f"{url}/hint", timeout=5).status_code == 200
            assert time.monotonic() - before < 5
            if index == 5:  # hold the streams past gunicorn's worker timeout
                time.sleep(max(0.0, WORKER_TIMEOUT + 1 - (time.monotonic() - started)))
        assert session.post(f"{url}/undo", headers=_auth(token), timeout=5).status_code == 200
        final = session.post(f"{url}/moves", json={"type": "resign"}, headers=_auth(token),
                             timeout=5)
        assert final.status_code == 200
    for follower in followers:
        follower.join(15)
        assert not follower.is_alive(), "a stream did not close at the end of the game"
        assert follower.error is None, repr(follower.error)
    expected = [(str(v), "move") for v in range(1, 13)] + [("13", "undo"), ("14", "move"),
                                                             (None, "end")]
    for follower in followers:
        assert [(m.id, m.event) for m in follower.events()] == expected
        assert any(m.comment == "heartbeat" for m in follower.received)
        assert follower.events()[-1].json()["game"]["status"] == "resigned"
    assert time.monotonic() - started > WORKER_TIMEOUT + 1
    _wait_for(lambda: _metric(server, "patience_event_streams") == 0, 10,
              "closed streams are still counted")


@pytest.mark.timeout(90)
def test_a_stream_on_one_replica_follows_writes_on_another(server, redis_server, clean_redis,
                                                           tmp_path):
    with _gunicorn(redis_server.url, tmp_path / "replica.log", WEB_CONCURRENCY="1",
                   GUNICORN_THREADS="8") as (replica, process):
        url, token = _create(server, "salic-law", seed=42, undo="full")
        game_path = url.removeprefix(server)
        follower = Follower(f"{replica}{game_path}/events")
        follower.start()
        assert follower.opened.wait(10)
        with requests.Session() as session:
            for text in ["deal"] * 22 + ["king-2>foundation-1", "deal"]:
                answer = session.post(f"{url}/moves", json=Move.parse(text).to_dict(),
                                      headers=_auth(token), timeout=5)
                assert answer.status_code == 200, answer.text
            assert session.post(f"{url}/undo", headers=_auth(token), timeout=5).status_code \
                == 200
            played = session.post(f"{url}/autoplay", headers=_auth(token), timeout=5)
            assert played.status_code == 200
            version = played.json()["game"]["version"]
            _wait_for(lambda: len(follower.events()) >= version, 10,
                      "the replica's stream missed events")
            # The same entries as the JSON feed of the first server, in order.
            feed = session.get(f"{url}/events?after=0", timeout=5).json()["events"]
            assert [m.json() for m in follower.events()] == feed
            assert [m.id for m in follower.events()] == [str(e["version"]) for e in feed]
            # Resuming on the first server where the replica's stream stands.
            resumed = Follower(f"{url}/events", **{"Last-Event-ID": str(version - 1)})
            resumed.start()
            _wait_for(lambda: len(resumed.events()) >= 1, 10, "no resumed event")
            assert resumed.events()[0].id == str(version)
            assert session.delete(url, headers=_auth(token), timeout=5).status_code == 204
        for stream in (follower, resumed):
            stream.join(10)
            assert not stream.is_alive()
            assert stream.error is None, repr(stream.error)
            assert stream.events()[-1].event == "deleted"
        assert requests.get(f"{replica}{game_path}/events", headers=STREAM,
                            timeout=5).status_code == 404

        # A graceful stop (SIGTERM) ends the replica's open streams at once rather than
        # waiting for them through the graceful timeout (30 s).
        url, _token = _create(server, "clock")
        last = Follower(f"{replica}{url.removeprefix(server)}/events")
        last.start()
        assert last.opened.wait(10)
        stopping = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(20)
        assert time.monotonic() - stopping < 10
        last.join(5)
        assert not last.is_alive()
        assert [m for m in last.events() if m.event in ("end", "deleted")] == []


def test_a_request_process_keeps_threads_for_moves(redis_server, clean_redis, tmp_path):
    """Without SSE_MAX_STREAMS, a process of the request group serving streams itself
    holds at most its threads less a quarter (at least 4 kept): 4 of its 8 threads."""
    with _gunicorn(redis_server.url, tmp_path / "gunicorn.log", WEB_CONCURRENCY="1",
                   GUNICORN_THREADS="8", SSE_MAX_STREAMS="") as (base, _process):
        url, token = _create(base, "clock", seed=42)
        streams = [requests.get(f"{url}/events", headers=STREAM, stream=True, timeout=5)
                   for _ in range(4)]
        try:
            assert [stream.status_code for stream in streams] == [200] * 4
            refused = requests.get(f"{url}/events", headers=STREAM, timeout=5)
            assert refused.status_code == 503
            assert refused.json()["code"] == "too_many_streams"
            moved = requests.post(f"{url}/moves", json={"type": "resign"},
                                  headers=_auth(token), timeout=5)
            assert moved.status_code == 200
        finally:
            for stream in streams:
                stream.close()
