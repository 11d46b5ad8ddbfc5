"""Malformed HTTP sent raw to a real gunicorn: what gunicorn itself refuses (before the
app: 400, 414 or 431 as problem details, connection closed) and what reaches the app
(answered as for any request).  Never a 5xx, never a hang, and the worker serves on."""

from __future__ import annotations

import json
import socket

import pytest

from tests.contract import schema_validator
from tests.e2e.support import Gunicorn, head_of_a_stream_then_a_read


@pytest.fixture(scope="module")
def server(redis_server, tmp_path_factory):
    log = tmp_path_factory.mktemp("hostile-http") / "gunicorn.log"
    with Gunicorn(redis_server.url, log, WEB_CONCURRENCY="1") as server:
        yield server


@pytest.fixture(scope="module")
def events_server(redis_server, tmp_path_factory):
    """The events group alone, on its own address (EVENTS_BIND): gevent's server reads the
    requests there, not gunicorn's parser."""
    log = tmp_path_factory.mktemp("hostile-http-events") / "gunicorn.log"
    with Gunicorn(redis_server.url, log, events=True) as server:
        yield server


@pytest.fixture(params=["server", "events_server"])
def either_server(request):
    """Each group's gunicorn in turn."""
    return request.getfixturevalue(request.param)


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
TOO_LONG_LINE = b"GET /v1/games/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"


def _check_refusal(server, request_bytes, status, code):
    got, headers, body = _raw(server, request_bytes)
    assert (got, headers["Content-Type"]) == (status, "application/problem+json"), body
    assert headers["Connection"] == "close"
    assert len(headers["X-Request-ID"]) == 32
    problem = json.loads(body)
    schema_validator("/components/schemas/Problem").validate(problem)
    assert problem["status"] == status
    assert problem["code"] == code
    assert problem["type"] == f"urn:patience:problem:{code}"
    # A fixed detail: nothing of the request (nor of gunicorn) comes back.
    for echoed in ("aaaa", "X-H1", "GARBAGE", "9.1", "9, 1", "Bad Header", "CONTENT-LENGTH",
                   "x-zip", "x-ray", "Invalid", "gunicorn"):
        assert echoed not in problem["detail"] + problem["title"]
    assert _raw(server, GET + b"\r\n")[0] == 200  # the worker serves on


@pytest.mark.parametrize(("request_bytes", "status", "code"), [
    (GET + b"Authorization: Bearer " + b"a" * 9000 + b"\r\n\r\n", 431,
     "header_fields_too_large"),
    (GET + b"".join(b"X-H%d: 1\r\n" % i for i in range(200)) + b"\r\n", 431,
     "header_fields_too_large"),
    (b"GET /v1/games/" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
    (GET + b"X-Bad Header: 1\r\n\r\n", 400, "malformed_request"),
    (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{} ", 400, "malformed_request"),
    (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400,
     "malformed_request"),
    (b"GARBAGE\r\n\r\n", 400, "malformed_request"),
    (b"GET /v1/variants HTTP/9.1\r\nHost: x\r\n\r\n", 400, "malformed_request"),
    (b"GET /v1/variants HTTP/1.1\r\nHost: x\r\nExpect: x-ray\r\n\r\n", 417,
     "expectation_failed"),
    (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: x-zip\r\n\r\n", 501,
     "unsupported_transfer_coding"),
])
def test_what_gunicorn_refuses_itself_is_a_problem(server, request_bytes, status, code):
    _check_refusal(server, request_bytes, status, code)


@pytest.mark.parametrize(("request_bytes", "status", "code"), [
    # gunicorn's limits, held on gevent's server too (gevent's own are 8 KiB and 64 KiB).
    (b"GET /v1/games/" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
    (TOO_LONG_LINE, 414, "uri_too_long"),
    (GET + b"Authorization: Bearer " + b"a" * 9000 + b"\r\n\r\n", 431,
     "header_fields_too_large"),
    (GET + b"Authorization: Bearer " + b"a" * 70000 + b"\r\n\r\n", 431,
     "header_fields_too_large"),
    (GET + b"".join(b"X-H%d: 1\r\n" % i for i in range(200)) + b"\r\n", 431,
     "header_fields_too_large"),
    (b"GARBAGE\r\n\r\n", 400, "malformed_request"),
    (b"GET /v1/variants HTTP/9.1\r\nHost: x\r\n\r\n", 400, "malformed_request"),
    (b"POST /v1/games HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", 400,
     "malformed_request"),
])
def test_what_the_events_group_refuses_itself_is_a_problem(events_server, request_bytes,
                                                             status, code):
    _check_refusal(events_server, request_bytes, status, code)


@pytest.mark.parametrize("extra", [
    b"Authorization: Bearer " + b"a" * 8000 + b"\r\n",  # under gunicorn's 8190 bytes
    b"X-Request-ID: \xff\xfe\r\n",
    b"If-None-Match: \xc3\xa9\r\n",
    b"Idempotency-Key: \x80\r\n",
])
def test_odd_bytes_in_headers_reach_the_app(either_server, extra):
    status, headers, body = _raw(either_server, GET + extra + b"\r\n")
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


def test_a_head_of_a_stream_is_its_head_alone(either_server):
    """``HEAD`` of a game's events asking for a stream: the head of the stream's answer,
    no byte of body (not even the end of a chunked body), so the next request on the
    connection reads its own answer."""
    created = _raw(either_server, b"POST /v1/games HTTP/1.1\r\nHost: x\r\n"
                   b"Content-Type: application/json\r\nContent-Length: 19\r\n\r\n"
                   b'{"variant":"clock"}')
    assert created[0] == 201, created
    game = json.loads(created[2])["game"]["id"]
    head, rest = head_of_a_stream_then_a_read(either_server.port,
                                              f"/v1/games/{game}/events")
    assert head.startswith(b"HTTP/1.1 200"), head[:300]
    assert b"text/event-stream" in head
    assert rest.startswith(b"HTTP/1.1 200"), rest[:300]
