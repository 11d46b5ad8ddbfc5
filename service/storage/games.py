"""The game repository: the only module of the service that reads and writes games in
Redis (the live feed's subscriptions are in :mod:`service.live`).

The key names are :mod:`.keys`; every key of one game shares the Redis Cluster hash tag
``{<id>}``.  A game is one hash: its version, its record
(:class:`service.game.record.GameRecord` as JSON: metadata and the engine snapshot,
which holds the stock order and never leaves the server) and its journal
(:mod:`service.engine.journal`: one short token per version, every move and undo since
the deal, from which the history and the events feed are replayed).  Next to it: the
idempotency record of each write sent with an ``Idempotency-Key`` (kept
``IDEMPOTENCY_TTL_SECONDS``; for ``POST /v1/games`` in the slot of the game it made,
whose id the key claimed first, :meth:`GameStore.create_target`), and the statistics
counters: one hash on one Redis; on a Redis Cluster one hash per slot, in the slot of
the games it counts (:func:`.cluster.stats_key`), summed on read.

Every write of a game is one call of one Lua script (:data:`.scripts.COMMIT`), on one
hash slot: it answers a stored idempotency record instead of writing, refuses a changed
version, and otherwise writes the version, the record, the journal tokens, the
statistics counter, the idempotency record and the expiry together, then publishes the
new version on the game's channel (a delete publishes ``deleted``).  With
``REDIS_WAIT_REPLICAS`` (1 on a cluster) a ``WAIT`` follows on the same connection, and
the write is acknowledged only once that many replicas have it.  Reads are one round
trip.  The commands of the request path (a read, a write's script) go over the
:class:`.connections.Connections` of the mode: one connection per thread (a bounded
pool where gevent patches the process, in the events worker group; on a cluster, one
connection per thread and master: :class:`.cluster.ClusterConnections`), the others
over redis-py's pool (a RedisCluster on a cluster).  Every Redis failure surfaces as
:class:`StorageUnavailable`.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import orjson
import redis
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, RedisClusterException
from redis.retry import Retry

from service.game.record import GameRecord, StoredGame
from service.storage import cluster, keys
from service.storage.connections import Connections, request_connections
from service.storage.scripts import CLAIM, COMMIT, TOUCH

__all__ = ["CommitResult", "GameStore", "StorageUnavailable", "WriteView", "storage_errors"]

EXTENSION = "game_store"

#: Outcomes of :meth:`GameStore.commit`.
OK, CONFLICT, REPLAY, MISSING = "ok", "conflict", "replay", "missing"


class StorageUnavailable(Exception):
    """Redis could not be reached, timed out, is loading or refused the command."""


def storage_errors(method):
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
        #: The connections of the request path; on a cluster, :attr:`_cluster` too.
        self._fast: Connections | None = None
        self._cluster: cluster.ClusterConnections | None = None
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
            self._fast = self._cluster = cluster.ClusterConnections(url, options)
        else:
            self._client = redis.Redis.from_url(url, **options)
            self._fast = request_connections(url, options)
        self.game_ttl = int(config["GAME_TTL_SECONDS"])
        self.idempotency_ttl = int(config["IDEMPOTENCY_TTL_SECONDS"])
        wait = config.get("REDIS_WAIT_REPLICAS")
        self.wait_replicas = (1 if self.cluster else 0) if wait is None else max(0, int(wait))
        self.wait_timeout_ms = max(1, int(config["REDIS_WAIT_TIMEOUT_MS"]))
        self._commit_sha = hashlib.sha1(COMMIT.encode()).hexdigest()
        self._touch_sha = hashlib.sha1(TOUCH.encode()).hexdigest()
        self._claim_sha = hashlib.sha1(CLAIM.encode()).hexdigest()
        app.extensions[EXTENSION] = self

    @property
    def request_connections(self) -> Connections:
        """The connections of the request path (the rate limiter's counters use them
        too: :mod:`.rate_limits`)."""
        return self._fast

    @property
    def client(self) -> redis.Redis:
        """The redis-py client of the commands off the request path (a RedisCluster on
        a cluster)."""
        return self._cluster.client if self.cluster else self._client

    @storage_errors
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
    @storage_errors
    def ping(self) -> None:
        """Raise StorageUnavailable unless this process can reach its Redis: the one
        server, or on a cluster any master (a shard failing over stops only its own
        games, not the process: :meth:`.cluster.ClusterConnections.ping`)."""
        if self.cluster:
            self._cluster.ping()
        else:
            self.client.ping()

    @storage_errors
    def load(self, game_id: str) -> StoredGame | None:
        version, record = self._fast.execute("HMGET", keys.game(game_id), keys.VERSION,
                                             keys.RECORD)
        return _stored(version, record)

    @storage_errors
    def load_with_journal(self, game_id: str) -> tuple[StoredGame, str] | None:
        """The game and its journal, in one round trip (None if there is no game)."""
        version, record, journal = self._fast.execute(
            "HMGET", keys.game(game_id), keys.VERSION, keys.RECORD, keys.JOURNAL)
        game = _stored(version, record)
        return None if game is None else (game, (journal or b"").decode())

    @storage_errors
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

    @storage_errors
    def exists(self, game_id: str) -> bool:
        return bool(self.client.exists(keys.game(game_id)))

    @storage_errors
    def stats(self) -> dict[str, int]:
        """The statistics counters (:func:`.keys.stat`), missing ones absent."""
        if self.cluster:
            counters = cluster.read_stats(self._cluster, keys.STATS)
        else:
            counters = self.client.hgetall(keys.STATS)
        return {field.decode(): int(value) for field, value in counters.items()}

    def _stats_key(self, game_id: str) -> str:
        if self.cluster:
            return cluster.stats_key(keys.STATS, keys.game(game_id))
        return keys.STATS

    # --- writes ---------------------------------------------------------------------
    @storage_errors
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
                outcome, value = self._fast.execute("EVAL", COMMIT, len(names), *names,
                                                    *args)
        else:
            outcome, value = self._confirmed(
                names[0], ("EVALSHA", self._commit_sha, len(names), *names, *args), COMMIT)
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
        it (see :data:`~service.storage.scripts.TOUCH`)."""
        if self.wait_replicas:
            self._confirmed(key, ("EVALSHA", self._touch_sha, 1, key), TOUCH)

    # --- idempotency of POST /v1/games ----------------------------------------------
    @storage_errors
    def claimed_target(self, idempotency_key: str) -> str | None:
        """The id that a create with ``idempotency_key`` claimed, if one did
        (:meth:`create_target`)."""
        found = self._fast.execute("GET", keys.create_target(idempotency_key))
        return None if found is None else found.decode()

    @storage_errors
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
            found = self._confirmed(key, command, CLAIM)
        else:
            try:
                found = self._fast.execute(*command)
            except NoScriptError:  # a new or restarted Redis: nothing ran
                found = self._fast.execute("EVAL", CLAIM, *command[2:])
        return found.decode() if isinstance(found, bytes) else found

    @storage_errors
    def created_response(self, game_id: str, idempotency_key: str) -> bytes | None:
        """The stored first answer of a create with this key, whose game is
        ``game_id`` (:meth:`create_target`)."""
        record_key = keys.create_idempotency(game_id, idempotency_key)
        first = self._fast.execute("GET", record_key)
        if first is not None:
            self._confirm_record(record_key)
        return first
