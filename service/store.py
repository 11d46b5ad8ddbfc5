"""The game store: the only module of the service that talks to Redis.

Layout (every key of one game shares the Redis Cluster hash tag ``{<id>}``):

- ``game:{<id>}`` HASH: ``v`` the version, ``d`` the game record (JSON: metadata and the
  engine snapshot, which holds the stock order and never leaves the server), ``j`` the
  journal (:mod:`service.engine.journal`: one short token per version, every move and
  undo since the deal, from which the history and the events feed are replayed);
- ``game:{<id>}:idem:<sha256 of the Idempotency-Key>`` STRING: the first response of a
  write, kept ``IDEMPOTENCY_TTL_SECONDS``;
- ``game:{<id>}:idem:create:<sha256 of the Idempotency-Key>`` STRING: the same for
  ``POST /v1/games``, written by the same script call that stores the new game.  The key
  is scoped by itself: such a game's id is derived from it (:func:`new_game_id`), so the
  record is found by the key alone and still lives in the game's hash slot;
- ``stats`` HASH, counters ``<variant>:created``, ``<variant>:won``, ``<variant>:lost``,
  ``<variant>:resigned``; on a Redis Cluster one such hash per hash slot,
  ``stats:{<tag>}`` in the slot of the games it counts (:mod:`service.cluster`), summed
  on read;
- the pub/sub channel ``game:{<id>}:feed`` (no key, no memory): every change of the game
  publishes its new version there, a delete publishes ``deleted``; events streams wait
  on it.

A game after a hundred moves takes about 1.2 KB of Redis memory: one hash, no list of
steps and no log of events (``python -m bench http`` measures it).

Every write of a game is one call of one Lua script (:data:`_COMMIT`), on one hash slot:
it answers a stored idempotency record instead of writing, refuses a changed version,
and otherwise writes the version, the record, the journal tokens, the statistics
counter, the idempotency record and the expiry together, then publishes the new version.
With ``REDIS_WAIT_REPLICAS`` (1 on a cluster) a ``WAIT`` follows on the same connection,
and the write is acknowledged only once that many replicas have it.  Reads are one round
trip.  The commands of the request path (a read, a write's script) go over one
connection per thread (:class:`_ThreadConnections`; on a cluster, per thread and master:
:class:`service.cluster.ClusterConnections`), the others over redis-py's pool (a
RedisCluster on a cluster).  Every Redis failure surfaces as :class:`StorageUnavailable`.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import secrets
import threading
import weakref
from dataclasses import dataclass

import orjson
import redis
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, RedisClusterException
from redis.retry import Retry

from service import cluster

__all__ = ["CommitResult", "GameStore", "Stored", "StorageUnavailable", "Subscription",
           "WriteView"]

EXTENSION = "game_store"

#: Outcomes of :meth:`GameStore.commit`.
OK, CONFLICT, REPLAY, MISSING = "ok", "conflict", "replay", "missing"
#: What a delete publishes on the game's channel (a change publishes its version).
DELETED = b"deleted"

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

#: The statistics counters (see the module docstring).
STATS_KEY = "stats"

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


def _digest(idempotency_key: str) -> str:
    return hashlib.sha256(idempotency_key.encode()).hexdigest()


def _game_key(game_id: str) -> str:
    return f"game:{{{game_id}}}"


def _channel(game_id: str) -> str:
    return f"game:{{{game_id}}}:feed"


def _create_idem_key(game_id: str, idempotency_key: str) -> str:
    return f"game:{{{game_id}}}:idem:create:{_digest(idempotency_key)}"


def new_game_id(idempotency_key: str | None = None, attempt: int = 0) -> str:
    """The id of a new game: 128 random bits; for a create with an Idempotency-Key,
    128 bits of the key's SHA-256 (with the attempt number), so that the create's
    idempotency record, found by the key alone, lives in the game's hash slot."""
    if idempotency_key is None:
        return secrets.token_urlsafe(16)
    digest = hashlib.sha256(f"game-id:{attempt}:{idempotency_key}".encode()).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def _idem_key(game_id: str, idempotency_key: str) -> str:
    return f"game:{{{game_id}}}:idem:{_digest(idempotency_key)}"


@dataclass(frozen=True, slots=True)
class Stored:
    """A game as stored: its version and its record (``state`` is the engine snapshot)."""

    version: int
    record: dict


@dataclass(frozen=True, slots=True)
class WriteView:
    """What a write needs, read in one round trip: the game (None if absent), its
    journal ('' unless asked for) and the idempotency record of the write's key (None if
    none)."""

    game: Stored | None
    journal: str
    first_response: bytes | None


@dataclass(frozen=True, slots=True)
class CommitResult:
    outcome: str  # OK, CONFLICT, REPLAY or MISSING
    first_response: bytes | None = None  # the stored record when REPLAY


def _stored(version: bytes | None, record: bytes | None) -> Stored | None:
    if version is None or record is None:
        return None
    return Stored(int(version), orjson.loads(record))


class _ThreadConnections:
    """One redis-py connection per thread for the commands of the request path.

    redis-py's pooled client spends about 40 µs of CPU per command on taking a
    connection from the pool and giving it back (a lock, a readiness poll, bookkeeping),
    twice what the command itself costs on the client (measured on 2 cores: 63 against
    23 µs for an HMGET).  A gthread worker keeps its threads, so each thread keeps a
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
        try:
            ready = not connection.can_read()  # connects a dropped one
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            ready = False
        if not ready:
            connection.disconnect()
            connection.connect()
        return connection

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
        connection = self._connection()
        try:
            connection.send_packed_command(connection.pack_commands(commands))
            replies = []
            for _ in commands:
                try:
                    replies.append(connection.read_response())
                except redis.ResponseError as error:
                    replies.append(error)
        except BaseException:
            connection.disconnect()
            raise
        return replies

    def close(self) -> None:
        with self._lock:
            connections = list(self._all)
        for connection in connections:
            connection.disconnect()


class Subscription:
    """The pub/sub channel of one game, for an events stream: :meth:`wait` returns what
    was published since (versions as ints, :data:`DELETED`), :meth:`close` gives the
    connection back."""

    def __init__(self, pubsub):
        self._pubsub = pubsub

    @_storage_errors
    def wait(self, seconds: float) -> list:
        """What the game's channel carried, waiting up to ``seconds`` for the first
        message (an empty list if none came)."""
        found = []
        message = self._pubsub.get_message(ignore_subscribe_messages=True,
                                           timeout=max(0.001, seconds))
        while message is not None:
            data = message.get("data")
            if message.get("type") == "message":
                found.append(DELETED if data == DELETED else int(data))
            message = self._pubsub.get_message(ignore_subscribe_messages=True, timeout=0)
        return found

    def close(self) -> None:
        with contextlib.suppress(redis.RedisError, OSError):
            self._pubsub.close()


class GameStore:
    """Games in Redis.  ``init_app(app)`` builds the client from the app's config and
    registers the store as ``app.extensions["game_store"]``."""

    def __init__(self, app=None):
        self.cluster = False
        self.stream_client: redis.Redis | None = None
        self.game_ttl = 0
        self.idempotency_ttl = 0
        self.wait_replicas = 0
        self.wait_timeout_ms = 0
        self._client: redis.Redis | None = None
        self._fast: _ThreadConnections | cluster.ClusterConnections | None = None
        self._commit_sha = ""
        self._touch_sha = ""
        self._confirm_timeout = 1.0
        self._stream_options: dict = {}
        self._stream_clients: dict[str, redis.Redis] = {}
        self._lock = threading.Lock()
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
            self._fast = _ThreadConnections(url, options)
        self.game_ttl = int(config["GAME_TTL_SECONDS"])
        self.idempotency_ttl = int(config["IDEMPOTENCY_TTL_SECONDS"])
        wait = config.get("REDIS_WAIT_REPLICAS")
        self.wait_replicas = (1 if self.cluster else 0) if wait is None else max(0, int(wait))
        self.wait_timeout_ms = max(1, int(config["REDIS_WAIT_TIMEOUT_MS"]))
        self._confirm_timeout = float(config["REDIS_SOCKET_TIMEOUT"])
        self._commit_sha = hashlib.sha1(_COMMIT.encode()).hexdigest()
        self._touch_sha = hashlib.sha1(_TOUCH.encode()).hexdigest()
        # Events streams wait on their game's channel, each holding a connection for as
        # long as it is open: a pool of their own, one connection per stream the process
        # admits (service.events caps them), with a socket timeout past the heartbeat.
        # On a cluster, a PUBLISH reaches every node: a stream subscribes on the master
        # of its game's slot, through a pool of that node.
        stream_options = dict(options)
        stream_options["socket_timeout"] = (float(config["SSE_HEARTBEAT_SECONDS"])
                                            + float(config["REDIS_SOCKET_TIMEOUT"]) + 1.0)
        stream_options["max_connections"] = max(1, int(config["SSE_MAX_STREAMS"]))
        stream_options["timeout"] = float(config["REDIS_CONNECT_TIMEOUT"])
        if self.cluster:
            self._stream_options = dict(stream_options, **cluster.parse_cluster_url(url)[1])
        else:
            pool = redis.BlockingConnectionPool.from_url(url, **stream_options)
            self.stream_client = redis.Redis(connection_pool=pool)
        app.extensions[EXTENSION] = self

    @property
    def client(self) -> redis.Redis:
        """The redis-py client of the commands off the request path (a RedisCluster on
        a cluster)."""
        return self._fast.client if self.cluster else self._client

    def _stream_redis(self, game_id: str) -> redis.Redis:
        if not self.cluster:
            return self.stream_client
        node = self.client.get_node_from_key(_channel(game_id))
        with self._lock:
            client = self._stream_clients.get(node.name)
            if client is None:
                pool = redis.BlockingConnectionPool(host=node.host, port=node.port,
                                                    **self._stream_options)
                client = self._stream_clients[node.name] = redis.Redis(connection_pool=pool)
        return client

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
        with self._lock:
            streams = [self.stream_client, *self._stream_clients.values()]
            self._stream_clients = {}
        for client in (self._client, *streams):
            if client is not None:
                client.close()
                client.connection_pool.disconnect()
        if self._fast is not None:
            self._fast.close()

    # --- reads ----------------------------------------------------------------------
    @_storage_errors
    def ping(self) -> None:
        self.client.ping()

    @_storage_errors
    def load(self, game_id: str) -> Stored | None:
        version, record = self._fast.execute("HMGET", _game_key(game_id), "v", "d")
        return _stored(version, record)

    @_storage_errors
    def load_with_journal(self, game_id: str) -> tuple[Stored, str] | None:
        """The game and its journal, in one round trip (None if there is no game)."""
        version, record, journal = self._fast.execute("HMGET", _game_key(game_id),
                                                      "v", "d", "j")
        game = _stored(version, record)
        return None if game is None else (game, (journal or b"").decode())

    @_storage_errors
    def load_for_write(self, game_id: str, idempotency_key: str | None, *,
                       journal: bool = False) -> WriteView:
        """The game, its journal (only with ``journal``: an undo needs it) and the
        idempotency record of ``idempotency_key``, in one round trip: one HMGET when
        there is no key, else one MULTI/EXEC."""
        fields = ("v", "d", "j") if journal else ("v", "d")
        game_key = _game_key(game_id)
        if idempotency_key is None:
            values = self._fast.execute("HMGET", game_key, *fields)
            first = None
        else:  # MULTI/EXEC: one consistent view
            record_key = _idem_key(game_id, idempotency_key)
            values, first = self._fast.transaction(
                ("HMGET", game_key, *fields), ("GET", record_key))
            if first is not None:
                self._confirm_record(record_key)
        text = (values[2] or b"").decode() if journal else ""
        return WriteView(_stored(values[0], values[1]), text, first)

    @_storage_errors
    def exists(self, game_id: str) -> bool:
        return bool(self.client.exists(_game_key(game_id)))

    @_storage_errors
    def stats(self) -> dict[str, int]:
        """The statistics counters (see the module docstring), missing ones absent."""
        if self.cluster:
            counters = cluster.read_stats(self._fast, STATS_KEY)
        else:
            counters = self.client.hgetall(STATS_KEY)
        return {field.decode(): int(value) for field, value in counters.items()}

    def _stats_key(self, game_id: str) -> str:
        return cluster.stats_key(STATS_KEY, _game_key(game_id)) if self.cluster else STATS_KEY

    @_storage_errors
    def subscribe(self, game_id: str) -> Subscription:
        """A subscription to the game's channel, on a connection of the streams' pool:
        subscribe first, then read the game, and no change can slip between the two."""
        pubsub = self._stream_redis(game_id).pubsub()
        try:
            pubsub.subscribe(_channel(game_id))
            # Redis confirms the subscription once it is in force: only then may the
            # game be read (a read on another connection could be served first).
            confirmed = pubsub.get_message(timeout=self._confirm_timeout)
            if confirmed is None or confirmed.get("type") != "subscribe":
                raise redis.TimeoutError(f"no confirmation of the subscription: {confirmed}")
        except BaseException:
            pubsub.close()
            raise
        return Subscription(pubsub)

    # --- writes ---------------------------------------------------------------------
    @_storage_errors
    def commit(
        self,
        game_id: str,
        *,
        expected: int | None,
        version: int | None,
        record: dict | None = None,
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
        keys = [_game_key(game_id), self._stats_key(game_id)]
        if idempotency_key is not None:
            keys.append(_create_idem_key(game_id, idempotency_key) if create
                        else _idem_key(game_id, idempotency_key))
        args = (
            "" if expected is None else str(expected),
            "" if version is None else str(version),
            orjson.dumps(record) if record is not None else "",
            journal,
            first_response if idempotency_key is not None else "",
            self.idempotency_ttl,
            self.game_ttl,
            stat or "",
            _channel(game_id),
            "1" if self.wait_replicas else "",
        )
        if not self.wait_replicas:
            try:
                outcome, value = self._fast.execute("EVALSHA", self._commit_sha, len(keys),
                                                    *keys, *args)
            except NoScriptError:  # a new or restarted Redis: nothing ran, send the script
                outcome, value = self._fast.execute("EVAL", _COMMIT, len(keys), *keys,
                                                    *args)
        else:
            outcome, value = self._confirmed(keys[0], ("EVALSHA", self._commit_sha, len(keys),
                                                       *keys, *args), _COMMIT)
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
    def created_response(self, idempotency_key: str) -> bytes | None:
        """The stored first answer of a create with this key (see :func:`new_game_id`:
        of its first attempt; a later attempt's is found by its commit)."""
        key = _create_idem_key(new_game_id(idempotency_key), idempotency_key)
        first = self._fast.execute("GET", key)
        if first is not None:
            self._confirm_record(key)
        return first
