"""The game store: the only module of the service that talks to Redis.

Layout (every key of one game shares the Redis Cluster hash tag ``{<id>}``):

- ``game:{<id>}`` HASH: ``v`` the version, ``d`` the game record (JSON: metadata and the
  engine snapshot, which holds the stock order and never leaves the server);
- ``game:{<id>}:h`` LIST of history entries ``"<version>|<encoded step>"``;
- ``game:{<id>}:idem:<sha256 of the Idempotency-Key>`` STRING: the first response of a
  write, kept ``IDEMPOTENCY_TTL_SECONDS``;
- ``create:idem:<sha256 of the Idempotency-Key>`` STRING: the same for ``POST /v1/games``,
  which has no game yet (the key is scoped by itself).

Every write of a game is one call of one Lua script (:data:`_COMMIT`): it answers a stored
idempotency record instead of writing, refuses a changed version, and otherwise writes
the version, the record, the history entry, the idempotency record and the expiry
together.  Reads are one round trip.  Every Redis failure surfaces as
:class:`StorageUnavailable`.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import orjson
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["CommitResult", "GameStore", "Stored", "StorageUnavailable", "WriteView"]

EXTENSION = "game_store"

#: Outcomes of :meth:`GameStore.commit`.
OK, CONFLICT, REPLAY, MISSING = "ok", "conflict", "replay", "missing"

# KEYS: game hash, history list, [idempotency record]
# ARGV: expected version ('' = the game must not exist), new version ('' = delete the
#       game), new record, history op ('' | 'push' | 'pop'), history entry,
#       idempotency record ('' = none), idempotency TTL, game TTL
_COMMIT = """
if ARGV[6] ~= '' then
  local first = redis.call('GET', KEYS[3])
  if first then return {'replay', first} end
end
local current = redis.call('HGET', KEYS[1], 'v')
if ARGV[1] == '' then
  if current then return {'conflict', current} end
elseif not current then
  return {'missing', ''}
elseif current ~= ARGV[1] then
  return {'conflict', current}
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1], KEYS[2])
else
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  if ARGV[4] == 'push' then
    redis.call('RPUSH', KEYS[2], ARGV[5])
  elseif ARGV[4] == 'pop' then
    redis.call('RPOP', KEYS[2])
  end
  redis.call('EXPIRE', KEYS[1], ARGV[8])
  redis.call('EXPIRE', KEYS[2], ARGV[8])
end
if ARGV[6] ~= '' then
  redis.call('SET', KEYS[3], ARGV[6], 'EX', ARGV[7])
end
return {'ok', ARGV[2]}
"""


class StorageUnavailable(Exception):
    """Redis could not be reached, timed out, is loading or refused the command."""


def _storage_errors(method):
    """Turn every Redis failure of ``method`` into :class:`StorageUnavailable`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (redis.RedisError, OSError) as error:
            raise StorageUnavailable(f"{type(error).__name__}: {error}") from error

    return wrapper


def _digest(idempotency_key: str) -> str:
    return hashlib.sha256(idempotency_key.encode()).hexdigest()


def _game_keys(game_id: str) -> tuple[str, str]:
    return f"game:{{{game_id}}}", f"game:{{{game_id}}}:h"


def _idem_key(game_id: str, idempotency_key: str) -> str:
    return f"game:{{{game_id}}}:idem:{_digest(idempotency_key)}"


@dataclass(frozen=True, slots=True)
class Stored:
    """A game as stored: its version and its record (``state`` is the engine snapshot)."""

    version: int
    record: dict


@dataclass(frozen=True, slots=True)
class WriteView:
    """What a write needs, read in one round trip: the game (None if absent), its last
    history entry, and the idempotency record of the write's key (None if none)."""

    game: Stored | None
    last_entry: str | None
    first_response: bytes | None


@dataclass(frozen=True, slots=True)
class CommitResult:
    outcome: str  # OK, CONFLICT, REPLAY or MISSING
    first_response: bytes | None = None  # the stored record when REPLAY


def _stored(version: bytes | None, record: bytes | None) -> Stored | None:
    if version is None or record is None:
        return None
    return Stored(int(version), orjson.loads(record))


class GameStore:
    """Games in Redis.  ``init_app(app)`` builds the client from the app's config and
    registers the store as ``app.extensions["game_store"]``."""

    def __init__(self, app=None):
        self.client: redis.Redis | None = None
        self.game_ttl = 0
        self.idempotency_ttl = 0
        self._commit = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app) -> None:
        config = app.config
        self.client = redis.Redis.from_url(config["REDIS_URL"], **self.client_options(config))
        self.game_ttl = int(config["GAME_TTL_SECONDS"])
        self.idempotency_ttl = int(config["IDEMPOTENCY_TTL_SECONDS"])
        self._commit = self.client.register_script(_COMMIT)
        app.extensions[EXTENSION] = self

    @staticmethod
    def client_options(config) -> dict:
        """redis-py options that make a dead or hung Redis answer within the socket
        timeouts: one immediate retry on a broken connection (a pooled connection that
        died with a restarted Redis), none on a timeout (a write may have happened)."""
        return {
            "socket_timeout": config["REDIS_SOCKET_TIMEOUT"],
            "socket_connect_timeout": config["REDIS_CONNECT_TIMEOUT"],
            "health_check_interval": config["REDIS_HEALTH_CHECK_INTERVAL"],
            "retry": Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
        }

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    # --- reads ----------------------------------------------------------------------
    @_storage_errors
    def ping(self) -> None:
        self.client.ping()

    @_storage_errors
    def load(self, game_id: str) -> Stored | None:
        version, record = self.client.hmget(_game_keys(game_id)[0], "v", "d")
        return _stored(version, record)

    @_storage_errors
    def load_for_write(self, game_id: str, idempotency_key: str | None) -> WriteView:
        game_key, history_key = _game_keys(game_id)
        pipe = self.client.pipeline(transaction=True)  # MULTI/EXEC: one consistent view
        pipe.hmget(game_key, "v", "d")
        pipe.lindex(history_key, -1)
        if idempotency_key is not None:
            pipe.get(_idem_key(game_id, idempotency_key))
        results = pipe.execute()
        (version, record), last = results[0], results[1]
        first = results[2] if idempotency_key is not None else None
        return WriteView(_stored(version, record), last.decode() if last else None, first)

    @_storage_errors
    def history(self, game_id: str) -> tuple[Stored, list[str]] | None:
        game_key, history_key = _game_keys(game_id)
        pipe = self.client.pipeline(transaction=True)
        pipe.hmget(game_key, "v", "d")
        pipe.lrange(history_key, 0, -1)
        (version, record), entries = pipe.execute()
        game = _stored(version, record)
        if game is None:
            return None
        return game, [entry.decode() for entry in entries]

    # --- writes ---------------------------------------------------------------------
    @_storage_errors
    def commit(
        self,
        game_id: str,
        *,
        expected: int | None,
        version: int | None,
        record: dict | None = None,
        push: str | None = None,
        pop: bool = False,
        idempotency_key: str | None = None,
        first_response: bytes | None = None,
    ) -> CommitResult:
        """Write the game atomically if its version is still ``expected`` (None: the
        game must not exist yet).  ``version`` None deletes the game and its history.
        ``push`` appends a history entry, ``pop`` removes the last one.  With an
        ``idempotency_key``, ``first_response`` is stored with the write, and a record
        already stored under that key is returned (REPLAY) instead of writing."""
        keys = list(_game_keys(game_id))
        if idempotency_key is not None:
            keys.append(_idem_key(game_id, idempotency_key))
        args = [
            "" if expected is None else str(expected),
            "" if version is None else str(version),
            orjson.dumps(record) if record is not None else "",
            "push" if push is not None else "pop" if pop else "",
            push or "",
            first_response if idempotency_key is not None else "",
            self.idempotency_ttl,
            self.game_ttl,
        ]
        outcome, value = self._commit(keys=keys, args=args)
        outcome = outcome.decode()
        return CommitResult(outcome, value if outcome == REPLAY else None)

    @_storage_errors
    def discard(self, game_id: str) -> None:
        """Remove a game nobody was told about (the loser of a racing create)."""
        self.client.delete(*_game_keys(game_id))

    # --- idempotency of POST /v1/games ----------------------------------------------
    @_storage_errors
    def created_response(self, idempotency_key: str) -> bytes | None:
        return self.client.get(f"create:idem:{_digest(idempotency_key)}")

    @_storage_errors
    def remember_created(self, idempotency_key: str, first_response: bytes) -> bytes | None:
        """Store the first response of a create under its key, unless one is there
        already: then return that one (another request with the key won the race)."""
        key = f"create:idem:{_digest(idempotency_key)}"
        if self.client.set(key, first_response, nx=True, ex=self.idempotency_ttl):
            return None
        return self.client.get(key)
