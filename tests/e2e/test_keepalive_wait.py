"""End to end, under the real gunicorn command: a kept-alive connection's next request is
read by the thread that answered the last one (service.runtime.request_process), which
waits for it only while a quarter of the process's threads stay free, and never holds a
graceful stop up.

Which thread reads a request shows in the process's system calls: gthread's main loop is
woken through a pipe, one ``write`` and one ``read`` a request (``/proc/<pid>/io``
counts those, not the socket's ``send``/``recv``); a request read by the waiting thread
makes neither."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tests.e2e.support import Gunicorn

REQUESTS = 200


def _pipe_calls(pid: int) -> tuple[int, int]:
    """(read, write) system calls the process made so far, sockets' not counted."""
    with open(f"/proc/{pid}/io") as counters:
        fields = dict(line.split(": ") for line in counters.read().splitlines())
    return int(fields["syscr"]), int(fields["syscw"])


def _one_process(redis_server, log, wait: str, **env: str) -> Gunicorn:
    return Gunicorn(redis_server.url, log, WEB_CONCURRENCY="1", RATELIMIT_ENABLED="false",
                    KEEPALIVE_WAIT_SECONDS=wait, **env)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("wait", "per_request"), [("2", 0), ("0", 1)])
def test_the_next_request_on_a_kept_alive_connection_skips_the_main_loop(
        redis_server, tmp_path, wait, per_request):
    with _one_process(redis_server, tmp_path / "gunicorn.log", wait) as server:
        connection = server.connection()
        assert connection.request("GET", "/v1/variants")[0] == 200
        worker = connection.worker()
        before = _pipe_calls(worker)
        for _ in range(REQUESTS):
            assert connection.request("GET", "/v1/variants")[0] == 200
        after = _pipe_calls(worker)
        connection.close()
    reads, writes = ((b - a) / REQUESTS for a, b in zip(before, after, strict=True))
    # Waiting: none but the odd one (a request later than the wait goes the long way).
    # Not waiting: the main loop's wake-up, once each.
    assert reads == pytest.approx(per_request, abs=0.1)
    assert writes == pytest.approx(per_request, abs=0.1)


@pytest.mark.timeout(120)
def test_two_requests_sent_at_once_are_both_answered(redis_server, tmp_path):
    """The second request arrives with the first (read ahead into the parser's buffer):
    the waiting thread answers it without waiting on the socket."""
    with _one_process(redis_server, tmp_path / "gunicorn.log", "2") as server, \
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as client:
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        client.sendall(request + request + request.replace(
            b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 200 OK\r\n") == 3


@pytest.mark.timeout(120)
def test_threads_wait_on_idle_connections_only_while_a_quarter_stay_free(
        redis_server, tmp_path):
    """8 threads: 4 may wait.  With 8 connections just answered and idle, and a wait of
    60 s, a new connection is still answered at once, and so is every idle one's next
    request (from its waiting thread or through the main loop)."""
    with _one_process(redis_server, tmp_path / "gunicorn.log", "60",
                      GUNICORN_THREADS="8") as server:
        idle = [server.connection() for _ in range(8)]
        for connection in idle:
            assert connection.request("GET", "/healthz")[0] == 200
        started = time.monotonic()
        late = server.connection()
        assert late.request("GET", "/healthz")[0] == 200
        assert time.monotonic() - started < 10  # not 60 s behind the waiting threads
        answers = []

        def again(connection):
            answers.append(connection.request("GET", "/healthz")[0])

        threads = [threading.Thread(target=again, args=(c,)) for c in idle]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        assert answers == [200] * 8
        for connection in [*idle, late]:
            connection.close()


@pytest.mark.timeout(120)
def test_a_graceful_stop_ends_the_waits_at_once(redis_server, tmp_path):
    """A thread waiting 60 s for a connection's next request lets the process stop: the
    connection is closed within gunicorn's 2 s for kept-alive connections, not 60."""
    server = _one_process(redis_server, tmp_path / "gunicorn.log", "60")
    with server:
        connection = server.connection()
        assert connection.request("GET", "/healthz")[0] == 200
        time.sleep(0.2)  # its thread is waiting now
        started = time.monotonic()
        assert server.stop(timeout=45) == 0
        stopped = time.monotonic() - started
        connection.close()
    assert stopped < 15, f"the stop took {stopped:.1f} s"
