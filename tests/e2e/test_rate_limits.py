"""Rate limits through a real gunicorn of three workers: one budget per client address,
counted in Redis and shared by every worker (each request below goes to a known,
different worker), 429 with Retry-After past it, RateLimit-* headers on every answer
of every kind, the probes never limited, and the off-switch of the environment."""

from __future__ import annotations

import json

import pytest

from tests.e2e.support import Gunicorn, connections_on_distinct_workers

LIMIT = 40
RATE_HEADERS = ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")


@pytest.fixture(scope="module")
def limited(redis_server, tmp_path_factory):
    log = tmp_path_factory.mktemp("limited") / "gunicorn.log"
    # Keep-alive longer than connections_on_distinct_workers may search on a busy machine:
    # the connections it found first must still be open when the test uses them.  Every
    # request goes to Redis (no count kept in a process): each test starts on an empty
    # Redis (tests/e2e/test_limiter_replicas.py counts in batches).
    with Gunicorn(redis_server.url, log, WEB_CONCURRENCY="3", GUNICORN_THREADS="2",
                  GUNICORN_KEEPALIVE="60", RATELIMIT_DEFAULT=f"{LIMIT} per minute",
                  RATELIMIT_SYNC_HITS="1") as server:
        yield server


def _answers_of_every_kind(connection):
    """(what, status, headers, body) for one answer of each documented kind."""
    answers = []

    def send(what, method, path, body=None, **headers):
        status, got, data = connection.request(method, path, body, headers)
        answers.append((what, status, got, data))
        return status, got, data

    _status, _headers, data = send("created", "POST", "/v1/games",
                                   {"variant": "salic-law", "seed": 4, "undo": "full"})
    created = json.loads(data)
    url = f"/v1/games/{created['game']['id']}"
    token = {"Authorization": f"Bearer {created['player_token']}"}
    send("read", "GET", url)
    send("not modified", "GET", url, **{"If-None-Match": '"0"'})
    send("moved", "POST", f"{url}/moves", {"type": "deal"}, **token)
    send("undone", "POST", f"{url}/undo", None, **token)
    send("invalid", "POST", f"{url}/moves", {"type": "fly"}, **token)
    send("no token", "POST", f"{url}/moves", {"type": "deal"})
    send("wrong token", "POST", f"{url}/moves", {"type": "deal"},
         Authorization="Bearer " + "A" * 43)
    send("unknown game", "GET", "/v1/games/nope")
    send("unknown path", "GET", "/v1/nothing")
    send("wrong method", "PUT", url)
    send("nothing to undo", "POST", f"{url}/undo", None, **token)
    send("stale", "POST", f"{url}/moves", {"type": "deal"}, **token, **{"If-Match": '"0"'})
    send("media type", "POST", f"{url}/moves", None, **token, **{"Content-Type": "text/plain"})
    send("illegal", "POST", f"{url}/moves", {"type": "draw"}, **token)
    send("too large", "POST", "/v1/games", {"variant": "clock", "x": "y" * 20000})
    send("variants", "GET", "/v1/variants")
    send("deleted", "DELETE", url, None, **token)
    return answers


def test_one_budget_for_every_worker_then_429(limited, clean_redis):
    connections = connections_on_distinct_workers(limited, 3)
    seen = []
    for i in range(LIMIT):
        connection = connections[i % 3]
        status, headers, _body = connection.request("GET", "/v1/variants")
        assert status == 200
        assert headers["RateLimit-Limit"] == str(LIMIT)
        seen.append(int(headers["RateLimit-Remaining"]))
        assert 0 < int(headers["RateLimit-Reset"]) <= 61
    # One count down over all three workers: the counters are shared.
    assert seen == list(range(LIMIT - 1, -1, -1))
    for connection in connections:
        status, headers, body = connection.request("POST", "/v1/games", {"variant": "clock"})
        assert status == 429
        assert headers["Content-Type"] == "application/problem+json"
        problem = json.loads(body)
        assert (problem["code"], problem["status"]) == ("rate_limited", 429)
        assert f"{LIMIT} per 1 minute" in problem["detail"]
        assert 0 < int(headers["Retry-After"]) <= 61
        assert headers["RateLimit-Remaining"] == "0"
        assert headers["RateLimit-Limit"] == str(LIMIT)
        for probe in ("/healthz", "/readyz", "/metrics"):  # never limited
            assert connection.request("GET", probe)[0] == 200
    assert clean_redis.keys("game:*") == []  # refused creates made nothing
    assert clean_redis.keys("*ratelimit*")
    for connection in connections:
        connection.close()


def test_every_kind_of_answer_carries_the_rate_limit_headers(limited, clean_redis):
    connection = limited.connection()
    answers = _answers_of_every_kind(connection)
    statuses = {what: status for what, status, _headers, _body in answers}
    assert statuses == {
        "created": 201, "read": 200, "not modified": 304, "moved": 200, "undone": 200,
        "invalid": 400, "no token": 401, "wrong token": 403, "unknown game": 404,
        "unknown path": 404, "wrong method": 405, "nothing to undo": 409, "stale": 412,
        "media type": 415, "illegal": 422, "too large": 413, "variants": 200, "deleted": 204}
    remaining = []
    for what, _status, headers, _body in answers:
        for name in RATE_HEADERS:
            assert name in headers, (what, name, headers)
        assert headers["RateLimit-Limit"] == str(LIMIT)
        remaining.append(int(headers["RateLimit-Remaining"]))
        assert "X-Request-ID" in headers
        assert "Retry-After" not in headers, what
    assert remaining == list(range(LIMIT - 1, LIMIT - 1 - len(answers), -1))
    connection.close()


def test_the_off_switch(redis_server, clean_redis, tmp_path):
    with Gunicorn(redis_server.url, tmp_path / "gunicorn.log", WEB_CONCURRENCY="1",
                  RATELIMIT_ENABLED="false", RATELIMIT_DEFAULT="2 per minute") as server:
        connection = server.connection()
        for _ in range(10):
            status, headers, _body = connection.request("GET", "/v1/variants")
            assert status == 200
            assert not [name for name in RATE_HEADERS if name in headers]
        assert connection.request("POST", "/v1/games", {"variant": "clock"})[0] == 201
        connection.close()
    assert not clean_redis.keys("*ratelimit*")
