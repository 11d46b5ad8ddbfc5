"""The game repository: the only module of the service that reads and writes games in
Redis (the live feed's subscriptions are in :mod:`service.live`).

The key names are :mod:`.keys`; every key of one game shares the Redis Cluster hash tag
``{<id>}``.  A game is one hash: its version, its record (a JSON object, which the
store hands to the game layer as it is: :class:`service.game.record.GameRecord`,
metadata and the engine snapshot, which holds the stock order and never leaves the
server) and its journal
(:mod:`service.engine.journal`: one short token per version, every move and undo since
the deal, from which the history and the events feed are replayed).  Next to it: the
idempotency record of each write sent with an ``Idempotency-Key`` (kept
``IDEMPOTENCY_TTL_SECONDS``; for ``POST /v1/games`` in the slot of the game it made,
whose id the key claimed first, :meth:`GameStore.create_target`), and the statistics
counters: one hash on one Redis; on a Redis Cluster one hash per slot, in the slot of
the games it counts (:meth:`.backend.Backend.stats_key`), summed on read.

Every write of a game is one call of one Lua script (:data:`.scripts.COMMIT`), on one
hash slot: it answers a stored idempotency record instead of writing, refuses a changed
version, and otherwise writes the version, the record, the journal tokens, the
statistics counter, the idempotency record and the expiry together, then publishes the
new version on the game's channel (a delete publishes ``deleted``).  With
``REDIS_WAIT_REPLICAS`` (1 on a cluster) a ``WAIT`` follows on the same connection, and
the write is acknowledged only once that many replicas have it.  Reads are one round
trip.  The store talks to Redis through its :class:`.backend.Backend` (one Redis or a
Redis Cluster, chosen once from the URL): the commands of the request path (a read, a
write's script) over the backend's :class:`.connections.Connections` (one connection
per thread; a bounded pool where gevent patches the process, in the events
group; on a cluster, one connection per thread and master), the others over redis-py's
pool (a RedisCluster on a cluster).  Every Redis failure surfaces as
:class:`StorageUnavailable`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import orjson
import redis
from redis.exceptions import RedisClusterException

from service.storage import keys
from service.storage.backend import Backend, Script
from service.storage.scripts import CLAIM, CLEAR_OUTBOX, COMMIT, TOUCH

__all__ = ["CommitResult", "GameStore", "StorageUnavailable", "WriteView", "storage_errors"]

#: Outcomes of :meth:`GameStore.commit`.
OK, CONFLICT, ANSWERED, MISSING = "ok", "conflict", "answered", "missing"
#: A ranked game's write at or past its deadline (Redis' clock).
CLOSED = "closed"

_COMMIT, _TOUCH, _CLAIM = Script(COMMIT), Script(TOUCH), Script(CLAIM)
_CLEAR_OUTBOX = Script(CLEAR_OUTBOX)

#: What the store gives back for a game: made by the store's ``decode`` from the stored
#: version and record (the game layer's :class:`service.game.record.StoredGame`).
Game = TypeVar("Game")


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
class WriteView(Generic[Game]):
    """What a write needs, read in one round trip: the game (None if absent), its
    journal ('' unless asked for) and the idempotency record of the write's key (None if
    none)."""

    game: Game | None
    journal: str
    first_response: bytes | None


@dataclass(frozen=True, slots=True)
class CommitResult:
    outcome: str  # OK, CONFLICT, ANSWERED, MISSING or CLOSED
    first_response: bytes | None = None  # the stored record when ANSWERED


class GameStore(Generic[Game]):
    """Games in the Redis of ``backend``.  A game read is ``decode(version, record)``:
    the stored version and the record's JSON object (the store knows no more of a
    record); a write takes the record as that JSON object.  ``wait_replicas`` None: the
    backend's default (1 on a cluster, 0 on one Redis)."""

    def __init__(self, backend: Backend, *, decode: Callable[[int, dict], Game],
                 game_ttl: int, idempotency_ttl: int, wait_replicas: int | None = None,
                 wait_timeout_ms: int = 1000):
        self.backend = backend
        self._decode = decode
        self._fast = backend.connections
        self.game_ttl = int(game_ttl)
        self.idempotency_ttl = int(idempotency_ttl)
        self.wait_replicas = backend.default_wait_replicas if wait_replicas is None \
            else max(0, int(wait_replicas))
        self.wait_timeout_ms = max(1, int(wait_timeout_ms))

    @classmethod
    def from_settings(cls, backend: Backend, config, *, decode: Callable[[int, dict], Game]
                      ) -> GameStore[Game]:
        """The store of the settings ``GAME_TTL_SECONDS``, ``IDEMPOTENCY_TTL_SECONDS``,
        ``REDIS_WAIT_REPLICAS`` and ``REDIS_WAIT_TIMEOUT_MS``."""
        return cls(backend, decode=decode, game_ttl=config["GAME_TTL_SECONDS"],
                   idempotency_ttl=config["IDEMPOTENCY_TTL_SECONDS"],
                   wait_replicas=config.get("REDIS_WAIT_REPLICAS"),
                   wait_timeout_ms=config["REDIS_WAIT_TIMEOUT_MS"])

    def _stored(self, version: bytes | None, record: bytes | None) -> Game | None:
        if version is None or record is None:
            return None
        return self._decode(int(version), orjson.loads(record))

    # --- reads ----------------------------------------------------------------------
    @storage_errors
    def ping(self) -> None:
        """Raise StorageUnavailable unless this process can reach its Redis: the one
        server, or on a cluster any master (a shard failing over stops only its own
        games, not the process)."""
        self.backend.ping()

    @storage_errors
    def load(self, game_id: str) -> Game | None:
        version, record = self._fast.execute("HMGET", keys.game(game_id), keys.VERSION,
                                             keys.RECORD)
        return self._stored(version, record)

    @storage_errors
    def load_with_journal(self, game_id: str) -> tuple[Game, str] | None:
        """The game and its journal, in one round trip (None if there is no game)."""
        version, record, journal = self._fast.execute(
            "HMGET", keys.game(game_id), keys.VERSION, keys.RECORD, keys.JOURNAL)
        game = self._stored(version, record)
        return None if game is None else (game, (journal or b"").decode())

    @storage_errors
    def load_for_write(self, game_id: str, idempotency_key: str | None, *,
                       journal: bool = False) -> WriteView[Game]:
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
        return WriteView(self._stored(values[0], values[1]), text, first)

    @storage_errors
    def exists(self, game_id: str) -> bool:
        return bool(self.backend.client.exists(keys.game(game_id)))

    @storage_errors
    def stats(self) -> dict[str, int]:
        """The statistics counters (:func:`.keys.stat`), missing ones absent."""
        return {field.decode(): value
                for field, value in self.backend.read_stats(keys.STATS).items()}

    # --- writes ---------------------------------------------------------------------
    @storage_errors
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
        outbox: dict[str, bytes] | None = None,
        deadline_ms: int | None = None,
    ) -> CommitResult:
        """Write the game atomically if its version is still ``expected`` (None: the
        game must not exist yet).  ``version`` None deletes the game; else ``record``
        is the game's record, its JSON object.  ``journal``
        holds the tokens to append to the game's journal, one per version added.
        ``stat`` names a statistics counter to increment.  With an
        ``idempotency_key``, ``first_response`` is stored with the write, and a record
        already stored under that key is returned (ANSWERED) instead of writing.
        ``create``: the key belongs to ``POST /v1/games`` (no game yet), so its record
        is scoped by the key alone.  Every change publishes the new version on the
        game's channel (a delete: ``deleted``).  ``outbox`` (an owned game's event and
        its payload, by event) is written to the game's outbox with the write, and the
        game's id to the pending set of its slot (:meth:`pending_outboxes`).
        ``deadline_ms``: a ranked game's write is refused (CLOSED) at or past this time
        of Redis' clock."""
        names, args = self._commit_call(
            game_id, expected=expected, version=version, record=record, journal=journal,
            idempotency_key=idempotency_key, first_response=first_response, stat=stat,
            create=create, outbox=outbox, deadline_ms=deadline_ms)
        if not self.wait_replicas:
            outcome, value = _COMMIT.run(self._fast, names, args)
        else:
            outcome, value = self._confirmed(_COMMIT, names, args)
        outcome = outcome.decode()
        return CommitResult(outcome, value if outcome == ANSWERED else None)

    def _commit_call(self, game_id: str, *, expected, version, record=None, journal="",
                     idempotency_key=None, first_response=None, stat=None, create=False,
                     outbox=None, deadline_ms=None) -> tuple[list, tuple]:
        """The keys and arguments of :data:`~.scripts.COMMIT` for :meth:`commit`."""
        game_key = keys.game(game_id)
        names = [game_key, self.backend.stats_key(keys.STATS, game_key),
                 keys.outbox(game_id), self.backend.stats_key(keys.OUTBOX, game_key)]
        if idempotency_key is not None:
            names.append(keys.create_idempotency(game_id, idempotency_key) if create
                         else keys.write_idempotency(game_id, idempotency_key))
        args = (
            "" if expected is None else str(expected),
            "" if version is None else str(version),
            orjson.dumps(record) if record is not None else "",
            journal,
            first_response if idempotency_key is not None else "",
            self.idempotency_ttl,
            self.game_ttl,
            stat or "",
            keys.channel(game_id),
            "1" if self.wait_replicas else "",
            "" if deadline_ms is None else str(deadline_ms),
            game_id,
            *(item for pair in (outbox or {}).items() for item in pair),
        )
        return names, args

    @storage_errors
    def commit_many(self, writes: list[dict]) -> list[str]:
        """Many :meth:`commit` calls (each its keyword arguments, no Idempotency-Key) in
        one round trip per master, each confirmed by the replicas like a write
        (:mod:`.batches`): their outcomes."""
        from service.storage.batches import run_many, script_call

        items = [script_call(_COMMIT, *self._commit_call(**write)) for write in writes]
        wait = (self.wait_replicas, self.wait_timeout_ms) if self.wait_replicas else None
        return [reply[0].decode() for reply in
                run_many(self._fast, items, wait=wait, scripts=(_COMMIT,))]

    @storage_errors
    def load_many(self, game_ids: list[str]) -> list[Game | None]:
        """The games (None: no such game), in one round trip per master."""
        from service.storage.batches import run_many

        items = [(keys.game(game_id), ("HMGET", keys.game(game_id), keys.VERSION,
                                       keys.RECORD)) for game_id in game_ids]
        return [self._stored(*reply) for reply in run_many(self._fast, items)]

    @storage_errors
    def clear_outboxes(self, events: dict[str, list[str]]) -> None:
        """:meth:`clear_outbox` of many games, in one round trip per master."""
        from service.storage.batches import run_many, script_call

        items = []
        for game_id, names in events.items():
            box = keys.outbox(game_id)
            items.append(script_call(_CLEAR_OUTBOX,
                                     [box, self.backend.stats_key(keys.OUTBOX, box)],
                                     (game_id, *names)))
        run_many(self._fast, items, scripts=(_CLEAR_OUTBOX,))

    def _confirmed(self, script: Script, names: list, args: tuple):
        """The reply of ``script`` with a WAIT (:func:`confirmed`).  Then the write may
        well be on the master (and on some replicas) without being acknowledged: a
        retry with the same Idempotency-Key answers its first answer, once confirmed in
        turn, and never applies it twice."""
        return confirmed(self._fast, script, names, args, self.wait_replicas,
                         self.wait_timeout_ms)

    def _run(self, script: Script, names: list, args: tuple):
        """``script``'s reply, confirmed by the replicas when writes wait for them."""
        if self.wait_replicas:
            return self._confirmed(script, names, args)
        return script.run(self._fast, names, args)

    # --- the outboxes of owned games --------------------------------------------------
    @storage_errors
    def outbox(self, game_id: str) -> dict[str, bytes]:
        """The events of the game's outbox not applied yet: event -> payload."""
        found = self._fast.execute("HGETALL", keys.outbox(game_id))
        if isinstance(found, dict):
            return {name.decode(): value for name, value in found.items()}
        return {found[i].decode(): found[i + 1] for i in range(0, len(found), 2)}

    @storage_errors
    def clear_outbox(self, game_id: str, events: list[str]) -> None:
        """Take ``events`` (applied) out of the game's outbox."""
        box = keys.outbox(game_id)
        _CLEAR_OUTBOX.run(self._fast, [box, self.backend.stats_key(keys.OUTBOX, box)],
                          (game_id, *events))

    @storage_errors
    def pending_outboxes(self) -> list[str]:
        """The ids of the games whose outbox holds events: every slot's pending set,
        read in one round trip per master."""
        return sorted({member.decode() for member in self.backend.read_members(keys.OUTBOX)})

    def _confirm_record(self, key: str) -> None:
        """Before a stored first answer is answered again: have the replicas confirm
        it (see :data:`~service.storage.scripts.TOUCH`)."""
        if self.wait_replicas:
            self._confirmed(_TOUCH, [key], ())

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
        names, args = [keys.create_target(idempotency_key)], (game_id, self.idempotency_ttl)
        if self.wait_replicas:
            found = self._confirmed(_CLAIM, names, args)
        else:
            found = _CLAIM.run(self._fast, names, args)
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


def confirmed(connections, script: Script, names: list, args: tuple, replicas: int,
              timeout_ms: int):
    """The reply of ``script``, sent with a WAIT on the same connection in one round
    trip: raises StorageUnavailable unless ``replicas`` replicas confirm it within
    ``timeout_ms``."""
    reply, count = script.run_then(connections, names, args, ("WAIT", replicas, timeout_ms))
    for value in (reply, count):
        if isinstance(value, Exception):
            raise value
    if count < replicas:
        raise StorageUnavailable(
            f"the write reached {count} of {replicas} replicas within {timeout_ms} ms")
    return reply
