"""Hostile input: bodies that are too large, too deep, not UTF-8 or of the wrong types,
absurd headers and odd paths.  Every answer is checked against openapi.yaml by the
validating client (no request here switches that off), none may be a 500 (the ``app``
fixture checks), every refusal is the documented problem, and a refused write changes
nothing in Redis."""

from __future__ import annotations

import io

import pytest
from flask import Flask, Response

from tests.api.support import auth, create, play, snapshot, stored
from tests.contract import ContractError, ValidatingClient

LIMIT = 16 * 1024
PROBLEM = "application/problem+json"


def _problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == PROBLEM
    body = response.get_json()
    assert (body["status"], body["code"], body["type"]) == (
        status, code, f"urn:patience:problem:{code}")
    assert body["title"]
    assert body["detail"]
    return body


def _padded(head: bytes, size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes: ``head`` (an object without its ``}``)
    padded with spaces."""
    return head + b" " * (size - len(head) - 1) + b"}"


@pytest.fixture
def game(client):
    game, token, _ = create(client, "salic-law", seed=5, undo="full")
    return game["id"], token


# --- sizes ---------------------------------------------------------------------------
def test_a_body_of_exactly_16_kib_is_read_and_one_byte_more_is_413(client, redis_db, game):
    fits = client.post("/v1/games", data=_padded(b'{"variant": "clock"', LIMIT),
                       content_type="application/json")
    assert fits.status_code == 201
    assert fits.get_json()["game"]["variant"] == "clock"
    gid, token = game
    before = snapshot(redis_db)
    for url, head in (("/v1/games", b'{"variant": "clock"'),
                      (f"/v1/games/{gid}/moves", b'{"type": "deal"'),
                      (f"/v1/games/{gid}/undo", b"{")):
        refused = client.post(url, data=_padded(head, LIMIT + 1),
                              content_type="application/json", headers=auth(token))
        _problem(refused, 413, "body_too_large")
    assert snapshot(redis_db) == before
    played = client.post(f"/v1/games/{gid}/moves", data=_padded(b'{"type": "deal"', LIMIT),
                         content_type="application/json", headers=auth(token))
    assert played.status_code == 200
    assert played.get_json()["game"]["version"] == 1


def test_a_body_shorter_than_its_content_length_is_400_and_changes_nothing(client, redis_db,
                                                                          game):
    # The client announced 100 bytes, sent 18 and went away (the stream ends there).
    gid, token = game
    before = snapshot(redis_db)
    body = b'{"type": "resign"}'
    refused = client.post(f"/v1/games/{gid}/moves", input_stream=io.BytesIO(body),
                          headers={**auth(token), "Content-Type": "application/json"},
                          environ_overrides={"CONTENT_LENGTH": "100"})
    _problem(refused, 400, "invalid_request")
    assert snapshot(redis_db) == before
    whole = client.post(f"/v1/games/{gid}/moves", input_stream=io.BytesIO(body),
                        headers={**auth(token), "Content-Type": "application/json"},
                        environ_overrides={"CONTENT_LENGTH": str(len(body))})
    assert whole.status_code == 200
    assert whole.get_json()["game"]["status"] == "resigned"


def _chunked(client, url: str, body: bytes, token: str):
    """A body without Content-Length (Transfer-Encoding: chunked, as a WSGI server
    hands it over: a terminated input stream)."""
    return client.post(url, input_stream=io.BytesIO(body), headers={
        **auth(token), "Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True})


def test_a_chunked_body_is_limited_to_16_kib_too(client, redis_db, game):
    gid, token = game
    before = snapshot(redis_db)
    _problem(_chunked(client, f"/v1/games/{gid}/moves", _padded(b'{"type": "deal"', LIMIT + 1),
                      token), 413, "body_too_large")
    _problem(_chunked(client, f"/v1/games/{gid}/moves", b"{" + b" " * (10 * LIMIT) + b"}",
                      token), 413, "body_too_large")
    assert snapshot(redis_db) == before
    fits = _chunked(client, f"/v1/games/{gid}/moves", _padded(b'{"type": "deal"', LIMIT), token)
    assert fits.status_code == 200
    assert stored(redis_db, gid)[0] == 1


def test_a_body_on_a_read_or_a_delete_is_ignored(client, redis_db, game):
    gid, token = game
    read = client.get(f"/v1/games/{gid}", data=b"\xff" * (2 * LIMIT))
    assert read.status_code == 200
    assert read.get_json()["id"] == gid
    gone = client.delete(f"/v1/games/{gid}", data=b"x" * (2 * LIMIT), headers=auth(token))
    assert gone.status_code == 204
    assert stored(redis_db, gid) is None


# --- malformed JSON ------------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    b"[" * 5000 + b"]" * 5000,                                    # deeper than orjson's 1024
    b'{"variant": ' + b"[" * 2000 + b"]" * 2000 + b"}",
    b'{"variant": "\xff\xfe"}',                                   # not UTF-8
    b"\xef\xbb\xbf{\"variant\": \"clock\"}",                      # a byte order mark
    b'{"variant": "\\ud800"}',                                    # a lone surrogate
    b'{"variant": "clock", "seed": NaN}',
    b'{"variant": "clock", "seed": 1e400}',
    b'{"variant": "clock",}',
    b"",
    b"   ",
    b"null", b"[]", b'"clock"', b"42", b"true",
    b'{"variant": "clock"} {"variant": "clock"}',
    b"\x00" * 100,
])
def test_bodies_that_are_no_json_object_are_400_invalid_json(client, redis_db, game, body):
    gid, token = game
    before = snapshot(redis_db)
    for url in ("/v1/games", f"/v1/games/{gid}/moves"):
        response = client.post(url, data=body, content_type="application/json",
                               headers=auth(token))
        _problem(response, 400, "invalid_json")
    if body.strip():  # an empty undo body is a valid undo
        _problem(client.post(f"/v1/games/{gid}/undo", data=body,
                             content_type="application/json", headers=auth(token)),
                 400, "invalid_json")
    assert snapshot(redis_db) == before


def test_a_moderately_nested_value_is_a_field_error(client, redis_db, game):
    gid, token = game
    before = snapshot(redis_db)
    nested = b"[" * 500 + b"]" * 500
    for url, body in (("/v1/games", b'{"variant": "clock", "seed": ' + nested + b"}"),
                      (f"/v1/games/{gid}/moves", b'{"type": ' + nested + b"}")):
        response = client.post(url, data=body, content_type="application/json",
                               headers=auth(token))
        problem = _problem(response, 400, "invalid_request")
        assert set(problem["errors"]) in ({"seed"}, {"type"})
    assert snapshot(redis_db) == before


# --- wrong types ---------------------------------------------------------------------------
ODD_VALUES = [None, True, False, 0, -1, 1.5, 2**64, -(2**70), "", "x" * 5000, "\u202e",
              [], ["clock"], {}, {"a": 1}]


@pytest.mark.parametrize("field", ["variant", "seed", "undo", "colour"])
def test_every_wrong_type_in_a_create_is_a_400_naming_the_field(client, redis_db, field):
    base = {"variant": "four-corners", "seed": 7, "undo": "safe"}
    created = 0
    for value in ODD_VALUES:
        response = client.post("/v1/games", json={**base, field: value})
        # Only a null seed (the server chooses) and the seed 0 are valid here.
        if field == "seed" and (value is None or (value == 0 and value is not False)):
            assert response.status_code == 201, value
            created += 1
            continue
        problem = _problem(response, 400, "invalid_request")
        assert list(problem["errors"]) == [field], (field, value, problem)
    assert len(redis_db.keys("game:*")) == created


@pytest.mark.parametrize("field", ["type", "from", "to", "card"])
def test_every_wrong_type_in_a_move_is_a_400_and_changes_nothing(client, redis_db, game,
                                                                 field):
    gid, token = game
    before = snapshot(redis_db)
    base = {"type": "move", "from": "king-1", "to": "foundation-1"}
    for value in ODD_VALUES:
        response = play(client, gid, token, {**base, field: value})
        if response.status_code == 422:  # a well-formed move that breaks a rule
            assert field in ("from", "to")
            assert isinstance(value, str)
            assert 0 < len(value) <= 32
            assert response.get_json()["code"] in ("unknown_pile", "not_a_source",
                                                   "not_a_target")
            continue
        problem = _problem(response, 400, "invalid_request")
        assert set(problem["errors"]) <= {field, "_schema"}, (field, value, problem)
    for body in ({"type": "deal", "from": "stock"}, {"type": "deal", "to": None},
                 {"type": "resign", "card": "KS"}, {"type": "move", "from": "king-1"},
                 {"from": "king-1", "to": "king-2"}, {"type": "MOVE"}, {"type": "undo"}):
        _problem(play(client, gid, token, body), 400, "invalid_request")
    assert snapshot(redis_db) == before


@pytest.mark.parametrize("body", [{"steps": 1}, {"": None}, {"undo": True}])
def test_undo_takes_no_field(client, redis_db, game, body):
    gid, token = game
    play(client, gid, token, {"type": "deal"})
    before = snapshot(redis_db)
    response = client.post(f"/v1/games/{gid}/undo", json=body, headers=auth(token))
    problem = _problem(response, 400, "invalid_request")
    assert list(problem["errors"]) == list(body)
    assert snapshot(redis_db) == before


@pytest.mark.parametrize(("content_type", "status"), [
    ("application/json; charset=utf-8", 200),
    ("application/json;charset=UTF-8", 200),
    ("APPLICATION/JSON", 200),
    ('application/json; charset="utf-8"; profile=x', 200),
    ("application/json; charset=latin-1", 415),
    ("application/json; charset=utf-16", 415),
    ("text/plain", 415),
    ("text/json", 415),
    ("application/x-www-form-urlencoded", 415),
    ("multipart/form-data; boundary=zz", 415),
    ("application/problem+json", 415),
    ("application/yaml", 415),
    (";;;", 415),
    ("application/json; charset", 200),
])
def test_content_types(client, redis_db, game, content_type, status):
    gid, token = game
    before = snapshot(redis_db)
    response = client.post(f"/v1/games/{gid}/moves", data=b'{"type": "deal"}',
                           headers={**auth(token), "Content-Type": content_type})
    if status == 200:
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.get_json()["game"]["version"] == 1
    else:
        _problem(response, 415, "unsupported_media_type")
        assert snapshot(redis_db) == before


# --- headers -------------------------------------------------------------------------------
@pytest.mark.parametrize(("authorization", "code"), [
    (None, "missing_token"),
    ("", "missing_token"),
    ("Bearer", "missing_token"),
    ("Bearer ", "missing_token"),
    ("Basic dXNlcjpwYXNz", "missing_token"),
    ("Bearer a b", "missing_token"),
    ("Bearer \u00e9t\u00e9", "missing_token"),
    ("Bearer " + "\u00ff" * 50, "missing_token"),
    ("Bearer tok\x7fen", "missing_token"),
    ("Token abc", "missing_token"),
    ("Bearer " + "a" * 8000, "wrong_token"),
    ("Bearer " + "A" * 43, "wrong_token"),
    ("bearer " + "A" * 43, "wrong_token"),
    ("Bearer ====", "missing_token"),
])
def test_odd_authorization_headers(client, redis_db, game, authorization, code):
    gid, _token = game
    headers = {} if authorization is None else {"Authorization": authorization}
    before = snapshot(redis_db)
    for method, url, body in (("POST", f"/v1/games/{gid}/moves", {"type": "deal"}),
                              ("POST", f"/v1/games/{gid}/undo", None),
                              ("DELETE", f"/v1/games/{gid}", None)):
        response = client.open(url, method=method, json=body, headers=headers)
        _problem(response, 401 if code == "missing_token" else 403, code)
        if code == "missing_token":
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert snapshot(redis_db) == before


def test_the_token_may_come_with_odd_spacing_and_case(client, redis_db, game):
    gid, token = game
    for authorization in (f"bearer {token}", f"BEARER   {token}  ", f"Bearer\t{token}"):
        response = client.post(f"/v1/games/{gid}/moves", json={"type": "deal"},
                               headers={"Authorization": authorization})
        assert response.status_code in (200, 401), authorization
        if response.status_code == 401:
            _problem(response, 401, "missing_token")
    assert stored(redis_db, gid)[0] >= 1


@pytest.mark.parametrize(("if_match", "status"), [
    ('"0"', 200), ("*", 200), ('"9", "0"', 200), ("0", 200), ('W/"0"', 412), ('"1"', 412),
    ('"' + "9" * 400 + '"', 412), ('"-1"', 412), ('"0x0"', 412), ('"\u0660"', 412),
    (",,,,", 412), ('"', 412), ("W/", 412), ("", 412), ('"0', 412),
])
def test_odd_if_match_headers(client, redis_db, game, if_match, status):
    gid, token = game
    before = snapshot(redis_db)
    response = play(client, gid, token, {"type": "deal"}, If_Match=if_match)
    if status == 200:
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.get_json()["game"]["version"] == 1
    else:
        _problem(response, 412, "version_mismatch")
        assert snapshot(redis_db) == before


@pytest.mark.parametrize("if_none_match", ['"0"', 'W/"0"', "*", '"1", "0"'])
def test_if_none_match_on_reads(client, game, if_none_match):
    gid, _token = game
    for suffix in ("", "/moves", "/history"):
        response = client.get(f"/v1/games/{gid}{suffix}", headers={"If-None-Match": if_none_match})
        assert response.status_code == 304, (suffix, if_none_match)
        assert response.get_data() == b""
        assert response.headers["ETag"] == '"0"'


@pytest.mark.parametrize("if_none_match", ['"1"', "W/" * 1000, '"' * 999, "\u00e9", "1"])
def test_odd_if_none_match_is_a_full_answer(client, game, if_none_match):
    gid, _token = game
    response = client.get(f"/v1/games/{gid}", headers={"If-None-Match": if_none_match})
    assert response.status_code == 200
    assert response.get_json()["id"] == gid


@pytest.mark.parametrize("key", ["", "k" * 65, "cl\u00e9", "tab\there", "nul\x00",
                                 "\x7f", "line\x1bescape"])
def test_malformed_idempotency_keys_are_400_on_every_write(client, redis_db, game, key):
    gid, token = game
    before = snapshot(redis_db)
    for method, url, body in (("POST", "/v1/games", {"variant": "clock"}),
                              ("POST", f"/v1/games/{gid}/moves", {"type": "deal"}),
                              ("POST", f"/v1/games/{gid}/undo", None),
                              ("POST", f"/v1/games/{gid}/autoplay", None),
                              ("DELETE", f"/v1/games/{gid}", None)):
        response = client.open(url, method=method, json=body,
                               headers=auth(token, Idempotency_Key=key))
        _problem(response, 400, "invalid_header")
    assert snapshot(redis_db) == before


@pytest.mark.parametrize(("given", "echoed"), [
    ("abc-123", True), ("a" * 128, True), ("a.b:c_d-e", True), ("a" * 129, False),
    ("", False), ("has space", False), ("\u00e9", False), ("../../etc", False),
    ("<script>", False), ("a\x00b", False),
])
def test_x_request_id_is_echoed_only_when_safe(client, game, given, echoed):
    gid, _token = game
    for response in (client.get(f"/v1/games/{gid}", headers={"X-Request-ID": given}),
                     client.get("/v1/games/nope", headers={"X-Request-ID": given}),
                     client.post("/v1/games", data=b"[]", content_type="application/json",
                                 headers={"X-Request-ID": given})):
        sent = response.headers["X-Request-ID"]
        if echoed:
            assert sent == given
        else:
            assert sent != given
            assert len(sent) == 32
            assert set(sent) <= set("0123456789abcdef")


def test_duplicate_headers(client, redis_db, game):
    gid, token = game
    before = snapshot(redis_db)
    two_tokens = client.post(f"/v1/games/{gid}/moves", json={"type": "deal"},
                             headers=[("Authorization", f"Bearer {token}"),
                                      ("Authorization", "Bearer other")])
    _problem(two_tokens, 401, "missing_token")  # joined into one value: no token
    two_keys = client.post(f"/v1/games/{gid}/moves", json={"type": "deal"},
                           headers=[("Authorization", f"Bearer {token}"),
                                    ("Idempotency-Key", "k" * 40), ("Idempotency-Key", "k" * 40)])
    _problem(two_keys, 400, "invalid_header")  # "k...k, k...k" is longer than 64
    assert snapshot(redis_db) == before
    two_tags = client.post(f"/v1/games/{gid}/moves", json={"type": "deal"},
                           headers=[("Authorization", f"Bearer {token}"),
                                    ("If-Match", '"7"'), ("If-Match", '"0"')])
    assert two_tags.status_code == 200  # one list of tags: "7", "0"
    assert two_tags.get_json()["game"]["version"] == 1


@pytest.mark.parametrize("host", ["a..b", "x" * 300, "a b", "\u00e9t\u00e9", "[::1",
                                  "localhost:99999", "-", "a/b"])
def test_any_host_header_gets_the_documented_answers(client, game, host):
    gid, token = game
    read = client.get(f"/v1/games/{gid}", headers={"Host": host})
    assert read.status_code == 200
    assert read.get_json()["id"] == gid
    written = play(client, gid, token, {"type": "resign"}, Host=host)
    assert written.status_code in (200, 422)
    _problem(client.get("/v1/games/nope", headers={"Host": host}), 404, "game_not_found")


# --- paths ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("path", "code"), [
    ("/v1/games/%2e%2e", "game_not_found"),
    ("/v1/games/%2e%2e/moves", "game_not_found"),
    ("/v1/games/..%2F..%2Fetc%2Fpasswd", "not_found"),
    ("/v1/games/a%2Fb", "not_found"),
    ("/v1/games/%00", "game_not_found"),
    ("/v1/games/%ff%fe", "game_not_found"),
    ("/v1/games/\u00e9t\u00e9", "game_not_found"),
    ("/v1/games/\u202eevil", "game_not_found"),
    ("/v1/games/" + "A" * 22, "game_not_found"),
    ("/v1/games/" + "A" * 64, "game_not_found"),
    ("/v1/games/" + "A" * 65, "game_not_found"),
    ("/v1/games/" + "9" * 3000, "game_not_found"),
    ("/v1/games/" + "A" * 22 + "/history", "game_not_found"),
    ("/v1/games/" + "A" * 22 + "/events", "game_not_found"),
    ("/v1/games/" + "A" * 22 + "/hint", "game_not_found"),
    ("/v1/games//moves", "not_found"),
    ("/v1/games/x/moves/", "not_found"),
    ("/docs/a/b", "not_found"),
    ("/docs/%2e%2e/app.py", "not_found"),
    ("/web/..%2fapp.py", "not_found"),
    ("/web/.env", "not_found"),
    ("/v1/games/*", "game_not_found"),
    ("/v1/games/{id}", "game_not_found"),
])
def test_odd_paths_are_404(client, redis_db, path, code):
    _problem(client.get(path), 404, code)
    for method in ("POST", "DELETE"):
        response = client.open(path, method=method, json={"type": "deal"},
                               headers=auth("A" * 43))
        assert response.status_code in (401, 403, 404, 405), (method, path)
        if response.status_code == 404:
            assert response.get_json()["code"] in ("not_found", "game_not_found")
    assert redis_db.keys("game:*") == []


# --- the validating client itself ------------------------------------------------------------
def _wrong_app() -> Flask:
    """Answers every request with a Game that lacks most of its fields."""
    fake = Flask("wrong")

    @fake.route("/v1/games/<path:anything>", methods=["GET", "POST", "DELETE"])
    def wrong(anything):
        response = Response('{"id": "x"}', 200, mimetype="application/json")
        response.headers["X-Request-ID"] = "r"
        response.headers["ETag"] = '"0"'
        return response

    fake.test_client_class = ValidatingClient
    return fake


@pytest.mark.parametrize(("path", "kwargs"), [
    ("/v1/games/abc", {}),
    ("/v1/games/%2e%2e", {}),
    ("/v1/games/.", {}),
    ("/v1/games/abc", {"headers": {"Host": "a..b"}}),
    ("/v1/games/abc", {"data": b"\xff\xfe", "content_type": "application/json"}),
    ("/v1/games/abc", {"headers": {"If-None-Match": "W/" * 100, "Authorization": "x" * 9000}}),
])
def test_the_validating_client_checks_answers_to_exotic_requests(path, kwargs):
    client = _wrong_app().test_client()
    with pytest.raises(ContractError, match="does not match openapi.yaml"):
        client.get(path, **kwargs)
