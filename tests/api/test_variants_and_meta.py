"""GET /v1/variants, /healthz, /readyz, /metrics, /v1/openapi.yaml."""

import json
import logging
import time

import pytest

from service.engine import get_variant
from service.observability import telemetry
from tests.api.support import LogLines, auth, create, make_app

PILE_KINDS = {"stock", "waste", "foundation", "tableau", "reserve"}
EXPECTED_PILES = {
    "clock": {f"foundation-{i}" for i in range(1, 13)} | {f"packet-{i}" for i in range(1, 13)}
    | {"stock", "talon"},
    "salic-law": {f"queen-{i}" for i in range(1, 9)} | {f"foundation-{i}" for i in range(1, 9)}
    | {f"king-{i}" for i in range(1, 9)} | {"stock"},
    "four-corners": {"corner-tl", "corner-bl", "corner-tr", "corner-br", "stock"}
    | {f"{side}-{i}" for side in ("left", "right") for i in range(1, 5)}
    | {f"{kind}-{i}" for kind in ("ace", "king") for i in range(1, 5)},
}


def test_variants_lists_the_three_games_with_their_tables(client):
    response = client.get("/v1/variants")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    variants = response.get_json()["variants"]
    assert [v["id"] for v in variants] == ["clock", "salic-law", "four-corners"]
    for variant in variants:
        assert variant["decks"] == 2
        assert variant["name"]
        assert variant["summary"]
        assert {pile["id"] for pile in variant["piles"]} == EXPECTED_PILES[variant["id"]]
        for pile in variant["piles"]:
            assert pile["kind"] in PILE_KINDS
            assert set(pile["layout"]) == {"x", "y", "fan"}
        assert variant == get_variant(variant["id"]).describe()
    assert {p["kind"] for p in variants[1]["piles"] if p["id"].startswith("queen")} == {"reserve"}


def test_variants_pile_order_is_the_order_of_a_new_game(client):
    for variant in client.get("/v1/variants").get_json()["variants"]:
        game, _token, _ = create(client, variant["id"], seed=1)
        assert [p["id"] for p in game["piles"]] == [p["id"] for p in variant["piles"]]
        assert [p["kind"] for p in game["piles"]] == [p["kind"] for p in variant["piles"]]


def test_healthz_answers_without_storage(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}


def test_readyz_answers_ready_when_redis_answers(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ready"}


def test_metrics_count_requests_games_and_moves(client):
    game, token, _ = create(client, "salic-law", seed=3)
    client.post(f"/v1/games/{game['id']}/moves", json={"type": "resign"},
                headers={"Authorization": f"Bearer {token}"})
    client.get("/v1/games/nope-nope")
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    text = response.get_data(as_text=True)
    assert 'patience_games_created_total{variant="salic-law"}' in text
    assert 'patience_moves_applied_total{variant="salic-law"}' in text
    assert 'patience_games_finished_total{status="resigned",variant="salic-law"}' in text
    assert ('patience_http_requests_total{method="POST",route="/v1/games",status="201"}'
            in text)
    assert ('patience_http_requests_total{method="GET",route="/v1/games/<game_id>",'
            'status="404"}' in text)
    assert 'patience_http_request_duration_seconds_bucket{le="0.005",method="POST"' in text


def _sample(text: str, line_start: str) -> float:
    return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith(line_start))


def test_metrics_move_with_each_request(client):
    label = 'patience_games_created_total{variant="four-corners"}'
    before = client.get("/metrics").get_data(as_text=True)
    start = _sample(before, label) if label in before else 0.0
    create(client, "four-corners")
    create(client, "four-corners")
    after = client.get("/metrics").get_data(as_text=True)
    assert _sample(after, label) == start + 2


def test_openapi_document_is_served_from_the_file(tmp_path, redis_url, clean_redis):
    spec = tmp_path / "openapi.yaml"
    spec.write_text("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths: {}\n")
    app = make_app(redis_url, OPENAPI_PATH=str(spec))
    spec.write_text("changed after the app was created")
    response = app.test_client().get("/v1/openapi.yaml")
    assert response.status_code == 200
    assert response.mimetype == "application/yaml"
    assert response.get_data(as_text=True).startswith("openapi: 3.1.0")


def test_missing_openapi_document_is_a_404_problem(tmp_path, redis_url, clean_redis):
    app = make_app(redis_url, OPENAPI_PATH=str(tmp_path / "absent.yaml"))
    response = app.test_client().get("/v1/openapi.yaml")
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "not_found"


@pytest.mark.parametrize("path", ["/healthz", "/v1/variants", "/v1/games/x"])
def test_every_response_carries_a_request_id(client, path):
    response = client.get(path)
    assert len(response.headers["X-Request-ID"]) == 32
    echoed = client.get(path, headers={"X-Request-ID": "abc-123.x:y_z"})
    assert echoed.headers["X-Request-ID"] == "abc-123.x:y_z"
    for unsafe in ("x" * 129, "a b", "<script>", "é"):
        replaced = client.get(path, headers={"X-Request-ID": unsafe})
        assert replaced.headers["X-Request-ID"] != unsafe
        assert len(replaced.headers["X-Request-ID"]) == 32


def _request_lines(lines, request_id: str) -> list[dict]:
    return [line for line in map(json.loads, lines) if line.get("request_id") == request_id]


def test_the_request_line_counts_the_wait_for_the_requests_turn(client, log_lines):
    """A request's time in the request log (and the latency metric) starts when it
    arrived at the request process's turns (service/runtime/slots.py), not when its turn
    came."""
    arrived = time.perf_counter() - 0.5
    response = client.get("/v1/variants", headers={"X-Request-ID": "waited-7"},
                          environ_overrides={telemetry.ARRIVED: arrived})
    assert response.status_code == 200
    (line,) = _request_lines(log_lines.lines, "waited-7")
    assert line["duration_ms"] >= 500
    client.get("/v1/variants", headers={"X-Request-ID": "waited-8"})
    (line,) = _request_lines(log_lines.lines, "waited-8")
    assert line["duration_ms"] < 500


def test_the_request_line_names_route_game_status_code_and_request_id(client, log_lines):
    game, token, _ = create(client, "clock", seed=1)
    gid = game["id"]
    refused = client.post(f"/v1/games/{gid}/moves", json={"type": "resign"},
                          headers=auth(token, If_Match='"99"', X_Request_ID="trace-7"))
    assert refused.status_code == 412
    read = client.get(f"/v1/games/{gid}", headers={"X-Request-ID": "trace-8"})
    assert read.status_code == 200
    (line,) = _request_lines(log_lines.lines, "trace-7")
    assert line.pop("duration_ms") >= 0
    assert line.pop("time").endswith("+00:00")
    assert line == {"level": "INFO", "logger": "patience.request", "message": "request",
                    "request_id": "trace-7", "method": "POST",
                    "path": f"/v1/games/{gid}/moves", "route": "/v1/games/<game_id>/moves",
                    "status": 412, "client": "127.0.0.1", "game_id": gid,
                    "code": "version_mismatch"}
    (line,) = _request_lines(log_lines.lines, "trace-8")
    assert (line["route"], line["status"], line["game_id"], "code" in line) == \
        ("/v1/games/<game_id>", 200, gid, False)


def test_request_lines_are_written_in_batches_and_any_other_line_at_once(client, capsys,
                                                                          monkeypatch):
    service_logger = logging.getLogger("patience")
    (handler,) = [h for h in service_logger.handlers if isinstance(h, telemetry._Stderr)]
    monkeypatch.setattr(service_logger, "handlers", [handler])
    # A period far longer than the test: the lines wait in the batch, however slow the
    # machine (a new period starts at once, whatever the thread was waiting out).
    monkeypatch.setattr(handler, "flush_seconds", 3600.0)
    handler.flush()
    capsys.readouterr()
    for n in range(3):
        client.get("/v1/games/no-such-game", headers={"X-Request-ID": f"batch-{n}"})
    assert "batch-" not in capsys.readouterr().err  # waiting in the batch
    logging.getLogger("patience.test").warning("something else")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    # The batch first, then the warning: the log keeps its order.
    assert [line.get("request_id") or line["message"] for line in lines] == \
        ["batch-0", "batch-1", "batch-2", "something else"]
    monkeypatch.setattr(handler, "flush_seconds", 0.2)
    client.get("/v1/games/no-such-game", headers={"X-Request-ID": "batch-3"})
    deadline = time.monotonic() + 10
    written = ""
    while "batch-3" not in written and time.monotonic() < deadline:
        time.sleep(0.05)  # the handler's thread writes the batch by itself
        written += capsys.readouterr().err
    assert len(_request_lines(written.splitlines(), "batch-3")) == 1
    monkeypatch.setattr(handler, "flush_seconds", 0.0)
    client.get("/v1/games/no-such-game", headers={"X-Request-ID": "batch-4"})
    assert _request_lines(capsys.readouterr().err.splitlines(), "batch-4")  # at once


def test_the_request_line_written_straight_to_stderr_is_the_logged_one(client, capsys,
                                                                       monkeypatch):
    # As in production: the service's own handler alone sees the line (pytest adds its
    # capture handlers: set them aside), which is then written without a log record.
    # With another handler on the way it is logged as any record; both lines must read
    # the same.
    service_logger = logging.getLogger("patience")
    monkeypatch.setattr(service_logger, "handlers", [
        h for h in service_logger.handlers if isinstance(h, telemetry._Stderr)])
    assert telemetry._only_handler() is not None
    client.get("/v1/games/no-such-game", headers={"X-Request-ID": "trace-9"})
    service_logger.handlers[0].flush()  # the batch of request lines (LOG_FLUSH_SECONDS)
    (straight,) = _request_lines(capsys.readouterr().err.splitlines(), "trace-9")
    other = LogLines()
    service_logger.addHandler(other)
    assert telemetry._only_handler() is None
    client.get("/v1/games/no-such-game", headers={"X-Request-ID": "trace-9"})
    (logged,) = _request_lines(other.lines, "trace-9")
    (written,) = _request_lines(capsys.readouterr().err.splitlines(), "trace-9")
    assert written == logged  # the service's handler wrote what the other one got
    for line in (straight, logged):
        line.pop("duration_ms"), line.pop("time")
    assert straight == logged == {
        "level": "INFO", "logger": "patience.request", "message": "request",
        "request_id": "trace-9", "method": "GET", "path": "/v1/games/no-such-game",
        "route": "/v1/games/<game_id>", "status": 404, "client": "127.0.0.1",
        "game_id": "no-such-game", "code": "game_not_found"}
