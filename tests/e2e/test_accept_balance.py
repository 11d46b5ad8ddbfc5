"""End to end, under the real gunicorn command: a new connection goes to a request
process that holds few (``ACCEPT_BALANCE``, service.runtime.balance), also after a
process is killed outright and replaced."""

from __future__ import annotations

import collections
import os
import signal
import time

import pytest

from tests.e2e.support import Gunicorn, connections_on_distinct_workers

PROCESSES = 4


def _held(connections) -> collections.Counter:
    """How many of ``connections`` each process holds."""
    return collections.Counter(connection.worker() for connection in connections)


def _open(server: Gunicorn, count: int) -> list:
    """``count`` kept-alive connections, opened one after the other, each answered."""
    opened = []
    for _ in range(count):
        connection = server.connection()
        assert connection.request("GET", "/healthz")[0] == 200
        opened.append(connection)
    return opened


@pytest.mark.timeout(120)
def test_new_connections_go_to_the_processes_that_hold_fewest(redis_server, tmp_path):
    # Keep-alive longer than the test: on a busy machine the search for a connection on
    # each process can outlast gunicorn's 5 s, and a connection its process closed is held
    # by none.
    with Gunicorn(redis_server.url, tmp_path / "gunicorn.log", ACCEPT_BALANCE="1",
                  WEB_CONCURRENCY=str(PROCESSES), RATELIMIT_ENABLED="false",
                  GUNICORN_KEEPALIVE="120") as server:
        opened = connections_on_distinct_workers(server, PROCESSES)  # each one serves
        try:
            opened += _open(server, 3 * PROCESSES)
            held = _held(opened)
            assert None not in held, held
            assert len(held) == PROCESSES, held
            assert max(held.values()) - min(held.values()) <= 2, held
            # A process killed outright: its slot is freed, and the process that replaces
            # it takes connections once it serves; holding fewest, the next one.
            victim = next(iter(held))
            os.kill(victim, signal.SIGKILL)
            deadline = time.monotonic() + 30
            fresh = None
            while fresh is None and time.monotonic() < deadline:
                connection = _open(server, 1)[0]
                opened.append(connection)
                if connection.worker() not in held:
                    fresh = connection.worker()
                time.sleep(0.05)
            assert fresh in server.workers()
            assert victim not in server.workers()
            following = _open(server, 1)
            opened += following
            assert _held(following) == {fresh: 1}, _held(opened)
        finally:
            for connection in opened:
                connection.close()
