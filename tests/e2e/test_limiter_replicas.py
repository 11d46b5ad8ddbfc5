"""One client's budget over three replicas: three gunicorn instances of one process each
(three separate processes on one real Redis, each counting in batches of
RATELIMIT_SYNC_HITS), a client's requests round robin over them past its limit.  The
number let through is the limit at least, and at most the limit plus what each process
may let through before Redis has seen it: ``limit + 3 x (RATELIMIT_SYNC_HITS - 1)``
(service/storage/rate_limits.py); requests well past it are refused."""

from __future__ import annotations

import json

import pytest

from tests.e2e.support import Gunicorn

LIMIT = 300
SYNC_HITS = 16
REPLICAS = 3


@pytest.fixture
def replicas(redis_server, clean_redis, tmp_path):
    servers = []
    try:
        for index in range(REPLICAS):
            server = Gunicorn(redis_server.url, tmp_path / f"replica-{index}.log",
                              WEB_CONCURRENCY="1", GUNICORN_THREADS="2",
                              RATELIMIT_DEFAULT=f"{LIMIT} per minute",
                              RATELIMIT_SYNC_HITS=str(SYNC_HITS))
            servers.append(server)
            server.__enter__()
        yield servers
    finally:
        for server in servers:
            server.__exit__(None, None, None)


def test_a_client_spread_over_replicas_gets_its_limit_within_the_stated_margin(
        replicas, clean_redis):
    connections = [server.connection() for server in replicas]
    clean_redis.config_resetstat()
    statuses, remaining = [], []
    for i in range(2 * LIMIT):
        status, headers, body = connections[i % REPLICAS].request("GET", "/v1/variants")
        statuses.append(status)
        assert headers["RateLimit-Limit"] == str(LIMIT)
        remaining.append(int(headers["RateLimit-Remaining"]))
        if status == 429:
            problem = json.loads(body)
            assert problem["code"] == "rate_limited"
            assert 0 < int(headers["Retry-After"]) <= 61
        else:
            assert status == 200
    accepted = statuses.count(200)
    assert LIMIT <= accepted <= LIMIT + REPLICAS * (SYNC_HITS - 1), accepted
    # Well past the limit every replica refuses, and says no budget is left.
    assert set(statuses[-LIMIT // 2:]) == {429}
    assert set(remaining[-LIMIT // 2:]) == {0}
    assert remaining[0] == LIMIT - 1  # the first request was counted in Redis
    calls = clean_redis.info("commandstats")
    round_trips = sum(calls.get(f"cmdstat_{name}", {}).get("calls", 0)
                      for name in ("evalsha", "eval"))
    assert round_trips < len(statuses) // 2  # counted in batches, refused locally
    counted = sum(int(clean_redis.get(key)) for key in clean_redis.keys("ratelimit:*"))
    assert counted >= LIMIT  # shared in Redis: every replica added its requests
    for connection in connections:
        connection.close()
