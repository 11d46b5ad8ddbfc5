"""End to end: many followers through `make run`'s own command (``python -m
devtools.devserver``: the request group, which hands every events stream over, and the
events group of one gevent worker that holds them), on the harness's Redis.

- 500 streams on one game all get every event, in order, the same bytes as the JSON feed;
- a follower that reads nothing does not hold the others up, and resumes without a gap;
- SIGTERM to the events worker ends its streams cleanly (the response's last chunk), and
  the clients resume with Last-Event-ID on the worker gunicorn starts again, missing
  nothing that was played meanwhile;
- past EVENTS_MAX_STREAMS, a stream answers 503 ``too_many_streams``;
- without an events group, the request workers serve the stream themselves.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
from collections import Counter

import pytest
import requests

from bench.walks import long_walks
from devtools.launch import DevServer
from tests.e2e.support import Gunicorn
from tests.sse import parse_block

CAP = 500
HEARTBEAT = 0.5


def events_worker(instance: DevServer) -> int | None:
    """The pid of the events group's (one) worker, once it runs."""
    group = instance.parts().get("events group", [])
    return group[1] if len(group) > 1 else None


@pytest.fixture(scope="module")
def instance(redis_server, tmp_path_factory):
    """``python -m devtools.devserver`` on the harness's Redis; on a clean exit its log
    shows no traceback and no 500."""
    server = DevServer(tmp_path_factory.mktemp("follow"), REDIS_URL=redis_server.url,
                       LOG_LEVEL="WARNING", WEB_CONCURRENCY="2", GUNICORN_THREADS="16",
                       RATELIMIT_DEFAULT="100000 per minute", EVENTS_MAX_STREAMS=str(CAP),
                       SSE_HEARTBEAT_SECONDS=str(HEARTBEAT), SSE_BACKLOG_BYTES="4096")
    with server:
        yield server
        assert server.stop(30) == 0, "the devserver did not stop cleanly within 30 s\n" + \
            server.log()[-5000:]
    text = server.log()
    assert "Traceback" not in text, text[-5000:]
    assert '"status": 500' not in text, text[-5000:]


@pytest.fixture(scope="module")
def walks():
    """Deals of the Clock with long sequences of legal moves that never end the game."""
    return long_walks(["clock"], 2, 120) + long_walks(["clock"], 1, 200, first_seed=1000)


def _streams_open(base: str) -> float:
    text = requests.get(f"{base}/metrics", timeout=5).text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith("patience_event_streams"))


@pytest.fixture
def no_streams(instance, clean_redis):
    """Each test starts once the streams of the one before are gone (the server notices
    a closed client at its next heartbeat)."""
    deadline = time.monotonic() + 15
    while _streams_open(instance.base) > 0:
        assert time.monotonic() < deadline, "streams of an earlier test are still open"
        time.sleep(0.2)


def _create(base: str, walk) -> tuple[str, str]:
    answer = requests.post(f"{base}/v1/games", json={"variant": "clock", "seed": walk.seed},
                           timeout=10)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    return body["game"]["id"], body["player_token"]


def _play(base: str, game_id: str, token: str, moves, first: int) -> None:
    with requests.Session() as session:
        for version, move in enumerate(moves, first):
            answer = session.post(f"{base}/v1/games/{game_id}/moves", json=move, timeout=10,
                                  headers={"Authorization": f"Bearer {token}",
                                           "If-Match": f'"{version}"'})
            assert answer.status_code == 200, answer.text


class Stream:
    """A Server-Sent Events stream read over a raw TCP connection (chunked or not)."""

    def __init__(self, port: int, game_id: str, last_event_id: int | None = None,
                 rcvbuf: int | None = None):
        self.port, self.game_id = port, game_id
        self.last_event_id = last_event_id
        self.rcvbuf = rcvbuf
        self.status = 0
        self.body = b""  # the body of a refusal
        self.events: list = []  # (id, event, data) of every event, in order
        self.clean_end = False  # the response ended with its last chunk
        self.reader = self.writer = self.sock = None

    async def open(self) -> Stream:
        sock = self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        self.reader, self.writer = await asyncio.open_connection(sock=sock)
        resume = "" if self.last_event_id is None else \
            f"Last-Event-ID: {self.last_event_id}\r\n"
        self.writer.write(f"GET /v1/games/{self.game_id}/events HTTP/1.1\r\nHost: x\r\n"
                          f"Accept: text/event-stream\r\n{resume}\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        self.status = int(head[9:12])
        if self.status != 200:
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            self.body = await self.reader.readexactly(length)
            self.writer.close()
        return self

    async def read(self, until=None) -> None:
        """Read events until the response ends (or ``until(self)`` holds)."""
        buffer = b""
        try:
            while until is None or not until(self):
                size = int((await self.reader.readline()).strip(), 16)
                if size == 0:
                    self.clean_end = True
                    return
                buffer += (await self.reader.readexactly(size + 2))[:-2]
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    message = parse_block(block)
                    if message.event is not None:
                        self.events.append((message.id, message.event, message.data))
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return  # cut short: the client resumes

    def ids(self) -> list[int]:
        return [int(event_id) for event_id, _event, _data in self.events if event_id]

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        elif self.sock is not None:  # opening was cut short
            self.sock.close()


async def _closed(*streams: Stream) -> None:
    """Close the streams and let the event loop release their sockets."""
    for stream in streams:
        stream.close()
    await asyncio.sleep(0.05)


def _json_feed(base: str, game_id: str) -> list:
    entries = requests.get(f"{base}/v1/games/{game_id}/events", timeout=10).json()["events"]
    return [(str(entry["version"]), "move", json.dumps(entry, separators=(",", ":")))
            for entry in entries]


def _events_equal(stream_events: list, feed: list) -> bool:
    return [(i, e, json.loads(d)) for i, e, d in stream_events] == \
        [(i, e, json.loads(d)) for i, e, d in feed]


def test_five_hundred_streams_on_one_game_all_get_every_event_in_order(instance, walks,
                                                                          no_streams):
    game_id, token = _create(instance.base, walks[0])
    moves = walks[0].moves[:20]

    async def scenario():
        streams = await asyncio.gather(*(Stream(instance.port, game_id).open()
                                         for _ in range(CAP)))
        assert [s.status for s in streams] == [200] * CAP, \
            {s.body for s in streams if s.status != 200}
        readers = [asyncio.ensure_future(s.read(lambda s: len(s.events) >= len(moves)))
                   for s in streams]
        await asyncio.to_thread(_play, instance.base, game_id, token, moves, 0)
        await asyncio.wait_for(asyncio.gather(*readers), 30)
        await _closed(*streams)
        return streams

    streams = asyncio.run(scenario())
    feed = _json_feed(instance.base, game_id)
    assert len(feed) == len(moves)
    for stream in streams:
        assert _events_equal(stream.events, feed)


def test_past_the_cap_a_stream_answers_503(instance, walks, no_streams):
    game_id, _token = _create(instance.base, walks[1])

    async def scenario():
        # Bounded: a stream never answered fails here, saying how many were, and every
        # socket is closed all the same (none is left to a later test).
        within = 30
        streams = [Stream(instance.port, game_id) for _ in range(CAP)]
        refused = Stream(instance.port, game_id)
        try:
            try:
                await asyncio.wait_for(asyncio.gather(*(s.open() for s in streams)), within)
            except TimeoutError:
                pytest.fail(f"{within} s after {CAP} streams were opened, answers by "
                            f"status: {Counter(s.status for s in streams)} (0: none yet)")
            assert [s.status for s in streams] == [200] * CAP
            await asyncio.wait_for(refused.open(), within)
        finally:
            await _closed(*streams, refused)
        return refused

    refused = asyncio.run(scenario())
    assert refused.status == 503
    body = json.loads(refused.body)
    assert body["code"] == "too_many_streams"
    assert body["status"] == 503
    # The places come back once the streams are gone (a heartbeat finds them closed).
    deadline = time.monotonic() + 10
    while True:
        answer = requests.get(f"{instance.base}/v1/games/{game_id}/events",
                              headers={"Accept": "text/event-stream"}, stream=True, timeout=5)
        answer.close()
        if answer.status_code == 200:
            break
        assert answer.status_code == 503
        assert time.monotonic() < deadline, "the streams' places never came back"
        time.sleep(HEARTBEAT)


def test_a_follower_that_reads_nothing_does_not_hold_up_the_others(instance, walks,
                                                                   no_streams):
    game_id, token = _create(instance.base, walks[2])
    moves = walks[2].moves

    async def scenario():
        # Its socket takes little, so the server's side fills up (what it cannot send
        # is dropped past SSE_BACKLOG_BYTES, and the connection closed).
        stuck = await Stream(instance.port, game_id, rcvbuf=2048).open()
        others = await asyncio.gather(*(Stream(instance.port, game_id).open()
                                        for _ in range(20)))
        readers = [asyncio.ensure_future(s.read(lambda s: len(s.events) >= len(moves)))
                   for s in others]
        started = time.monotonic()
        await asyncio.to_thread(_play, instance.base, game_id, token, moves, 0)
        await asyncio.wait_for(asyncio.gather(*readers), 20)
        elapsed = time.monotonic() - started
        # Only now does the stuck follower read: what it got is in order, and a resume
        # from its last id brings the rest.
        await stuck.read(lambda s: len(s.events) >= len(moves))
        resumed = None
        if len(stuck.events) < len(moves):
            last = stuck.ids()[-1] if stuck.ids() else 0
            resumed = await Stream(instance.port, game_id, last_event_id=last).open()
            await asyncio.wait_for(resumed.read(
                lambda s: last + len(s.events) >= len(moves)), 20)
        await _closed(stuck, *others, *([resumed] if resumed is not None else []))
        return stuck, resumed, others, elapsed

    stuck, resumed, others, elapsed = asyncio.run(scenario())
    feed = _json_feed(instance.base, game_id)
    assert len(feed) == len(moves) == 200
    for stream in others:
        assert _events_equal(stream.events, feed)
    assert elapsed < 20
    got = stuck.events + (resumed.events if resumed is not None else [])
    assert _events_equal(got, feed)


def test_sigterm_ends_streams_cleanly_and_clients_resume_without_a_gap(instance, walks,
                                                                       no_streams):
    game_id, token = _create(instance.base, walks[0])
    moves = walks[0].moves[:30]

    async def scenario():
        # Every socket is closed however it ends (none is left to a later test).
        streams = [Stream(instance.port, game_id) for _ in range(50)]
        resumed: list[Stream] = []
        try:
            await asyncio.gather(*(s.open() for s in streams))
            readers = [asyncio.ensure_future(s.read()) for s in streams]
            await asyncio.to_thread(_play, instance.base, game_id, token, moves[:10], 0)
            worker = events_worker(instance)
            os.kill(worker, signal.SIGTERM)
            await asyncio.wait_for(asyncio.gather(*readers), 15)
            # The worker is gone; play on while nobody follows, then resume.
            await asyncio.to_thread(_play, instance.base, game_id, token, moves[10:20], 10)
            deadline = time.monotonic() + 20
            while events_worker(instance) in (None, worker):
                assert time.monotonic() < deadline, "gunicorn started no new events worker"
                await asyncio.sleep(0.1)
            resumed.extend(Stream(instance.port, game_id,
                                  last_event_id=s.ids()[-1] if s.ids() else 0)
                           for s in streams)
            await asyncio.gather(*(r.open() for r in resumed))
            assert [s.status for s in resumed] == [200] * len(streams)
            readers = [asyncio.ensure_future(
                r.read(lambda r, s=s: len(s.events) + len(r.events) >= len(moves)))
                for r, s in zip(resumed, streams, strict=True)]
            await asyncio.to_thread(_play, instance.base, game_id, token, moves[20:], 20)
            await asyncio.wait_for(asyncio.gather(*readers), 20)
        finally:
            await _closed(*streams, *resumed)
        return streams, resumed

    streams, resumed = asyncio.run(scenario())
    feed = _json_feed(instance.base, game_id)
    assert len(feed) == len(moves)
    for first, second in zip(streams, resumed, strict=True):
        assert first.clean_end  # ended with the response's last chunk, not cut
        assert first.events  # (the last moves before SIGTERM may come after the resume)
        assert _events_equal(first.events + second.events, feed)


def test_without_an_events_group_the_request_workers_serve_the_stream(redis_server, walks,
                                                                      clean_redis, tmp_path):
    """A hand-off socket where nothing listens: the request worker keeps the stream and
    serves it on a thread of its own, and says so in its log."""
    with Gunicorn(redis_server.url, tmp_path / "gunicorn.log", LOG_LEVEL="INFO",
                  EVENTS_HANDOFF_SOCKET=str(tmp_path / "nobody.sock"),
                  SSE_HEARTBEAT_SECONDS=str(HEARTBEAT)) as server:
        game_id, token = _create(server.base, walks[1])
        moves = walks[1].moves[:3]

        async def scenario():
            stream = await Stream(server.port, game_id).open()
            assert stream.status == 200
            reader = asyncio.ensure_future(stream.read(lambda s: len(s.events) >= len(moves)))
            await asyncio.to_thread(_play, server.base, game_id, token, moves, 0)
            await asyncio.wait_for(reader, 15)
            await _closed(stream)
            return stream

        stream = asyncio.run(scenario())
        assert _events_equal(stream.events, _json_feed(server.base, game_id))
        assert "events group unreachable" in server.log()
