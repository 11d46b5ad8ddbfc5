"""End to end: a day's board followed like a game (``GET /v1/daily/<variant>/<day>/events``
asking for ``text/event-stream``), through real gunicorn.

- on one Redis, through ``python -m devtools.devserver`` (the request group, which hands
  the stream over, and the events group that holds it): a follower gets an event for each
  entry that lands in the board's top, with the JSON feed's ids and payloads; cut off, it
  resumes with ``Last-Event-ID`` and misses nothing, nor gets anything twice; heartbeats
  reach it while the board is quiet;
- a ``HEAD`` of a board's stream is its head alone;
- on the local Redis Cluster, with the events group on its own address (as behind the
  load balancer) and the writes on the request group: the same follow and resumption.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import pytest
import requests

from devtools.launch import DevServer
from tests.e2e.support import Gunicorn, head_of_a_stream_then_a_read
from tests.sse import Message, messages

#: Four Corners: its day's deal needs no proved-winnable pool (a random deal otherwise).
VARIANT = "four-corners"
HEARTBEAT = 0.5
DAILY = {"DAILY_ACCOUNT_RULE": "any", "WINNABLE_SEARCH_SECONDS": "0",
         "DAILY_LIVE_TOP": "100", "SSE_HEARTBEAT_SECONDS": str(HEARTBEAT),
         "RATELIMIT_DEFAULT": "100000 per minute"}


class BoardStream(threading.Thread):
    """A stream read over a raw TCP connection (chunked or not) in a thread, which
    :meth:`cut` cuts off as a lost network would."""

    def __init__(self, port: int, path: str, last_event_id: str | None = None):
        super().__init__(daemon=True)
        self.port, self.path, self.last_event_id = port, path, last_event_id
        self.head = b""
        self.received: list[Message] = []
        self.opened = threading.Event()
        self.sock: socket.socket | None = None

    def run(self):
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            resume = "" if self.last_event_id is None else \
                f"Last-Event-ID: {self.last_event_id}\r\n"
            self.sock.sendall(f"GET {self.path} HTTP/1.1\r\nHost: x\r\n"
                              f"Accept: text/event-stream\r\n{resume}\r\n".encode())
            buffer = b""
            while b"\r\n\r\n" not in buffer:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
            self.head, _, buffer = buffer.partition(b"\r\n\r\n")
            self.opened.set()
            chunked = b"transfer-encoding: chunked" in self.head.lower()
            for message in messages(self._body(buffer, chunked)):
                self.received.append(message)
        except OSError:
            return  # cut off
        finally:
            self.opened.set()
            if self.sock is not None:
                self.sock.close()

    def _body(self, buffer: bytes, chunked: bool):
        while True:
            if chunked:
                while b"\r\n" in buffer:
                    size_line, _, rest = buffer.partition(b"\r\n")
                    size = int(size_line, 16)
                    if size == 0:
                        return
                    if len(rest) < size + 2:
                        break
                    yield rest[:size]
                    buffer = rest[size + 2:]
            else:
                yield buffer
                buffer = b""
            chunk = self.sock.recv(65536)
            if not chunk:
                return
            buffer += chunk

    def events(self) -> list[Message]:
        return [message for message in self.received if message.event is not None]

    def heartbeats(self) -> int:
        return sum(message.comment == "heartbeat" for message in self.received)

    def cut(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.join(10)
        assert not self.is_alive()


def _open(port: int, path: str, last_event_id: str | None = None) -> BoardStream:
    stream = BoardStream(port, path, last_event_id)
    stream.start()
    assert stream.opened.wait(15)
    assert stream.head.startswith(b"HTTP/1.1 200"), stream.head
    assert b"text/event-stream" in stream.head.lower()
    return stream


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _play(base: str, day: str, names: list[str]) -> list[str]:
    """Each named player makes the day's ranked attempt and resigns it: their ids."""
    players = []
    with requests.Session() as session:
        for name in names:
            made = session.post(f"{base}/v1/players", json={"name": name}, timeout=10)
            assert made.status_code == 201, made.text
            player, token = made.json()["player"]["id"], made.json()["player_token"]
            started = session.post(f"{base}/v1/daily/{VARIANT}/{day}", timeout=10,
                                   headers={"Authorization": f"Bearer {token}"})
            assert started.status_code == 201, started.text
            game = started.json()["game"]
            ended = session.post(f"{base}/v1/games/{game['id']}/moves", timeout=10,
                                 json={"type": "resign"},
                                 headers={"Authorization": f"Bearer {token}"})
            assert ended.status_code == 200, ended.text
            players.append(player)
    return players


def _follow_cut_and_resume(write_base: str, stream_port: int) -> None:
    day = requests.get(f"{write_base}/v1/daily", timeout=10).json()["day"]
    path = f"/v1/daily/{VARIANT}/{day}/events"
    assert requests.get(f"{write_base}{path}", timeout=10).json()["events"] == []

    first = _open(stream_port, path)
    players = _play(write_base, day, ["ada", "bob", "cyd"])
    _wait_for(lambda: len(first.events()) >= 3, 20, "the follower got the first entries")
    # Quiet: the follower gets heartbeats.
    _wait_for(lambda: first.heartbeats() >= 1, 10, "a heartbeat while the board is quiet")
    first.cut()
    players += _play(write_base, day, ["dee", "eve", "fay"])  # while it is cut off
    resumed = _open(stream_port, path, last_event_id=first.events()[-1].id)
    players += _play(write_base, day, ["gus", "hal"])
    _wait_for(lambda: len(resumed.events()) >= 5, 20, "the resumed follower caught up")
    time.sleep(3 * HEARTBEAT)  # nothing more comes: no event twice
    resumed.cut()

    feed = requests.get(f"{write_base}{path}", timeout=10).json()["events"]
    followed = first.events() + resumed.events()
    # An event for each entry that landed in the top, each once, in order, with the JSON
    # feed's ids and payloads.
    assert len(feed) == len(players) == 8
    assert sorted(event["player_id"] for event in feed) == sorted(players)
    assert [message.event for message in followed] == ["entry"] * 8
    assert [message.id for message in followed] == [event["id"] for event in feed]
    assert [json.loads(message.data) for message in followed] == feed
    assert len(first.events()) == 3


@pytest.fixture(scope="module")
def instance(redis_server, tmp_path_factory):
    """``python -m devtools.devserver`` (both groups) on the harness's Redis; on a clean
    exit its log shows no traceback and no 500."""
    server = DevServer(tmp_path_factory.mktemp("board-follow"), REDIS_URL=redis_server.url,
                       LOG_LEVEL="WARNING", WEB_CONCURRENCY="1", GUNICORN_THREADS="8",
                       **DAILY)
    with server:
        yield server
        assert server.stop(30) == 0, "the devserver did not stop cleanly\n" + \
            server.log()[-5000:]
    text = server.log()
    assert "Traceback" not in text, text[-5000:]
    assert '"status": 500' not in text, text[-5000:]


def test_a_board_is_followed_through_both_groups_and_resumed_without_a_gap(instance,
                                                                            clean_redis):
    _follow_cut_and_resume(instance.base, instance.port)


def test_a_head_of_a_board_s_stream_is_its_head_alone(instance, clean_redis):
    day = requests.get(f"{instance.base}/v1/daily", timeout=10).json()["day"]
    head, rest = head_of_a_stream_then_a_read(instance.port,
                                              f"/v1/daily/{VARIANT}/{day}/events")
    assert head.startswith(b"HTTP/1.1 200"), head[:300]
    assert b"text/event-stream" in head.lower()
    assert rest.startswith(b"HTTP/1.1 200"), rest[:300]  # no byte of body before it


@pytest.mark.timeout(120)
def test_a_board_is_followed_on_the_cluster(redis_cluster, tmp_path):
    """The events group on its own address and the request group on another, both on the
    cluster: the board's channel reaches the events group's subscription, whichever node
    the board's slot is on."""
    redis_cluster.flushall()
    with Gunicorn(redis_cluster.url, tmp_path / "api.log", WEB_CONCURRENCY="1",
                  **DAILY) as api, \
            Gunicorn(redis_cluster.url, tmp_path / "events.log", events=True, **DAILY) as events:
        _follow_cut_and_resume(api.base, events.port)
