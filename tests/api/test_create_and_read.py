"""POST /v1/games and GET /v1/games/<id>: shapes, secrets, storage, refusals."""

import hashlib
import io

import pytest

from service.engine import get_variant
from service.storage import keys
from tests.api.support import (
    GAME_ID_CHARS,
    create,
    piles_of,
    public_piles,
    snapshot,
    stored,
    stored_history,
)
from tests.notation import cards_on

GAME_FIELDS = {"id", "variant", "version", "status", "seed", "salt", "deal_commitment",
               "winnable", "undo", "undos", "moves_made", "piles", "created_at", "updated_at"}
TIMESTAMP = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"


@pytest.mark.parametrize("variant", ["clock", "salic-law", "four-corners"])
def test_create_with_a_seed_shows_the_deal_of_that_seed(client, redis_db, variant):
    game, token, response = create(client, variant, seed=42)
    assert response.headers["Location"] == f"/v1/games/{game['id']}"
    assert response.headers["ETag"] == '"0"'
    assert response.mimetype == "application/json"
    expected_fields = GAME_FIELDS | ({"next_deal"} if variant == "four-corners" else set())
    assert set(game) == expected_fields
    assert game["variant"] == variant
    assert (game["version"], game["status"], game["seed"], game["salt"]) == (0, "playing", 42,
                                                                             None)
    assert (game["undo"], game["undos"], game["moves_made"]) == ("safe", 0, 0)
    assert game["winnable"] is None
    assert game["created_at"] == game["updated_at"]
    assert len(game["id"]) == 22
    assert set(game["id"]) <= GAME_ID_CHARS
    assert len(token) >= 43
    state = get_variant(variant).deal(42)
    assert piles_of(game) == public_piles(state)
    counts = {pile["id"]: pile["count"] for pile in game["piles"]}
    assert counts == {spec.id: len(cards) for spec, cards in zip(state.variant.layout,
                                                                 state.piles, strict=True)}
    stock = next(pile for pile in game["piles"] if pile["id"] == "stock")
    assert stock["cards"] == []
    assert stock["count"] == len(cards_on(state, "stock")) > 0
    if variant == "four-corners":
        assert game["next_deal"] == "corner-tl"

    version, record = stored(redis_db, game["id"])
    assert version == 0
    assert record["state"] == state.to_dict()
    assert record["token"] == hashlib.sha256(token.encode()).hexdigest()
    assert token.encode() not in b"".join(v for v in snapshot(redis_db).values()
                                           if isinstance(v, bytes))
    assert stored_history(redis_db, game["id"]) == []
    ttl = redis_db.ttl(keys.game(game["id"]))
    assert 30 * 86400 - 10 < ttl <= 30 * 86400


def test_created_and_updated_at_are_utc_milliseconds(client):
    game, _token, _ = create(client)
    import re

    assert re.match(TIMESTAMP, game["created_at"])
    assert re.match(TIMESTAMP, game["updated_at"])


def test_deal_commitment_is_the_hash_of_variant_seed_and_salt(client, redis_db):
    game, _token, _ = create(client, "salic-law", seed=7)
    _version, record = stored(redis_db, game["id"])
    salt = record["salt"]
    assert len(salt) == 32
    assert int(salt, 16) >= 0
    expected = hashlib.sha256(f"salic-law:7:{salt}".encode()).hexdigest()
    assert game["deal_commitment"] == expected
    other, _token, _ = create(client, "salic-law", seed=7)
    assert other["deal_commitment"] != game["deal_commitment"]  # a new salt each time


@pytest.mark.cluster
def test_server_chosen_seed_is_hidden_but_stored(client, redis_db):
    game, _token, _ = create(client, "clock")
    assert game["seed"] is None
    assert game["salt"] is None
    _version, record = stored(redis_db, game["id"])
    assert 0 <= record["seed"] < 2**64
    assert record["chosen"] is False
    assert piles_of(game) == public_piles(get_variant("clock").deal(record["seed"]))


def test_seed_null_means_server_chosen(client):
    game, _token, _ = create(client, "clock", seed=None)
    assert game["seed"] is None


@pytest.mark.parametrize("seed", [0, 1, 2**53 + 1, 2**64 - 1])
def test_every_seed_of_the_range_is_accepted_exactly(client, seed):
    game, _token, _ = create(client, "four-corners", seed=seed)
    assert game["seed"] == seed
    assert piles_of(game) == public_piles(get_variant("four-corners").deal(seed))


@pytest.mark.parametrize("undo", ["full", "safe", "off"])
def test_undo_policy_is_kept(client, redis_db, undo):
    game, _token, _ = create(client, undo=undo)
    assert game["undo"] == undo
    assert stored(redis_db, game["id"])[1]["undo"] == undo


@pytest.mark.cluster
def test_two_games_have_different_ids_and_tokens(client):
    first, first_token, _ = create(client, seed=1)
    second, second_token, _ = create(client, seed=1)
    assert first["id"] != second["id"]
    assert first_token != second_token


def test_a_seed_with_a_zero_fraction_is_that_integer(client):
    """JSON Schema's ``integer`` takes 42.0 as 42 (schemathesis sends such seeds); a float
    past 2**53 no longer spells every integer and is refused (see the invalid fields)."""
    plain, _, _ = create(client, seed=42)
    whole, _, _ = create(client, seed=42.0)
    assert whole["seed"] == 42
    assert isinstance(whole["seed"], int)
    assert whole["piles"] == plain["piles"]
    assert whole["deal_commitment"] != plain["deal_commitment"]  # its own salt


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "variant"),
        ({"variant": "spider"}, "variant"),
        ({"variant": 3}, "variant"),
        ({"variant": "clock", "seed": -1}, "seed"),
        ({"variant": "clock", "seed": 2**64}, "seed"),
        ({"variant": "clock", "seed": 1.5}, "seed"),
        ({"variant": "clock", "seed": 2.0**60}, "seed"),
        ({"variant": "clock", "seed": "42"}, "seed"),
        ({"variant": "clock", "seed": True}, "seed"),
        ({"variant": "clock", "seed": [1]}, "seed"),
        ({"variant": "clock", "undo": "sometimes"}, "undo"),
        ({"variant": "clock", "undo": None}, "undo"),
        ({"variant": "clock", "colour": "red"}, "colour"),
        ({"variant": "clock", "id": "mine"}, "id"),
    ],
)
def test_create_refuses_invalid_fields(client, redis_db, body, field):
    response = client.post("/v1/games", json=body)
    assert response.status_code == 400
    assert response.mimetype == "application/problem+json"
    problem = response.get_json()
    assert problem["code"] == "invalid_request"
    assert problem["type"] == "urn:patience:problem:invalid_request"
    assert problem["status"] == 400
    assert problem["title"]
    assert problem["detail"]
    assert list(problem["errors"]) == [field]
    assert all(isinstance(m, str) for m in problem["errors"][field])
    assert redis_db.dbsize() == 0


@pytest.mark.parametrize(
    "data",
    [b"", b"   ", b"{", b"[]", b'"clock"', b"42", b"null", b'{"variant": "clock"} x',
     b'{"variant": "\xff"}', b'{"variant": "\\ud800"}', b"\xef\xbb\xbf{}",
     b'{"variant": NaN}', b"[" * 2000 + b"]" * 2000, b'{"a":' * 1100 + b"1" + b"}" * 1100],
)
def test_create_refuses_bodies_that_are_not_a_json_object(client, redis_db, data):
    # The contract client cannot parse a non-UTF-8 or 1000-deep request body itself.
    unparseable = b"\xff" in data or len(data) > 2000
    response = client.post("/v1/games", data=data, content_type="application/json",
                           contract=not unparseable)
    assert response.status_code == 400
    problem = response.get_json()
    assert problem["code"] == "invalid_json"
    assert redis_db.dbsize() == 0


def test_deep_but_parseable_nesting_is_an_invalid_field(client):
    data = b'{"variant": "clock", "seed": ' + b"[" * 500 + b"]" * 500 + b"}"
    response = client.post("/v1/games", data=data, content_type="application/json")
    assert response.status_code == 400
    assert response.get_json()["errors"] == {"seed": ["Not a valid integer."]}


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
     "application/json; charset=latin-1", "application/jsonx", "json"],
)
def test_create_refuses_other_content_types(client, redis_db, content_type):
    response = client.post("/v1/games", data=b'{"variant": "clock"}',
                           headers={"Content-Type": content_type})
    assert response.status_code == 415
    assert response.get_json()["code"] == "unsupported_media_type"
    assert redis_db.dbsize() == 0


def test_create_without_content_type_is_415(client, redis_db):
    response = client.post("/v1/games", data=b'{"variant": "clock"}')
    assert response.status_code == 415
    assert response.get_json()["code"] == "unsupported_media_type"


def test_charset_utf8_is_accepted(client):
    response = client.post("/v1/games", data=b'{"variant": "clock"}',
                           headers={"Content-Type": "Application/JSON; charset=UTF-8"})
    assert response.status_code == 201


def _padded(size: int) -> bytes:
    head = b'{"variant": "clock"'
    return head + b" " * (size - len(head) - 1) + b"}"


def test_body_of_exactly_16_kib_is_accepted(client):
    response = client.post("/v1/games", data=_padded(16384), content_type="application/json")
    assert response.status_code == 201


def test_body_over_16_kib_is_413(client, redis_db):
    response = client.post("/v1/games", data=_padded(16385), content_type="application/json")
    assert response.status_code == 413
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "body_too_large"
    assert redis_db.dbsize() == 0


def _chunked(client, data: bytes):
    # As gunicorn passes a chunked body: no Content-Length, wsgi.input_terminated set.
    return client.post("/v1/games", input_stream=io.BytesIO(data),
                       headers={"Content-Type": "application/json",
                                "Transfer-Encoding": "chunked"},
                       environ_overrides={"wsgi.input_terminated": True})


def test_chunked_body_over_16_kib_is_413(client, redis_db):
    response = _chunked(client, _padded(16385))
    assert response.status_code == 413
    assert response.get_json()["code"] == "body_too_large"
    assert redis_db.dbsize() == 0


def test_chunked_body_up_to_16_kib_is_read(client):
    assert _chunked(client, _padded(16384)).status_code == 201
    assert _chunked(client, b'{"variant": "salic-law"}').status_code == 201


def test_get_game_returns_the_game_with_its_etag(client):
    game, _token, _ = create(client, "four-corners", seed=9)
    response = client.get(f"/v1/games/{game['id']}")
    assert response.status_code == 200
    assert response.headers["ETag"] == '"0"'
    assert response.get_json() == game


def test_get_game_honours_if_none_match(client):
    game, _token, _ = create(client, seed=9)
    url = f"/v1/games/{game['id']}"
    for header in ('"0"', 'W/"0"', '"5", "0"', "*"):
        response = client.get(url, headers={"If-None-Match": header})
        assert response.status_code == 304, header
        assert response.get_data() == b""
        assert response.headers["ETag"] == '"0"'
    for header in ('"1"', "0x", '"00"'):
        response = client.get(url, headers={"If-None-Match": header})
        assert response.status_code == 200, header
        assert response.get_json() == game


@pytest.mark.parametrize("game_id", ["AAAAAAAAAAAAAAAAAAAAAA", "x", "a" * 64, "a" * 65,
                                     "with space", "%00", "é", "a.b"])
def test_unknown_game_is_404_for_every_read(client, game_id):
    for suffix in ("", "/moves", "/history"):
        response = client.get(f"/v1/games/{game_id}{suffix}")
        assert response.status_code == 404, (game_id, suffix)
        problem = response.get_json()
        assert problem["code"] == "game_not_found"


def test_reads_do_not_change_the_game_or_its_expiry(client, redis_db):
    game, _token, _ = create(client)
    key = keys.game(game["id"])
    redis_db.expire(key, 1000)
    before = snapshot(redis_db)
    for suffix in ("", "/moves", "/history"):
        assert client.get(f"/v1/games/{game['id']}{suffix}").status_code == 200
    assert snapshot(redis_db) == before
    assert redis_db.ttl(key) <= 1000
