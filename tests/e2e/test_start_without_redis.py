"""Every process starts while no Redis answers, and recovers by itself once it does.

The request group, the events group and the solver's worker start on a Redis URL where
nothing listens (one Redis, and a Redis Cluster URL of nodes not yet started), rate
limits on: the probes answer, a create answers 503 with ``Retry-After`` (and /readyz
503), and no process exits or is replaced.  Then Redis starts on those very ports, and
creates answer 201 within a bounded time, without any restart."""

from __future__ import annotations

import os
import time

import pytest

from devtools import launch
from devtools.redis_server import LocalCluster, RedisServer, free_port
from tests.e2e.support import Gunicorn

#: Seconds from Redis answering to the first create answered 201.
RECOVERY_BOUND = 15.0
SETTINGS = {"RATELIMIT_ENABLED": "true", "RATELIMIT_DEFAULT": "100000 per minute",
            "REDIS_CONNECT_TIMEOUT": "0.5", "REDIS_SOCKET_TIMEOUT": "0.5",
            "REDIS_WAIT_REPLICAS": "0", "WEB_CONCURRENCY": "2", "GUNICORN_THREADS": "4"}


def _redis(mode: str, tmp_path):
    """A Redis (or Redis Cluster of three masters) with its ports chosen, not started."""
    if mode == "redis":
        return RedisServer(tmp_path / "redis", free_port())
    return LocalCluster(tmp_path / "cluster", masters=3, replicas=0)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("mode", ["redis", "cluster"])
def test_every_process_starts_without_redis_and_recovers_by_itself(mode, tmp_path):
    redis = _redis(mode, tmp_path)
    url = redis.url
    with open(tmp_path / "worker.log", "wb") as sink:
        worker = launch.start_worker(dict(os.environ, REDIS_URL=url, LOG_LEVEL="WARNING",
                                          **SETTINGS), output=sink)
    try:
        with Gunicorn(url, tmp_path / "web.log", **SETTINGS) as web, \
                Gunicorn(url, tmp_path / "events.log", events=True, **SETTINGS) as events:
            web_workers, events_workers = set(web.workers()), set(events.workers())
            connection = web.connection()
            for server in (web, events):  # started: the probes answer
                probe = server.connection()
                assert probe.request("GET", "/healthz")[0] == 200
                status, headers, _body = probe.request("GET", "/readyz")
                assert (status, headers.get("Retry-After")) == (503, "1")
                probe.close()
            failures = []
            for _ in range(3):
                status, headers, _body = connection.request("POST", "/v1/games",
                                                            {"variant": "clock"})
                assert status == 503
                assert headers["Retry-After"] == "1"
                failures.append(time.monotonic())
            assert worker.poll() is None

            redis.start()
            up = time.monotonic()
            try:
                first_success = None
                while time.monotonic() - up < RECOVERY_BOUND:
                    status, headers, _body = connection.request("POST", "/v1/games",
                                                                {"variant": "clock"})
                    if status == 201:
                        first_success = time.monotonic()
                        break
                    assert status == 503, status
                    failures.append(time.monotonic())
                    time.sleep(0.1)
                assert first_success is not None, "no create answered 201 after Redis came up"
                assert failures[-1] < first_success  # the outage was seen (3 at least)
                assert first_success - up < RECOVERY_BOUND
                # The limiter counts again (it leaves a failed Redis alone for a second).
                deadline = time.monotonic() + RECOVERY_BOUND
                while True:
                    status, headers, _body = connection.request("GET", "/v1/variants")
                    assert status == 200
                    if "RateLimit-Remaining" in headers:
                        break
                    assert time.monotonic() < deadline, "the limiter counts no more"
                    time.sleep(0.1)
                for server in (web, events):
                    probe = server.connection()
                    deadline = time.monotonic() + RECOVERY_BOUND
                    while probe.request("GET", "/readyz")[0] != 200:
                        assert time.monotonic() < deadline, "/readyz still 503"
                        time.sleep(0.1)
                    probe.close()
                connection.close()
                # No process exited on the way, nor was replaced.
                assert worker.poll() is None
                assert set(web.workers()) == web_workers
                assert set(events.workers()) == events_workers
            finally:
                redis.stop()
    finally:
        launch.stop_gunicorn(worker)
