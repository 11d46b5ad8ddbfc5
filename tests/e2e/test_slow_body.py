"""A body shorter than its Content-Length, sent raw to a real gunicorn: the request is
answered 408 ``request_timeout`` once ``BODY_TIMEOUT_SECONDS`` (1 s here) has passed, the
connection is closed, and the gunicorn thread is free again, never held until the client
gives up.  Every wait below is bounded by a socket timeout (10 s): without the deadline
the answers would never come while the clients hold their connections open."""

from __future__ import annotations

import json
import socket

import pytest

from tests.e2e.support import Gunicorn

THREADS = 2
WAIT = 10  # seconds a socket waits for an answer, ten times the body deadline


@pytest.fixture(scope="module")
def server(redis_server, tmp_path_factory):
    log = tmp_path_factory.mktemp("slow-body") / "gunicorn.log"
    with Gunicorn(redis_server.url, log, WEB_CONCURRENCY="1", GUNICORN_THREADS=str(THREADS),
                  BODY_TIMEOUT_SECONDS="1") as server:
        yield server


def _short_body(server, path: str = "/v1/games") -> socket.socket:
    """A connection that sent a request announcing 40 bytes of body and 10 of them."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer " % path.encode() + b"t" * 43 +
                 b"\r\nContent-Length: 40\r\n\r\n" + b'{"variant"')
    return sock


def _answer(sock: socket.socket) -> tuple[int, dict, bytes]:
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)  # socket.timeout (a test failure) after WAIT seconds
        assert chunk, received
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    while len(body) < int(headers.get("Content-Length", "0")):
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return int(lines[0].split(" ")[1]), headers, body


@pytest.mark.parametrize("path", ["/v1/games", "/v1/games/some-game/moves"])
def test_a_short_body_is_answered_408_and_the_connection_closed(server, path):
    with _short_body(server, path) as sock:
        status, headers, body = _answer(sock)
        assert status == 408
        assert headers["Content-Type"] == "application/problem+json"
        problem = json.loads(body)
        assert problem["code"] == "request_timeout"
        assert problem["type"] == "urn:patience:problem:request_timeout"
        assert problem["status"] == 408
        assert headers["X-Request-ID"]
        # The rest of the body is unknown: nothing more is read from this connection.
        assert sock.recv(65536) == b""


def test_short_bodies_do_not_hold_the_threads(server):
    """As many stalled bodies as the worker has threads, their clients still connected:
    the worker answers them, then a request on another connection."""
    stalled = [_short_body(server) for _ in range(THREADS)]
    try:
        for sock in stalled:
            assert _answer(sock)[0] == 408
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
            sock.sendall(b"GET /v1/variants HTTP/1.1\r\nHost: x\r\n\r\n")
            status, _headers, body = _answer(sock)
        assert status == 200
        assert json.loads(body)["variants"]
    finally:
        for sock in stalled:
            sock.close()


def test_a_whole_body_is_read_as_ever(server):
    body = b'{"variant": "clock", "seed": 42}'
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
        sock.sendall(b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        sock.sendall(body)
        status, _headers, answer = _answer(sock)
        assert status == 201
        assert json.loads(answer)["game"]["seed"] == 42
        # ... and the connection serves on (the socket's timeout was put back).
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _answer(sock)[0] == 200
