"""Problem details for every refusal, CORS, rate limits and storage failures."""

import socket
import time

import pytest

from devtools.redis_server import free_port
from service.storage import rate_limits
from service.storage.rate_limits import SHARE, RateCounters
from tests.api.support import auth, create, make_app, snapshot, stored, stored_history

PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def _problem(response, status, code):
    assert response.status_code == status
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert set(body) >= PROBLEM_KEYS
    assert body["type"] == f"urn:patience:problem:{code}"
    assert (body["status"], body["code"]) == (status, code)
    assert body["title"]
    assert body["detail"]
    return body


@pytest.mark.parametrize("path", ["/v1", "/v1/games/", "/v2/games", "/v1/games/x/y",
                                  "/docs/../etc/passwd", "/v1/variants/clock"])
def test_unknown_paths_are_404_not_found(client, path):
    _problem(client.get(path), 404, "not_found")


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("PUT", "/v1/games", {"POST"}),
    ("GET", "/v1/games", {"POST"}),
    ("PATCH", "/v1/games/abc", {"GET", "DELETE"}),
    ("PUT", "/v1/games/abc/moves", {"GET", "POST"}),
    ("GET", "/v1/games/abc/undo", {"POST"}),
    ("POST", "/v1/games/abc/history", {"GET"}),
    ("DELETE", "/v1/variants", {"GET"}),
    ("POST", "/healthz", {"GET"}),
])
def test_wrong_methods_are_405_with_allow(client, method, path, allowed):
    response = client.open(path, method=method)
    _problem(response, 405, "method_not_allowed")
    assert allowed <= {m.strip() for m in response.headers["Allow"].split(",")}


def test_cors_preflight_allows_any_origin_and_the_contract_headers(client):
    response = client.options("/v1/games/abc/moves", headers={
        "Origin": "https://cards.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization, Content-Type, If-Match, "
                                          "Idempotency-Key, X-Request-ID"})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    methods = {m.strip() for m in response.headers["Access-Control-Allow-Methods"].split(",")}
    assert methods == {"GET", "POST", "DELETE", "OPTIONS"}
    allowed = {h.strip().lower() for h in response.headers["Access-Control-Allow-Headers"]
               .split(",")}
    assert allowed == {"authorization", "content-type", "if-match", "idempotency-key",
                       "x-request-id"}


def test_cors_headers_on_answers_and_problems(client):
    game, token, _ = create(client, seed=1)
    expected = {"etag", "location", "retry-after", "ratelimit-limit", "ratelimit-remaining",
                "ratelimit-reset", "x-request-id"}
    for response in (client.get(f"/v1/games/{game['id']}", headers={"Origin": "http://a.b"}),
                     client.get("/v1/games/nope", headers={"Origin": "http://a.b"}),
                     client.post(f"/v1/games/{game['id']}/moves", json={"type": "draw"},
                                 headers=auth(token, Origin="http://a.b"))):
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        exposed = {h.strip().lower() for h in
                   response.headers["Access-Control-Expose-Headers"].split(",")}
        assert exposed == expected


def test_cors_headers_only_for_requests_with_an_origin_and_answers_vary_with_it(client):
    game, token, _ = create(client, seed=1)
    plain = client.get(f"/v1/games/{game['id']}")
    assert plain.status_code == 200
    assert "Access-Control-Allow-Origin" not in plain.headers
    assert "Origin" in plain.vary
    cross = client.get(f"/v1/games/{game['id']}", headers={"Origin": "http://a.b"})
    assert cross.headers["Access-Control-Allow-Origin"] == "*"
    assert "Origin" in cross.vary
    # A Vary of its own (the events feed) keeps its values and gains Origin.
    feed = client.get(f"/v1/games/{game['id']}/events")
    assert {"Accept", "Last-Event-ID", "Origin"} <= set(feed.vary)


def test_absurd_headers_get_no_500(client, redis_db):
    game, token, _ = create(client, seed=1)
    gid = game["id"]
    headers_list = [
        {"If-None-Match": "W/" * 1000}, {"If-None-Match": '"' * 999},
        {"If-Match": ",,,,"}, {"If-Match": "W/"}, {"If-Match": '"' + "9" * 400 + '"'},
        {"Authorization": "Bearer " + "a" * 8000}, {"Authorization": "Bearer\t" + token},
        {"Content-Type": "application/json; charset"}, {"Content-Type": ";;;"},
        {"Content-Length": "-1"}, {"X-Forwarded-For": "not an address"},
        {"Accept": "*/*;q=x"}, {"Idempotency-Key": " "},
    ]
    before = snapshot(redis_db)
    for headers in headers_list:
        merged = {**auth(token), **headers}
        for method, url in (("GET", f"/v1/games/{gid}"), ("POST", f"/v1/games/{gid}/moves"),
                            ("POST", f"/v1/games/{gid}/undo"), ("POST", "/v1/games")):
            response = client.open(url, method=method, data=b"{}", headers=merged)
            assert 200 <= response.status_code < 500, (headers, method, url)
    assert stored(redis_db, gid)[0] == 0
    assert {k: v for k, v in snapshot(redis_db).items() if b":h" in k or b"idem" in k} == {
        k: v for k, v in before.items() if b":h" in k or b"idem" in k}


def test_the_last_resort_handler_answers_a_problem_and_logs(redis_url, clean_redis, log_lines):
    app = make_app(redis_url)

    @app.get("/boom")
    def boom():
        raise RuntimeError("a bug")

    response = app.test_client().get("/boom", contract=False)  # 500 is documented nowhere
    _problem(response, 500, "internal_error")
    assert "a bug" not in response.get_data(as_text=True)
    errors = [r for r in log_lines.records() if r["level"] == "ERROR"]
    assert errors
    assert "RuntimeError" in errors[0]["message"]
    assert "a bug" in errors[0]["exc_info"]


# --- storage failures ---------------------------------------------------------------
@pytest.fixture
def dead_redis_app():
    """An app whose Redis is a closed port (rate limits on: they fail open)."""
    app = make_app(f"redis://127.0.0.1:{free_port()}/0", RATELIMIT_ENABLED=True)
    yield app
    assert 500 not in app.statuses


def test_without_redis_every_storage_request_is_a_fast_503(dead_redis_app):
    client = dead_redis_app.test_client()
    token = auth("t" * 43)
    requests = [("GET", "/readyz", None), ("POST", "/v1/games", {"variant": "clock"}),
                ("GET", "/v1/games/AAAAAAAAAAAAAAAAAAAAAA", None),
                ("GET", "/v1/games/AAAAAAAAAAAAAAAAAAAAAA/moves", None),
                ("GET", "/v1/games/AAAAAAAAAAAAAAAAAAAAAA/history", None),
                ("POST", "/v1/games/AAAAAAAAAAAAAAAAAAAAAA/moves", {"type": "draw"}),
                ("POST", "/v1/games/AAAAAAAAAAAAAAAAAAAAAA/undo", None),
                ("DELETE", "/v1/games/AAAAAAAAAAAAAAAAAAAAAA", None)]
    for method, url, body in requests:
        started = time.monotonic()
        response = client.open(url, method=method, json=body, headers=token)
        assert time.monotonic() - started < 2.5, url
        _problem(response, 503, "storage_unavailable")
        assert response.headers["Retry-After"] == "1"


def test_without_redis_what_needs_no_storage_still_answers(dead_redis_app):
    client = dead_redis_app.test_client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/v1/variants").status_code == 200
    assert client.get("/metrics").status_code == 200
    _problem(client.post("/v1/games", data=b"[]", content_type="application/json"), 400,
             "invalid_json")


def test_a_hung_redis_answers_503_within_the_socket_timeout(clean_redis):
    """A Redis that accepts connections but never answers (a stalled server)."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        port = silent.getsockname()[1]
        app = make_app(f"redis://127.0.0.1:{port}/0", REDIS_SOCKET_TIMEOUT=0.3,
                       REDIS_CONNECT_TIMEOUT=0.3)
        client = app.test_client()
        for method, url, body in (("GET", "/readyz", None),
                                  ("POST", "/v1/games", {"variant": "clock"}),
                                  ("GET", "/v1/games/AAAAAAAAAAAAAAAAAAAAAA", None)):
            started = time.monotonic()
            response = client.open(url, method=method, json=body)
            assert time.monotonic() - started < 1.5, url
            _problem(response, 503, "storage_unavailable")
            assert response.headers["Retry-After"] == "1"
    assert 500 not in app.statuses


# --- rate limits ----------------------------------------------------------------------
def _limited_app(redis_url, **config):
    return make_app(redis_url, **{"RATELIMIT_ENABLED": True,
                                  "RATELIMIT_APPLICATION": "5 per minute", **config})


def test_a_503_keeps_its_own_retry_after_whatever_the_client_s_window(redis_url, redis_db):
    """A 503 says when its own trouble may be over (here: no daily deal ready yet, 5 s),
    not when the client's rate-limit window ends (up to a minute)."""
    client = _limited_app(redis_url, RATELIMIT_APPLICATION="100 per minute",
                          DAILY_ACCOUNT_RULE="any", WINNABLE_SEARCH_SECONDS=0).test_client()
    token = client.post("/v1/players", json={"name": "Ada"}).get_json()["player_token"]
    day = client.get("/v1/daily").get_json()["day"]
    refused = client.post(f"/v1/daily/salic-law/{day}", headers=auth(token))
    _problem(refused, 503, "daily_deal_unavailable")
    assert refused.headers["Retry-After"] == "5"
    assert int(refused.headers["RateLimit-Remaining"]) < 100  # counted all the same


@pytest.mark.cluster
def test_rate_limit_headers_count_down_then_429(redis_url, redis_db):
    client = _limited_app(redis_url).test_client()
    for remaining in (4, 3, 2, 1, 0):
        response = client.get("/v1/variants")
        assert response.status_code == 200
        assert response.headers["RateLimit-Limit"] == "5"
        assert response.headers["RateLimit-Remaining"] == str(remaining)
        assert 0 < int(response.headers["RateLimit-Reset"]) <= 61
        assert "Retry-After" not in response.headers
    refused = client.get("/v1/variants")
    body = _problem(refused, 429, "rate_limited")
    assert "5 per 1 minute" in body["detail"]
    assert 0 < int(refused.headers["Retry-After"]) <= 61
    assert refused.headers["RateLimit-Remaining"] == "0"
    assert client.post("/v1/games", json={"variant": "clock"}).status_code == 429
    assert redis_db.keys("*ratelimit*")  # counted in Redis
    assert client.get("/healthz").status_code == 200  # probes are never limited
    assert client.get("/readyz").status_code == 200
    assert client.get("/metrics").status_code == 200


@pytest.mark.cluster
def test_rate_limit_counters_are_shared_by_every_worker(redis_url, redis_db):
    first, second = _limited_app(redis_url).test_client(), _limited_app(redis_url).test_client()
    for _ in range(3):
        first.get("/v1/variants")
    assert second.get("/v1/variants").headers["RateLimit-Remaining"] == "1"


def test_the_limiter_counts_a_request_and_reads_its_figures_in_one_round_trip(
        redis_url, redis_db):
    client = _limited_app(redis_url, RATELIMIT_APPLICATION="50 per minute").test_client()
    client.get("/v1/variants")  # the script is loaded
    redis_db.config_resetstat()
    for remaining in range(48, 38, -1):
        response = client.get("/v1/variants")
        assert response.headers["RateLimit-Remaining"] == str(remaining)
        assert 55 <= int(response.headers["RateLimit-Reset"]) <= 61
    calls = {name.removeprefix("cmdstat_"): stats["calls"]
             for name, stats in redis_db.info("commandstats").items()}
    assert calls.get("evalsha", 0) + calls.get("eval", 0) == 10
    assert calls.get("get", 0) == calls.get("ttl", 0) == 0


def _evals(redis_db) -> int:
    calls = {name.removeprefix("cmdstat_"): stats["calls"]
             for name, stats in redis_db.info("commandstats").items()}
    return calls.get("evalsha", 0) + calls.get("eval", 0)


def test_the_counters_send_a_busy_client_to_redis_once_every_sync_hits(redis_url, redis_db):
    app = make_app(redis_url)
    counters = RateCounters("100000 per minute", app.services.limiter_connections,
                            sync_hits=8, sync_seconds=60)
    counters.hit("warm")  # the script is loaded
    redis_db.config_resetstat()
    remaining = [counters.hit("1.2.3.4").remaining for _ in range(80)]
    assert remaining == list(range(99999, 99999 - 80, -1))  # the local count shows
    assert _evals(redis_db) == 10  # the first request, then every 8th
    key = next(key for key in redis_db.keys("ratelimit:*") if b"1.2.3.4" in key)
    assert int(redis_db.get(key)) == 73  # the last 7 wait for the next round trip
    assert 59_000 <= redis_db.pttl(key) <= 60_000


def test_the_counters_are_exact_near_the_limit_and_refuse_past_it_without_redis(
        redis_url, redis_db):
    limit = 4 * SHARE
    counters = RateCounters(f"{limit} per minute", make_app(redis_url).services
                            .limiter_connections, sync_hits=16, sync_seconds=60)
    verdicts = [counters.hit("c") for _ in range(limit)]
    assert all(verdict.allowed for verdict in verdicts)
    assert [v.remaining for v in verdicts] == list(range(limit - 1, -1, -1))
    assert int(redis_db.get("ratelimit:c:128/1minute")) == limit  # the last ones sent
    redis_db.config_resetstat()
    for _ in range(20):  # the last count read from Redis is the limit
        refused = counters.hit("c")
        assert (refused.allowed, refused.remaining) == (False, 0)
    assert _evals(redis_db) == 0  # the refusals asked no Redis


def test_counters_shared_by_processes_let_a_client_past_its_limit_by_the_stated_margin(
        redis_url, redis_db):
    """Three processes' counters on one Redis, a client's requests round robin over
    them: no fewer than the limit get through, and no more than limit + 3 x (hits - 1)."""
    limit, hits = 600, 16
    connections = make_app(redis_url).services.limiter_connections
    processes = [RateCounters(f"{limit} per minute", connections, sync_hits=hits,
                              sync_seconds=60) for _ in range(3)]
    allowed = sum(processes[i % 3].hit("c").allowed for i in range(2 * limit))
    assert limit <= allowed <= limit + 3 * (hits - 1)
    assert not any(process.hit("c").allowed for process in processes)


def test_the_counters_fail_open_and_come_back(redis_server, redis_url, clean_redis,
                                              fsync_always):
    counters = RateCounters("2 per minute", make_app(redis_url).services
                            .limiter_connections)
    assert counters.hit("c").allowed
    redis_server.kill()
    try:
        assert counters.hit("c") is None  # uncounted: the request goes on
        assert counters.hit("c") is None  # and the counters are left alone a while
    finally:
        redis_server.start()
    time.sleep(1.1)
    assert counters.hit("c").allowed  # the count survived in Redis (1, now 2)
    assert not counters.hit("c").allowed
    assert RateCounters("3 per minute", None).hit("c").remaining == 2  # memory://


def test_the_counters_forget_the_windows_that_ended(monkeypatch):
    monkeypatch.setattr(rate_limits, "_SWEEP_SIZE", 8)
    counters = RateCounters("5 per second", None)
    for i in range(8):
        assert counters.hit(f"10.0.0.{i}").remaining == 4
    time.sleep(1.05)
    assert counters.hit("10.0.1.1").remaining == 4
    assert len(counters._windows) == 1  # the eight ended windows went


def test_forwarded_for_is_ignored_unless_the_proxy_is_trusted(redis_url, redis_db):
    client = _limited_app(redis_url).test_client()
    for i in range(5):
        client.get("/v1/variants", headers={"X-Forwarded-For": f"10.0.0.{i}"})
    assert client.get("/v1/variants",
                      headers={"X-Forwarded-For": "10.9.9.9"}).status_code == 429
    trusting = _limited_app(redis_url, TRUST_PROXY=True).test_client()
    for i in range(6):
        response = trusting.get("/v1/variants", headers={"X-Forwarded-For": f"10.1.0.{i}"})
        assert response.status_code == 200
        assert response.headers["RateLimit-Remaining"] == "4"


def test_rate_limits_off_sends_no_headers(client):
    response = client.get("/v1/variants")
    assert "RateLimit-Limit" not in response.headers


def test_a_redis_crash_answers_503_then_play_resumes_with_every_acknowledged_move(
        redis_server, redis_url, clean_redis, fsync_always):
    app = make_app(redis_url)
    client = app.test_client()
    game, token, _ = create(client, "salic-law", seed=31)
    gid = game["id"]
    acknowledged = [client.post(f"/v1/games/{gid}/moves", json={"type": "deal"},
                                headers=auth(token)).get_json()["events"] for _ in range(5)]
    redis_server.kill()
    try:
        for method, url, body in (("GET", "/readyz", None), ("GET", f"/v1/games/{gid}", None),
                                  ("POST", f"/v1/games/{gid}/moves", {"type": "deal"})):
            started = time.monotonic()
            response = client.open(url, method=method, json=body, headers=auth(token))
            assert time.monotonic() - started < 2.5
            _problem(response, 503, "storage_unavailable")
    finally:
        redis_server.start()
    assert client.get("/readyz").status_code == 200  # the same app: no restart needed
    history = client.get(f"/v1/games/{gid}/history").get_json()["moves"]
    assert [entry["events"] for entry in history] == acknowledged
    assert stored(clean_redis, gid)[0] == 5
    assert len(stored_history(clean_redis, gid)) == 5
    response = client.post(f"/v1/games/{gid}/moves", json={"type": "deal"}, headers=auth(token))
    assert response.status_code == 200
    assert response.get_json()["game"]["version"] == 6
    assert 500 not in app.statuses
