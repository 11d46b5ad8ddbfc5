"""Malformed HTTP sent raw to a real gunicorn: what gunicorn itself refuses (before the
app: 400, 414 or 431, text/html, connection closed) and what reaches the app (answered
as for any request).  Never a 5xx, never a hang, and the worker serves on."""

from __future__ import annotations

import json
import socket

import pytest

from tests.e2e.support import Gunicorn


@pytest.fixture(scope="module")
def server(redis_server, tmp_path_factory):
    log = tmp_path_factory.mktemp("hostile-http") / "gunicorn.log"
    with Gunicorn(redis_server.url, log, WEB_CONCURRENCY="1") as server:
        yield server


def _raw(server, data: bytes) -> tuple[int, dict, bytes]:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:])
        length = int(headers.get("Content-Length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            assert chunk
            body += chunk
    return int(lines[0].split(" ")[1]), headers, body


GET = b"GET /v1/variants HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize(("request_bytes", "status"), [
    (GET + b"Authorization: Bearer " + b"a" * 9000 + b"\r\n\r\n", 431),
    (GET + b"".join(b"X-H%d: 1\r\n" % i for i in range(200)) + b"\r\n", 431),
    (b"GET /v1/games/" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (GET + b"X-Bad Header: 1\r\n\r\n", 400),
    (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{} ", 400),
    (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400),
    (b"GARBAGE\r\n\r\n", 400),
])
def test_what_gunicorn_refuses_itself(server, request_bytes, status):
    got, headers, _body = _raw(server, request_bytes)
    assert got == status
    assert headers["Connection"] == "close"
    assert _raw(server, GET + b"\r\n")[0] == 200  # the worker serves on


@pytest.mark.parametrize("extra", [
    b"Authorization: Bearer " + b"a" * 8000 + b"\r\n",  # under gunicorn's 8190 bytes
    b"X-Request-ID: \xff\xfe\r\n",
    b"If-None-Match: \xc3\xa9\r\n",
    b"Idempotency-Key: \x80\r\n",
])
def test_odd_bytes_in_headers_reach_the_app(server, extra):
    status, headers, body = _raw(server, GET + extra + b"\r\n")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["variants"]
    assert len(headers["X-Request-ID"]) == 32


@pytest.mark.parametrize("host", [b"Host: a..b\r\n", b"Host: " + b"x" * 300 + b"\r\n", b""])
def test_any_host_or_none(server, host):
    status, _headers, body = _raw(server, b"GET /v1/variants HTTP/1.1\r\n" + host + b"\r\n")
    assert status == 200
    assert json.loads(body)["variants"]


def test_a_write_with_odd_header_bytes_is_a_documented_refusal(server):
    body = b'{"variant": "clock"}'
    status, headers, answer = _raw(
        server, b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Idempotency-Key: \xe9t\xe9\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert status == 400
    assert headers["Content-Type"] == "application/problem+json"
    assert json.loads(answer)["code"] == "invalid_header"
