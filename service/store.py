"""The game repository: the only module of the service that reads and writes games in
Redis (the live feed's subscriptions are in :mod:`service.live`).

The key names are :mod:`service.keys`; every key of one game shares the Redis Cluster
hash tag ``{<id>}``.  A game is one hash: its version, its record
(:class:`service.game.record.GameRecord` as JSON: metadata and the engine snapshot,
which holds the stock order and never leaves the server) and its journal
(:mod:`service.engine.journal`: one short token per version, every move and undo since
the deal, from which the history and the events feed are replayed).  Next to it: the
idempotency record of each write sent with an ``Idempotency-Key`` (kept
``IDEMPOTENCY_TTL_SECONDS``; for ``POST /v1/games`` in the slot of the game it made,
whose id the key claimed first, :meth:`GameStore.create_target`), and the statistics
counters: one hash on one Redis; on a Redis Cluster one hash per slot, in the slot of
the games it counts (:func:`service.cluster.stats_key`), summed on read.

Every write of a game is one call of one Lua script (:data:`_COMMIT`), on one hash slot:
it answers a stored idempotency record instead of writing, refuses a changed version,
and otherwise writes the version, the record, the journal tokens, the statistics
counter, the idempotency record and the expiry together, then publishes the new version
on the game's channel (a delete publishes ``deleted``).  With ``REDIS_WAIT_REPLICAS``
(1 on a cluster) a ``WAIT`` follows on the same connection, and the write is
acknowledged only once that many replicas have it.  Reads are one round trip.  The
commands of the request path (a read, a write's script) go over one connection per
thread (:class:`_ThreadConnections`; a bounded pool where gevent patches the process,
in the events worker group; on a cluster, one connection per thread and master:
:class:`service.cluster.ClusterConnections`), the others over redis-py's pool (a
RedisCluster on a cluster).  Every Redis failure surfaces as
:class:`StorageUnavailable`.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import weakref
from dataclasses import dataclass

import orjson
import redis
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, RedisClusterException
from redis.retry import Retry

from service import cluster, keys
from service.game.record import GameRecord, StoredGame

__all__ = ["CommitResult", "GameStore", "StorageUnavailable", "WriteView"]

EXTENSION = "game_store"

#: Outcomes of :meth:`GameStore.commit`.
OK, CONFLICT, REPLAY, MISSING = "ok", "conflict", "replay", "missing"

# KEYS: game hash, stats hash, [idempotency record]
# ARGV: 1 expected version ('' = the game must not exist), 2 new version ('' = delete
#       the game), 3 new record, 4 journal tokens to append ('' = none), 5 idempotency
#       record ('' = none), 6 idempotency TTL, 7 game TTL, 8 stats field to increment
#       ('' = none), 9 the game's channel, 10 '1' when the answer waits for replicas
# A replay that waits for replicas first writes the record's own expiry again: the
# replicas confirm that write, and with it the first one, which came before it.
_COMMIT = """
if ARGV[5] ~= '' then
  local first = redis.call('GET', KEYS[3])
  if first then
    if ARGV[10] == '1' then
      local ttl = redis.call('PTTL', KEYS[3])
      if ttl > 0 then redis.call('PEXPIRE', KEYS[3], ttl) end
    end
    return {'replay', first}
  end
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
  redis.call('DEL', KEYS[1])
else
  if ARGV[4] ~= '' then
    local journal = redis.call('HGET', KEYS[1], 'j') or ''
    redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3], 'j', journal .. ARGV[4])
  else
    redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  end
  redis.call('EXPIRE', KEYS[1], ARGV[7])
end
if ARGV[8] ~= '' then
  redis.call('HINCRBY', KEYS[2], ARGV[8], 1)
end
if ARGV[5] ~= '' then
  redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[6])
end
if ARGV[2] == '' then
  redis.call('PUBLISH', ARGV[9], 'deleted')
elseif ARGV[2] ~= current then
  redis.call('PUBLISH', ARGV[9], ARGV[2])
end
return {'ok', ARGV[2]}
"""

# KEYS: the create target of an Idempotency-Key.  ARGV: 1 the id to claim, 2 its TTL.
# Answers the id in force: the one claimed first (its expiry written again, for a WAIT
# to confirm), else ARGV[1].
_CLAIM = """
local current = redis.call('GET', KEYS[1])
if current then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
  return current
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return ARGV[1]
"""

# KEYS: an idempotency record.  Writes its expiry again, for WAIT to confirm.
_TOUCH = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return ttl
"""

class StorageUnavailable(Exception):
    """Redis could not be reached, timed out, is loading or refused the command."""


def _storage_errors(method):
    """Turn every Redis failure of ``method`` into :class:`StorageUnavailable`."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (redis.RedisError, RedisClusterException, OSError) as error:
            raise StorageUnavailable(f"{type(error).__name__}: {error}") from error

    return wrapper


@dataclass(frozen=True, slots=True)
class WriteView:
    """What a write needs, read in one round trip: the game (None if absent), its
    journal ('' unless asked for) and the idempotency record of the write's key (None if
    none)."""

    game: StoredGame | None
    journal: str
    first_response: bytes | None


@dataclass(frozen=True, slots=True)
class CommitResult:
    outcome: str  # OK, CONFLICT, REPLAY or MISSING
    first_response: bytes | None = None  # the stored record when REPLAY


def _stored(version: bytes | None, record: bytes | None) -> StoredGame | None:
    if version is None or record is None:
        return None
    return StoredGame(int(version), GameRecord.from_json(orjson.loads(record)))


def _round_trip(connection, commands: list[tuple]) -> list:
    """``commands`` sent together on ``connection`` (one round trip): their replies,
    errors as exception objects.  A connection that failed midway is dropped: replies
    may be left unread on it."""
    try:
        connection.send_packed_command(connection.pack_commands(commands))
        return cluster.read_replies(connection, len(commands))
    except BaseException:
        connection.disconnect()
        raise


class _ThreadConnections:
    """One redis-py connection per thread for the commands of the request path.

    redis-py's pooled client spends more CPU per command on taking a connection from the
    pool and giving it back (a lock, a readiness poll, bookkeeping) than on the command
    itself (README, "Performance", has the figures).  A gthread worker keeps its
    threads, so each thread keeps a
    connection of its own instead and sends on it directly, with the same options (the
    socket timeouts, no retry).  Like the pool, it checks before each command that the
    connection has nothing unread and was not closed by the server (a restarted Redis),
    and reconnects if so; a connection that failed is dropped, the next command
    reconnects."""

    def __init__(self, url: str, options: dict):
        pool = redis.ConnectionPool.from_url(url, **options)
        self._make = functools.partial(pool.connection_class, **pool.connection_kwargs)
        self._local = threading.local()
        self._all: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def _connection(self):
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._make()
            with self._lock:
                self._all.add(connection)
            connection.connect()
            return connection
        return cluster.ready(connection)

    def execute(self, *args):
        connection = self._connection()
        try:
            connection.send_command(*args)
            return connection.read_response()
        except redis.ResponseError:
            raise  # the connection is fine: Redis answered with an error
        except BaseException:
            connection.disconnect()
            raise

    def transaction(self, *commands) -> list:
        """``commands`` in one MULTI/EXEC, sent together (one round trip): their
        replies, in order."""
        connection = self._connection()
        try:
            connection.send_packed_command(
                connection.pack_commands([("MULTI",), *commands, ("EXEC",)]))
            replies = [connection.read_response() for _ in range(len(commands) + 2)]
        except BaseException:
            connection.disconnect()  # replies may be left unread: never reuse it
            raise
        return replies[-1]

    def run(self, _key, commands: list[tuple]) -> list:
        """``commands`` sent together on this thread's connection (one round trip):
        their replies, errors as exception objects."""
        return _round_trip(self._connection(), commands)

    def close(self) -> None:
        with self._lock:
            connections = list(self._all)
        for connection in connections:
            connection.disconnect()


class _PooledConnections:
    """The commands of the request path over a bounded pool, for a process patched by
    gevent (the events worker group): there a "thread" is a greenlet, one per request
    and per open stream, and a connection each would mean one per stream."""

    def __init__(self, url: str, options: dict, size: int = 512):
        self._pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=size, timeout=options.get("socket_timeout"), **options)

    def execute(self, *args):
        connection = self._pool.get_connection()
        try:
            connection.send_command(*args)
            return connection.read_response()
        except redis.ResponseError:
            raise
        except BaseException:
            connection.disconnect()
            raise
        finally:
            self._pool.release(connection)

    def transaction(self, *commands) -> list:
        connection = self._pool.get_connection()
        try:
            connection.send_packed_command(
                connection.pack_commands([("MULTI",), *commands, ("EXEC",)]))
            replies = [connection.read_response() for _ in range(len(commands) + 2)]
        except BaseException:
            connection.disconnect()
            raise
        finally:
            self._pool.release(connection)
        return replies[-1]

    def run(self, _key, commands: list[tuple]) -> list:
        """``commands`` sent together on one connection of the pool (one round trip):
        their replies, errors as exception objects."""
        connection = self._pool.get_connection()
        try:
            return _round_trip(connection, commands)
        finally:
            self._pool.release(connection)

    def close(self) -> None:
        self._pool.disconnect()


def _request_connections(url: str, options: dict):
    """Per-thread connections, or a pool where threads are gevent's greenlets."""
    try:
        from gevent import monkey
    except ImportError:
        return _ThreadConnections(url, options)
    if monkey.is_module_patched("threading"):
        return _PooledConnections(url, options)
    return _ThreadConnections(url, options)


class GameStore:
    """Games in Redis.  ``init_app(app)`` builds the client from the app's config and
    registers the store as ``app.extensions["game_store"]``."""

    def __init__(self, app=None):
        self.cluster = False
        self.game_ttl = 0
        self.idempotency_ttl = 0
        self.wait_replicas = 0
        self.wait_timeout_ms = 0
        self._client: redis.Redis | None = None
        self._fast: (_ThreadConnections | _PooledConnections | cluster.ClusterConnections
                     | None) = None
        self._commit_sha = ""
        self._touch_sha = ""
        self._claim_sha = ""
        if app is not None:
            self.init_app(app)

    def init_app(self, app) -> None:
        config = app.config
        url = config["REDIS_URL"]
        options = self.client_options(config)
        self.cluster = cluster.is_cluster_url(url)
        if self.cluster:  # the RedisCluster is made on first use
            self._fast = cluster.ClusterConnections(url, options)
        else:
            self._client = redis.Redis.from_url(url, **options)
            self._fast = _request_connections(url, options)
        self.game_ttl = int(config["GAME_TTL_SECONDS"])
        self.idempotency_ttl = int(config["IDEMPOTENCY_TTL_SECONDS"])
        wait = config.get("REDIS_WAIT_REPLICAS")
        self.wait_replicas = (1 if self.cluster else 0) if wait is None else max(0, int(wait))
        self.wait_timeout_ms = max(1, int(config["REDIS_WAIT_TIMEOUT_MS"]))
        self._commit_sha = hashlib.sha1(_COMMIT.encode()).hexdigest()
        self._touch_sha = hashlib.sha1(_TOUCH.encode()).hexdigest()
        self._claim_sha = hashlib.sha1(_CLAIM.encode()).hexdigest()
        app.extensions[EXTENSION] = self

    @property
    def client(self) -> redis.Redis:
        """The redis-py client of the commands off the request path (a RedisCluster on
        a cluster)."""
        return self._fast.client if self.cluster else self._client

    @_storage_errors
    def node_of(self, key: str) -> tuple[str, int]:
        """On a cluster: the address of the master that serves ``key``'s slot now."""
        node = self.client.get_node_from_key(key)
        return node.host, node.port

    @staticmethod
    def client_options(config) -> dict:
        """redis-py options that make a dead or hung Redis answer within the socket
        timeouts, and never send a command twice: a connection that breaks after Redis
        ran a write but before its reply arrived must not run the write again (the
        compare-and-set would fail, and the write loop would apply the move a second
        time; a create would discard the game it just stored).  A connection that died
        with a restarted Redis is reconnected before its next command (redis-py sees
        the closed socket), so no retry is needed for that."""
        return {
            "socket_timeout": config["REDIS_SOCKET_TIMEOUT"],
            "socket_connect_timeout": config["REDIS_CONNECT_TIMEOUT"],
            "health_check_interval": config["REDIS_HEALTH_CHECK_INTERVAL"],
            "retry": Retry(NoBackoff(), 0),
        }

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._fast is not None:
            self._fast.close()

    # --- reads ----------------------------------------------------------------------
    @_storage_errors
    def ping(self) -> None:
        """Raise StorageUnavailable unless this process can reach its Redis: the one
        server, or on a cluster any master (a shard failing over stops only its own
        games, not the process: :meth:`service.cluster.ClusterConnections.ping`)."""
        if self.cluster:
            self._fast.ping()
        else:
            self.client.ping()

    @_storage_errors
    def load(self, game_id: str) -> StoredGame | None:
        version, record = self._fast.execute("HMGET", keys.game(game_id), keys.VERSION,
                                             keys.RECORD)
        return _stored(version, record)

    @_storage_errors
    def load_with_journal(self, game_id: str) -> tuple[StoredGame, str] | None:
        """The game and its journal, in one round trip (None if there is no game)."""
        version, record, journal = self._fast.execute(
            "HMGET", keys.game(game_id), keys.VERSION, keys.RECORD, keys.JOURNAL)
        game = _stored(version, record)
        return None if game is None else (game, (journal or b"").decode())

    @_storage_errors
    def load_for_write(self, game_id: str, idempotency_key: str | None, *,
                       journal: bool = False) -> WriteView:
        """The game, its journal (only with ``journal``: an undo needs it) and the
        idempotency record of ``idempotency_key``, in one round trip: one HMGET when
        there is no key, else one MULTI/EXEC."""
        fields = (keys.VERSION, keys.RECORD, keys.JOURNAL) if journal else \
            (keys.VERSION, keys.RECORD)
        game_key = keys.game(game_id)
        if idempotency_key is None:
            values = self._fast.execute("HMGET", game_key, *fields)
            first = None
        else:  # MULTI/EXEC: one consistent view
            record_key = keys.write_idempotency(game_id, idempotency_key)
            values, first = self._fast.transaction(("HMGET", game_key, *fields),
                                                   ("GET", record_key))
            if first is not None:
                self._confirm_record(record_key)
        text = (values[2] or b"").decode() if journal else ""
        return WriteView(_stored(values[0], values[1]), text, first)

    @_storage_errors
    def exists(self, game_id: str) -> bool:
        return bool(self.client.exists(keys.game(game_id)))

    @_storage_errors
    def stats(self) -> dict[str, int]:
        """The statistics counters (:func:`service.keys.stat`), missing ones absent."""
        if self.cluster:
            counters = cluster.read_stats(self._fast, keys.STATS)
        else:
            counters = self.client.hgetall(keys.STATS)
        return {field.decode(): int(value) for field, value in counters.items()}

    def _stats_key(self, game_id: str) -> str:
        if self.cluster:
            return cluster.stats_key(keys.STATS, keys.game(game_id))
        return keys.STATS

    # --- writes ---------------------------------------------------------------------
    @_storage_errors
    def commit(
        self,
        game_id: str,
        *,
        expected: int | None,
        version: int | None,
        record: GameRecord | None = None,
        journal: str = "",
        idempotency_key: str | None = None,
        first_response: bytes | None = None,
        stat: str | None = None,
        create: bool = False,
    ) -> CommitResult:
        """Write the game atomically if its version is still ``expected`` (None: the
        game must not exist yet).  ``version`` None deletes the game.  ``journal``
        holds the tokens to append to the game's journal, one per version added.
        ``stat`` names a statistics counter to increment.  With an
        ``idempotency_key``, ``first_response`` is stored with the write, and a record
        already stored under that key is returned (REPLAY) instead of writing.
        ``create``: the key belongs to ``POST /v1/games`` (no game yet), so its record
        is scoped by the key alone.  Every change publishes the new version on the
        game's channel (a delete: ``deleted``)."""
        names = [keys.game(game_id), self._stats_key(game_id)]
        if idempotency_key is not None:
            names.append(keys.create_idempotency(game_id, idempotency_key) if create
                         else keys.write_idempotency(game_id, idempotency_key))
        args = (
            "" if expected is None else str(expected),
            "" if version is None else str(version),
            orjson.dumps(record.to_json()) if record is not None else "",
            journal,
            first_response if idempotency_key is not None else "",
            self.idempotency_ttl,
            self.game_ttl,
            stat or "",
            keys.channel(game_id),
            "1" if self.wait_replicas else "",
        )
        if not self.wait_replicas:
            try:
                outcome, value = self._fast.execute("EVALSHA", self._commit_sha, len(names),
                                                    *names, *args)
            except NoScriptError:  # a new or restarted Redis: nothing ran, send the script
                outcome, value = self._fast.execute("EVAL", _COMMIT, len(names), *names,
                                                    *args)
        else:
            outcome, value = self._confirmed(
                names[0], ("EVALSHA", self._commit_sha, len(names), *names, *args), _COMMIT)
        outcome = outcome.decode()
        return CommitResult(outcome, value if outcome == REPLAY else None)

    def _confirmed(self, key: str, command: tuple, script: str):
        """The reply of ``command`` (an EVALSHA of ``script``), sent with a WAIT on the
        same connection in one round trip: raises StorageUnavailable unless
        ``wait_replicas`` replicas confirm it within ``wait_timeout_ms``.  Then the
        write may well be on the master (and on some replicas) without being
        acknowledged: a retry with the same Idempotency-Key answers its first answer,
        once confirmed in turn, and never applies it twice."""
        wait = ("WAIT", self.wait_replicas, self.wait_timeout_ms)
        reply, confirmed = self._fast.run(key, [command, wait])
        if isinstance(reply, NoScriptError):  # nothing ran: send the script itself
            reply, confirmed = self._fast.run(key, [("EVAL", script, *command[2:]), wait])
        for value in (reply, confirmed):
            if isinstance(value, Exception):
                raise value
        if confirmed < self.wait_replicas:
            raise StorageUnavailable(
                f"the write reached {confirmed} of {self.wait_replicas} replicas within "
                f"{self.wait_timeout_ms} ms")
        return reply

    def _confirm_record(self, key: str) -> None:
        """Before a stored first answer is answered again: have the replicas confirm
        it (see :data:`_TOUCH`)."""
        if self.wait_replicas:
            self._confirmed(key, ("EVALSHA", self._touch_sha, 1, key), _TOUCH)

    # --- idempotency of POST /v1/games ----------------------------------------------
    @_storage_errors
    def claimed_target(self, idempotency_key: str) -> str | None:
        """The id that a create with ``idempotency_key`` claimed, if one did
        (:meth:`create_target`)."""
        found = self._fast.execute("GET", keys.create_target(idempotency_key))
        return None if found is None else found.decode()

    @_storage_errors
    def create_target(self, idempotency_key: str, game_id: str) -> str:
        """The id of the game a create with ``idempotency_key`` makes: ``game_id``,
        unless an earlier request with the key claimed another (for as long as
        idempotency records are kept).  The claim comes before the game is stored, in a
        key of its own (its slot is not the game's): a request that dies between the
        two leaves a claimed id without a game, which the retry then stores.  Its
        retries thus find the game, and its record in the game's slot, from the key
        alone; nothing derives the id from the key.  Confirmed by the replicas like a
        write."""
        key = keys.create_target(idempotency_key)
        command = ("EVALSHA", self._claim_sha, 1, key, game_id, self.idempotency_ttl)
        if self.wait_replicas:
            found = self._confirmed(key, command, _CLAIM)
        else:
            try:
                found = self._fast.execute(*command)
            except NoScriptError:  # a new or restarted Redis: nothing ran
                found = self._fast.execute("EVAL", _CLAIM, *command[2:])
        return found.decode() if isinstance(found, bytes) else found

    @_storage_errors
    def created_response(self, game_id: str, idempotency_key: str) -> bytes | None:
        """The stored first answer of a create with this key, whose game is
        ``game_id`` (:meth:`create_target`)."""
        record_key = keys.create_idempotency(game_id, idempotency_key)
        first = self._fast.execute("GET", record_key)
        if first is not None:
            self._confirm_record(record_key)
        return first
