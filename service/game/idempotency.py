"""Idempotency records: the first answer to a write with an ``Idempotency-Key``, stored
with the write and sent again, byte for byte, to every retry for 24 hours.

A record is JSON: ``request`` (the SHA-256 of the write's kind and parsed body),
``token`` (the SHA-256 of the player token; null for a create, which has none yet) and
``answer``, the :class:`Reply` sealed with AES-GCM (``cryptography``) under a key derived
from the server's ``SECRET_KEY``, its associated data naming the game and the
Idempotency-Key.  The first answer of a create holds the player token: whoever reads
Redis, even knowing or guessing the Idempotency-Key, cannot read it without the server
key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from service.game.errors import GameError, idempotency_key_reused, wrong_token

_NONCE_BYTES = 12
_FIELDS = frozenset(("request", "token", "answer"))
_KEY_INFO = b"patience-server: idempotency records"


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer to a write, as sent and as stored for idempotent retries."""

    status: int
    body: bytes
    version: int | None = None  # the ETag, if the answer carries a game
    location: str | None = None

    def to_json(self) -> dict:
        return {"status": self.status, "body": self.body.decode(), "version": self.version,
                "location": self.location}

    @classmethod
    def from_json(cls, data: dict) -> Reply:
        return cls(data["status"], data["body"].encode(), data["version"], data["location"])


def request_hash(kind: str, body: dict) -> str:
    """What makes two writes "the same body": their kind and their parsed JSON, so that
    key order and white space do not matter (an empty undo body equals ``{}``)."""
    canonical = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(kind.encode() + b"\n" + canonical).hexdigest()


def _lost(why: str) -> GameError:
    return GameError(422, "idempotency_key_reused",
                     f"the first answer to this Idempotency-Key {why} and cannot be sent "
                     "again: use a new Idempotency-Key")


class IdempotencyRecords:
    """Seals and opens idempotency records with the server key."""

    def __init__(self, secret_key: str):
        key = HKDF(algorithm=SHA256(), length=32, salt=None,
                   info=_KEY_INFO).derive(secret_key.encode())
        self._aead = AESGCM(key)

    @staticmethod
    def _context(game_id: str | None, idempotency_key: str) -> bytes:
        return f"{game_id or ''}\n{idempotency_key}".encode()

    def seal(self, reply: Reply, *, game_id: str | None, idempotency_key: str,
             request: str, token: str | None) -> bytes:
        """The record of ``reply``; ``game_id`` None for a create (scoped by the key)."""
        nonce = os.urandom(_NONCE_BYTES)
        answer = nonce + self._aead.encrypt(nonce, orjson.dumps(reply.to_json()),
                                            self._context(game_id, idempotency_key))
        return orjson.dumps({"request": request, "token": token,
                             "answer": base64.b64encode(answer).decode()})

    def open(self, record: bytes, *, game_id: str | None, idempotency_key: str,
             request: str, token: str | None) -> Reply:
        """The first answer, for a retry: 403 ``wrong_token`` unless the retry carries the
        same player token, 422 ``idempotency_key_reused`` unless the same body, or when
        the record was sealed under another ``SECRET_KEY`` or has another format (the
        first answer is lost: the client needs a new key, as for a key used with another
        body)."""
        data = orjson.loads(record)
        if not isinstance(data, dict) or not data.keys() >= _FIELDS:
            raise _lost("is stored in another format")
        if data["token"] is not None and not hmac.compare_digest(data["token"], token or ""):
            raise wrong_token()
        if not hmac.compare_digest(data["request"], request):
            raise idempotency_key_reused()
        answer = base64.b64decode(data["answer"])
        try:
            plain = self._aead.decrypt(answer[:_NONCE_BYTES], answer[_NONCE_BYTES:],
                                       self._context(game_id, idempotency_key))
        except InvalidTag:
            raise _lost("was sealed under another server key") from None
        return Reply.from_json(orjson.loads(plain))
