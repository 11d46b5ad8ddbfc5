"""The stored first answer of an idempotent create holds the player token: Redis holds it
sealed with the server's SECRET_KEY (AES-GCM), so neither a dump of Redis nor a dump
plus the (guessable) Idempotency-Key gives the token away; and production refuses to
start without a SECRET_KEY."""

from __future__ import annotations

import base64
import hashlib

import orjson
import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import request
from flask.sessions import NullSession

from service.app import close_app, create_app
from service.game.errors import GameError
from service.game.idempotency import IdempotencyRecords
from service.storage import keys
from tests.api.support import make_app, snapshot

LOW_ENTROPY_KEY = "1"


def _values(dump: dict) -> list[bytes]:
    found = []
    for value in dump.values():
        found.extend(value.values() if isinstance(value, dict) else [value])
    return [value for value in found if isinstance(value, bytes)]


def _candidate_keys(idempotency_key: str) -> list[bytes]:
    """Keys that someone who knows only the Idempotency-Key could try."""
    raw = idempotency_key.encode()
    hkdf = [HKDF(algorithm=SHA256(), length=32, salt=None, info=info).derive(raw)
            for info in (b"", b"patience-server: idempotency records")]
    return [hashlib.sha256(raw).digest(), *hkdf]


def _shake_unseal(secret: str, blob: bytes) -> bytes:
    """A key stream derived from the Idempotency-Key alone, over a leading nonce."""
    nonce, sealed = blob[:16], blob[16:]
    pad = hashlib.shake_256(b"patience-create\n" + nonce + secret.encode()).digest(len(sealed))
    return bytes(a ^ b for a, b in zip(sealed, pad, strict=True))


def test_a_redis_dump_of_an_idempotent_create_does_not_give_the_token_away(app, client,
                                                                           redis_db):
    response = client.post("/v1/games", json={"variant": "clock"},
                           headers={"Idempotency-Key": LOW_ENTROPY_KEY})
    assert response.status_code == 201
    token = response.get_json()["player_token"]
    dump = snapshot(redis_db)
    values = _values(dump)
    for form in (token.encode(), base64.b64encode(token.encode())):
        assert not any(form in value for value in values)
    game_id = response.get_json()["game"]["id"]
    record = orjson.loads(dump[keys.create_idempotency(game_id, LOW_ENTROPY_KEY).encode()])
    assert set(record) == {"request", "token", "answer"}
    blob = base64.b64decode(record["answer"])
    # Nothing derived from the Idempotency-Key alone opens it.
    for key in _candidate_keys(LOW_ENTROPY_KEY):
        for context in (b"", LOW_ENTROPY_KEY.encode(), f"\n{LOW_ENTROPY_KEY}".encode()):
            with pytest.raises(InvalidTag):
                AESGCM(key).decrypt(blob[:12], blob[12:], context)
    assert token.encode() not in _shake_unseal(LOW_ENTROPY_KEY, blob)
    # The server key does open it, to the first answer with the token.
    records = IdempotencyRecords(app.config["SECRET_KEY"])
    reply = records.open(orjson.dumps(record), game_id=None, idempotency_key=LOW_ENTROPY_KEY,
                         request=record["request"], token=None)
    assert reply.body == response.get_data()
    assert orjson.loads(reply.body)["player_token"] == token
    # The key's first request claimed the (random) id of the game: nothing derives it.
    assert dump[keys.create_target(LOW_ENTROPY_KEY).encode()] == game_id.encode()
    # Under another server key it does not open: the retry is told to use a new key.
    with pytest.raises(GameError) as refused:
        IdempotencyRecords("x" * 32).open(orjson.dumps(record), game_id=None,
                                          idempotency_key=LOW_ENTROPY_KEY,
                                          request=record["request"], token=None)
    assert (refused.value.status, refused.value.code) == (422, "idempotency_key_reused")
    assert "another server key" in refused.value.detail


@pytest.mark.parametrize("secret", [None, "", "too-short"])
def test_production_refuses_to_start_without_a_long_secret_key(monkeypatch, secret):
    if secret is None:
        monkeypatch.delenv("SECRET_KEY", raising=False)
    else:
        monkeypatch.setenv("SECRET_KEY", secret)
    with pytest.raises(RuntimeError, match="SECRET_KEY must be set"):
        create_app()


def test_an_app_for_tests_without_a_secret_key_makes_its_own(redis_url):
    app = create_app({"TESTING": True, "REDIS_URL": redis_url, "SECRET_KEY": None})
    try:
        assert len(app.config["SECRET_KEY"]) >= 32
    finally:
        close_app(app)


def test_a_retry_after_the_server_key_changed_is_422_and_changes_nothing(clean_redis,
                                                                         redis_url):
    body = {"variant": "salic-law", "seed": 3}
    headers = {"Idempotency-Key": LOW_ENTROPY_KEY}
    before, after = (make_app(redis_url, SECRET_KEY=key * 32) for key in "ab")
    try:
        first = before.test_client().post("/v1/games", json=body, headers=headers)
        assert first.status_code == 201
        dump = snapshot(clean_redis)
        retry = after.test_client().post("/v1/games", json=body, headers=headers)
        assert retry.status_code == 422
        assert retry.get_json()["code"] == "idempotency_key_reused"
        assert snapshot(clean_redis) == dump
        again = before.test_client().post("/v1/games", json=body, headers=headers)
        assert again.get_data() == first.get_data()
    finally:
        close_app(before)
        close_app(after)


def test_the_secret_key_signs_no_session_cookie(app):
    """SECRET_KEY seals idempotency records; the API has no session, so Flask never reads
    or signs a session cookie (with a key set it would on every request)."""
    with app.test_request_context("/v1/variants", headers={"Cookie": "session=eyJ4IjoxfQ.x.y"}):
        assert isinstance(app.session_interface.open_session(app, request), NullSession)


def test_a_record_in_another_format_is_422_not_a_failure(client, redis_db):
    created = client.post("/v1/games", json={"variant": "clock", "seed": 5})
    game, token = created.get_json()["game"], created.get_json()["player_token"]
    redis_db.set(keys.write_idempotency(game["id"], LOW_ENTROPY_KEY),
                 orjson.dumps({"s": 200, "b": "{}", "v": 1, "l": None, "r": "x", "a": "y"}))
    before = snapshot(redis_db)
    response = client.post(f"/v1/games/{game['id']}/moves", json={"type": "draw"},
                           headers={"Authorization": f"Bearer {token}",
                                    "Idempotency-Key": LOW_ENTROPY_KEY})
    assert response.status_code == 422
    assert response.get_json()["code"] == "idempotency_key_reused"
    assert "another format" in response.get_json()["detail"]
    assert snapshot(redis_db) == before
