"""The game store: the only module of the service that talks to Redis.

Layout (every key of one game shares the Redis Cluster hash tag ``{<id>}``):

- ``game:{<id>}`` HASH: ``v`` the version, ``d`` the game record (JSON: metadata and the
  engine snapshot, which holds the stock order and never leaves the server);
- ``game:{<id>}:h`` LIST of history entries ``"<version>|<encoded step>"``;
- ``game:{<id>}:idem:<sha256 of the Idempotency-Key>`` STRING: the first response of a
  write, kept ``IDEMPOTENCY_TTL_SECONDS``;
- ``create:idem:<sha256 of the Idempotency-Key>`` STRING: the same for ``POST /v1/games``,
  which has no game yet (the key is scoped by itself), written by the same script call
  that stores the new game;
- ``game:{<id>}:log`` STREAM, the events feed: one entry per accepted change (a move, an
  undo), with the id ``<version>-0`` and the fields ``k`` (``move`` or ``undo``), ``e``
  (the public JSON entry) and ``s`` (the game's status after it), trimmed to about
  ``EVENT_LOG_MAX`` entries; deleting the game adds a tombstone ``<version>-1`` with
  ``k`` = ``deleted`` (which wakes every blocked reader) and lets the log expire soon;
- ``stats`` HASH, counters ``<variant>:created``, ``<variant>:won``, ``<variant>:lost``,
  ``<variant>:resigned``.  It and ``create:idem:…`` are the keys outside a game's hash
  tag, so the scripts that touch them assume one Redis, not a Cluster.

Every write of a game is one call of one Lua script (:data:`_COMMIT`): it answers a stored
idempotency record instead of writing, refuses a changed version, and otherwise writes
the version, the record, the history entries, the feed entries, the statistics counter,
the idempotency record and the expiry together.  Reads are one round trip; an events
stream waits on the log with ``XREAD BLOCK`` on a connection pool of its own.  Every
Redis failure surfaces as :class:`StorageUnavailable`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import orjson
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["CommitResult", "FeedItem", "GameStore", "Stored", "StorageUnavailable",
           "WriteView"]

EXTENSION = "game_store"

#: Outcomes of :meth:`GameStore.commit`.
OK, CONFLICT, REPLAY, MISSING = "ok", "conflict", "replay", "missing"

# KEYS: game hash, history list, event log, stats hash, [idempotency record]
# ARGV: 1 expected version ('' = the game must not exist), 2 new version ('' = delete
#       the game), 3 new record, 4 history op ('' | 'push' | 'pop'), 5 history entries
#       to push ('\n'-separated), 6 idempotency record ('' = none), 7 idempotency TTL,
#       8 game TTL, 9 feed entries (JSON [[id, kind, entry, status], ...] or ''),
#       10 stats field to increment ('' = none), 11 log length, 12 tombstone TTL
_COMMIT = """
if ARGV[6] ~= '' then
  local first = redis.call('GET', KEYS[5])
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
-- The feed entries first: XADD is the only command here that can refuse (an id not
-- above the log's last one), and a script is not rolled back.
if ARGV[2] == '' then
  redis.call('XADD', KEYS[3], current .. '-1', 'k', 'deleted', 'e', '', 's', '')
  redis.call('EXPIRE', KEYS[3], ARGV[12])
  redis.call('DEL', KEYS[1], KEYS[2])
else
  if ARGV[9] ~= '' then
    for _, item in ipairs(cjson.decode(ARGV[9])) do
      redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[11], item[1],
                 'k', item[2], 'e', item[3], 's', item[4])
    end
  end
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  if ARGV[4] == 'push' then
    for entry in string.gmatch(ARGV[5], '[^\\n]+') do
      redis.call('RPUSH', KEYS[2], entry)
    end
  elseif ARGV[4] == 'pop' then
    redis.call('RPOP', KEYS[2])
  end
  redis.call('EXPIRE', KEYS[1], ARGV[8])
  redis.call('EXPIRE', KEYS[2], ARGV[8])
  redis.call('EXPIRE', KEYS[3], ARGV[8])
end
if ARGV[10] ~= '' then
  redis.call('HINCRBY', KEYS[4], ARGV[10], 1)
end
if ARGV[6] ~= '' then
  redis.call('SET', KEYS[5], ARGV[6], 'EX', ARGV[7])
end
return {'ok', ARGV[2]}
"""

#: The statistics counters (see the module docstring).
STATS_KEY = "stats"
#: How long the log of a deleted game is kept, so that every waiting reader sees its
#: tombstone.
TOMBSTONE_TTL = 60


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


def _create_idem_key(idempotency_key: str) -> str:
    return f"create:idem:{_digest(idempotency_key)}"


def _idem_key(game_id: str, idempotency_key: str) -> str:
    return f"game:{{{game_id}}}:idem:{_digest(idempotency_key)}"


def _log_key(game_id: str) -> str:
    return f"game:{{{game_id}}}:log"


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


@dataclass(frozen=True, slots=True)
class FeedItem:
    """One entry of a game's events feed, as the log holds it."""

    id: str  # the stream id: "<version>-0", or "<version>-1" for the tombstone
    kind: str  # "move", "undo" or "deleted"
    entry: bytes  # the public JSON entry {"version", "move", "events"} (b"" if deleted)
    status: str  # the game's status right after the entry ("" if deleted)

    @property
    def version(self) -> int:
        return int(self.id.partition("-")[0])


def _feed_items(entries) -> list[FeedItem]:
    items = []
    for stream_id, fields in entries or ():
        items.append(FeedItem(stream_id.decode(), fields.get(b"k", b"").decode(),
                              fields.get(b"e", b""), fields.get(b"s", b"").decode()))
    return items


def _stored(version: bytes | None, record: bytes | None) -> Stored | None:
    if version is None or record is None:
        return None
    return Stored(int(version), orjson.loads(record))


class GameStore:
    """Games in Redis.  ``init_app(app)`` builds the client from the app's config and
    registers the store as ``app.extensions["game_store"]``."""

    def __init__(self, app=None):
        self.client: redis.Redis | None = None
        self.stream_client: redis.Redis | None = None
        self.game_ttl = 0
        self.idempotency_ttl = 0
        self.log_length = 0
        self._commit = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app) -> None:
        config = app.config
        self.client = redis.Redis.from_url(config["REDIS_URL"], **self.client_options(config))
        self.game_ttl = int(config["GAME_TTL_SECONDS"])
        self.idempotency_ttl = int(config["IDEMPOTENCY_TTL_SECONDS"])
        self.log_length = int(config["EVENT_LOG_MAX"])
        self._commit = self.client.register_script(_COMMIT)
        # Events streams wait on the log with XREAD BLOCK, each holding a connection for
        # up to a heartbeat: a pool of their own, one connection per stream the process
        # admits (service.events caps them), with a socket timeout past the block time.
        options = dict(self.client_options(config))
        options["socket_timeout"] = (float(config["SSE_HEARTBEAT_SECONDS"])
                                     + float(config["REDIS_SOCKET_TIMEOUT"]) + 1.0)
        pool = redis.BlockingConnectionPool.from_url(
            config["REDIS_URL"], max_connections=max(1, int(config["SSE_MAX_STREAMS"])),
            timeout=float(config["REDIS_CONNECT_TIMEOUT"]), **options)
        self.stream_client = redis.Redis(connection_pool=pool)
        app.extensions[EXTENSION] = self

    @staticmethod
    def client_options(config) -> dict:
        """redis-py options that make a dead or hung Redis answer within the socket
        timeouts, and never send a command twice: a connection that breaks after Redis
        ran a write but before its reply arrived must not run the write again (the
        compare-and-set would fail, and the write loop would apply the move a second
        time; a create would discard the game it just stored).  A pooled connection
        that died with a restarted Redis is reconnected when it is taken from the pool
        (redis-py sees the closed socket), so no retry is needed for that."""
        return {
            "socket_timeout": config["REDIS_SOCKET_TIMEOUT"],
            "socket_connect_timeout": config["REDIS_CONNECT_TIMEOUT"],
            "health_check_interval": config["REDIS_HEALTH_CHECK_INTERVAL"],
            "retry": Retry(NoBackoff(), 0),
        }

    def close(self) -> None:
        for client in (self.client, self.stream_client):
            if client is not None:
                client.close()
        if self.stream_client is not None:
            self.stream_client.connection_pool.disconnect()

    # --- reads ----------------------------------------------------------------------
    @_storage_errors
    def ping(self) -> None:
        self.client.ping()

    @_storage_errors
    def load(self, game_id: str) -> Stored | None:
        version, record = self.client.hmget(_game_keys(game_id)[0], "v", "d")
        return _stored(version, record)

    @_storage_errors
    def load_for_write(self, game_id: str, idempotency_key: str | None, *,
                       last_entry: bool = True) -> WriteView:
        """The game, and (``last_entry``) its last history entry (only an undo needs
        it: ``last_entry=False`` leaves it None) and the idempotency record, in one round
        trip: one HMGET when that is all (a move), else one MULTI/EXEC."""
        game_key, history_key = _game_keys(game_id)
        if not last_entry and idempotency_key is None:
            version, record = self.client.hmget(game_key, "v", "d")
            return WriteView(_stored(version, record), None, None)
        pipe = self.client.pipeline(transaction=True)  # MULTI/EXEC: one consistent view
        pipe.hmget(game_key, "v", "d")
        if last_entry:
            pipe.lindex(history_key, -1)
        if idempotency_key is not None:
            pipe.get(_idem_key(game_id, idempotency_key))
        results = iter(pipe.execute())
        version, record = next(results)
        last = next(results) if last_entry else None
        first = next(results) if idempotency_key is not None else None
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

    # --- the events feed and the statistics -------------------------------------------
    @_storage_errors
    def feed(self, game_id: str, after: int) -> tuple[Stored, list[FeedItem]] | None:
        """The game and the log entries after version ``after``, in one consistent view."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hmget(_game_keys(game_id)[0], "v", "d")
        pipe.xrange(_log_key(game_id), min=f"{after + 1}-0", max="+")
        (version, record), entries = pipe.execute()
        game = _stored(version, record)
        if game is None:
            return None
        return game, _feed_items(entries)

    @_storage_errors
    def wait_feed(self, game_id: str, last_id: str, block_seconds: float) -> list[FeedItem]:
        """The log entries after stream id ``last_id``, waiting up to ``block_seconds``
        for one to arrive (an empty list if none did)."""
        answer = self.stream_client.xread({_log_key(game_id): last_id}, count=100,
                                          block=max(1, int(block_seconds * 1000)))
        if not answer:
            return []
        (_key, entries), = answer
        return _feed_items(entries)

    @_storage_errors
    def exists(self, game_id: str) -> bool:
        return bool(self.client.exists(_game_keys(game_id)[0]))

    @_storage_errors
    def stats(self) -> dict[str, int]:
        """The statistics counters (see the module docstring), missing ones absent."""
        return {field.decode(): int(value)
                for field, value in self.client.hgetall(STATS_KEY).items()}

    # --- writes ---------------------------------------------------------------------
    @_storage_errors
    def commit(
        self,
        game_id: str,
        *,
        expected: int | None,
        version: int | None,
        record: dict | None = None,
        push: str | Sequence[str] | None = None,
        pop: bool = False,
        idempotency_key: str | None = None,
        first_response: bytes | None = None,
        feed: Sequence[tuple[int, str, bytes, str]] = (),
        stat: str | None = None,
        create: bool = False,
    ) -> CommitResult:
        """Write the game atomically if its version is still ``expected`` (None: the
        game must not exist yet).  ``version`` None deletes the game and its history
        (and leaves a tombstone in its events log).  ``push`` appends one history entry
        or several, ``pop`` removes the last one.  ``feed`` appends entries to the events
        log: ``(version, kind, JSON entry, status after)``.  ``stat`` names a statistics
        counter to increment.  With an ``idempotency_key``, ``first_response`` is
        stored with the write, and a record already stored under that key is returned
        (REPLAY) instead of writing.  ``create``: the key belongs to ``POST /v1/games``
        (no game yet), so its record is scoped by the key alone."""
        keys = [*_game_keys(game_id), _log_key(game_id), STATS_KEY]
        if idempotency_key is not None:
            keys.append(_create_idem_key(idempotency_key) if create
                        else _idem_key(game_id, idempotency_key))
        pushed = [push] if isinstance(push, str) else list(push or ())
        if any(not entry or "\n" in entry for entry in pushed):
            raise ValueError("a history entry is one non-empty line")
        items = [[f"{item_version}-0", kind, entry.decode(), status]
                 for item_version, kind, entry, status in feed]
        args = [
            "" if expected is None else str(expected),
            "" if version is None else str(version),
            orjson.dumps(record) if record is not None else "",
            "push" if pushed else "pop" if pop else "",
            "\n".join(pushed),
            first_response if idempotency_key is not None else "",
            self.idempotency_ttl,
            self.game_ttl,
            orjson.dumps(items) if items else "",
            stat or "",
            self.log_length,
            TOMBSTONE_TTL,
        ]
        outcome, value = self._commit(keys=keys, args=args)
        outcome = outcome.decode()
        return CommitResult(outcome, value if outcome == REPLAY else None)

    # --- idempotency of POST /v1/games ----------------------------------------------
    @_storage_errors
    def created_response(self, idempotency_key: str) -> bytes | None:
        return self.client.get(_create_idem_key(idempotency_key))
