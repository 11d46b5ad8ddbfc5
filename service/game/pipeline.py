"""The write pipeline: every write of a game goes through :meth:`Pipeline.write`.

One attempt reads the game, its journal when the command needs it and the idempotency
record of the write's key (one round trip), then:

1. a stored first answer for the key is sent again (same token, same body), nothing runs;
2. the game must exist (404), the player token must match its hash (constant-time, 403),
   and ``If-Match`` must name its version (412);
3. the command (:mod:`service.game.commands`) returns a :class:`Change`;
4. the repository stores it with a compare-and-set on the version read (one Lua script:
   record, journal tokens, statistics, idempotency record, expiry, and the publication
   of the new version on the game's channel);
5. a lost race is tried again from 1, unless ``If-Match`` pinned the version (412);
6. once stored, the metrics count it and the answer goes out.

A create is the same pipeline with no game to read: the record of its key comes from
the create scope, and a "lost race" is a collision of random game ids.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from service.game import commands
from service.game.commands import Change
from service.game.errors import game_not_found, version_mismatch, write_conflict, wrong_token
from service.game.idempotency import IdempotencyRecords, Reply
from service.game.record import StoredGame, now, token_hash
from service.observability import metrics
from service.storage import keys
from service.storage.game_store import ANSWERED, CONFLICT, MISSING, OK, GameStore, WriteView

#: A command of the pipeline: the game as read (None for a create), its journal ('' unless
#: asked for) and the time of the write, to the change it makes.
Command = Callable[[StoredGame | None, str, str], Change]


@dataclass(frozen=True, slots=True)
class Write:
    """The parts of a write request that every write shares."""

    token: str | None  # the bearer token; None for a create
    if_match: frozenset[int] | None  # None: no If-Match (or ``*``)
    idempotency_key: str | None
    request_hash: str | None  # of the body, with an idempotency key (else None)


class Pipeline:
    """Runs commands against the games of a :class:`GameStore`."""

    def __init__(self, store: GameStore[StoredGame], records: IdempotencyRecords, *,
                 retries: int = 16):
        self.store = store
        self.records = records
        self.retries = max(1, retries)

    def create(self, write: Write, command: Command) -> Reply:
        """Store the new game of ``command`` under a fresh random id (with an
        Idempotency-Key, the one the key's first request claimed:
        :meth:`GameStore.create_target`)."""
        return self._run(None, write, command, journal=False)

    def write(self, game_id: str, write: Write, command: Command, *,
              journal: bool = False) -> Reply:
        """Run ``command`` on the game; ``journal``: it reads the game's journal."""
        return self._run(game_id, write, command, journal=journal)

    def _run(self, game_id: str | None, write: Write, command: Command, *,
             journal: bool) -> Reply:
        creating = game_id is None
        hashed_token = None if creating else token_hash(write.token)
        key = write.idempotency_key
        for _attempt in range(self.retries):
            if creating:  # 128 random bits; with a key, the id its first request claimed
                game_id = (key is not None and self.store.claimed_target(key)) \
                    or secrets.token_urlsafe(16)
                view = WriteView(None, "", key and self.store.created_response(game_id, key))
            else:
                view = self.store.load_for_write(game_id, key, journal=journal)
            scope = None if creating else game_id  # of the idempotency record
            if view.first_response is not None:
                return self._again(view.first_response, scope, write, hashed_token)
            current = None if creating else self._admit(game_id, write, view.game,
                                                        hashed_token)
            change = command(current, view.journal, now())
            if creating and key is not None:  # a change to store: claim its id for the key
                game_id = self.store.create_target(key, game_id)
            reply = _reply(game_id, change)
            first = None
            if key is not None:
                first = self.records.seal(reply, game_id=scope, idempotency_key=key,
                                          request=write.request_hash, token=hashed_token)
            result = self.store.commit(
                game_id, expected=None if creating else current.version,
                version=change.version,
                record=None if change.record is None else change.record.to_json(),
                journal=change.journal,
                idempotency_key=key, first_response=first,
                stat=keys.stat(change.variant, change.stat) if change.stat else None,
                create=creating)
            if result.outcome == OK:
                _count(change)
                return reply
            if result.outcome == ANSWERED:  # a racing request with the same key came first
                return self._again(result.first_response, scope, write, hashed_token)
            if result.outcome == MISSING:
                raise game_not_found(game_id)
            if result.outcome != CONFLICT:
                raise RuntimeError(f"unknown outcome of a write: {result.outcome!r}")
            if write.if_match is not None:
                raise version_mismatch("the game changed meanwhile")
        if creating:  # pragma: no cover - needs many collisions of 128-bit random ids
            raise RuntimeError("could not find a free game id")
        raise write_conflict(self.retries)

    @staticmethod
    def _admit(game_id: str, write: Write, game: StoredGame | None,
               hashed_token: str) -> StoredGame:
        """The game, if it exists, the token is its player's and If-Match names it."""
        if game is None:
            raise game_not_found(game_id)
        if not secrets.compare_digest(game.record.token, hashed_token):
            raise wrong_token()
        if write.if_match is not None and game.version not in write.if_match:
            raise version_mismatch(f"the game is at version {game.version}")
        return game

    def _again(self, record: bytes, game_id: str | None, write: Write,
               hashed_token: str | None) -> Reply:
        """The first answer to a write with this Idempotency-Key, for a retry of it."""
        return self.records.open(record, game_id=game_id, idempotency_key=write.idempotency_key,
                                 request=write.request_hash, token=hashed_token)


def _reply(game_id: str, change: Change) -> Reply:
    """The answer to a stored change."""
    if change.record is None:
        return Reply(204, b"")
    game = change.record.public(game_id, change.version)
    if change.kind == commands.CREATE:
        return Reply(201, orjson.dumps({"game": game, "player_token": change.token}),
                     change.version, f"/v1/games/{game_id}")
    return Reply(200, orjson.dumps({"game": game, "events": change.events}), change.version)


def _count(change: Change) -> None:
    """The metrics of a stored change."""
    variant = change.variant
    if change.kind == commands.CREATE:
        metrics.child(metrics.GAMES_CREATED, variant).inc()
    elif change.kind == commands.UNDO_MOVE:
        metrics.child(metrics.UNDOS_APPLIED, variant).inc()
    if change.moves:
        metrics.child(metrics.MOVES_APPLIED, variant).inc(change.moves)
    if change.stat is not None and change.kind != commands.CREATE:
        metrics.child(metrics.GAMES_FINISHED, variant, change.stat).inc()
