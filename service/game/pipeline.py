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
from typing import Protocol

import orjson

from service.game import commands
from service.game.commands import Change
from service.game.errors import (
    day_closed,
    game_not_found,
    version_mismatch,
    write_conflict,
    wrong_token,
)
from service.game.idempotency import IdempotencyRecords, Reply
from service.game.record import StoredGame, epoch_ms, now, token_hash
from service.observability import metrics
from service.storage import keys
from service.storage.game_store import (
    ANSWERED,
    CLOSED,
    CONFLICT,
    MISSING,
    OK,
    GameStore,
    WriteView,
)

#: A command of the pipeline: the game as read (None for a create), its journal ('' unless
#: asked for) and the time of the write, to the change it makes.
Command = Callable[[StoredGame | None, str, str], Change]


@dataclass(frozen=True, slots=True)
class Write:
    """The parts of a write request that every write shares."""

    token: str | None  # the bearer token; None for an anonymous create
    if_match: frozenset[int] | None  # None: no If-Match (or ``*``)
    idempotency_key: str | None
    request_hash: str | None  # of the body, with an idempotency key (else None)
    #: The player the bearer token identifies (None: the game's own token, or none):
    #: a player plays the games they own with their own token.
    player: str | None = None
    #: The player's display name, read with their token (None: none, or not read): a
    #: ranked game's end carries it to its board's entry.
    player_name: str | None = None


#: The events of an owned game that its player's keys follow (docs/players.md).
CREATED, CLAIMED, ENDED, DELETED = "created", "claimed", "ended", "deleted"
#: The event of a ranked game's end, which its day's board follows (docs/daily.md).
RANKED_ENDED = "ranked-ended"


class Projection(Protocol):
    """Where the events of owned games go once their write is stored: the players'
    keys (:class:`service.players.projection.Projector`, given by the composition
    root).  The write script has put each event in its game's outbox first."""

    def apply(self, game_id: str, events: dict[str, bytes], *, confirm: bool) -> None:
        """Apply the events (name -> payload); ``confirm``: raise StorageUnavailable
        unless they are applied (else a failure leaves them in the outbox, for the
        sweeper)."""

    def finish(self, game_id: str, *, confirm: bool) -> None:
        """Apply whatever the game's outbox still holds (a retried write)."""


class Pipeline:
    """Runs commands against the games of a :class:`GameStore`."""

    def __init__(self, store: GameStore[StoredGame], records: IdempotencyRecords, *,
                 retries: int = 16, projection: Projection | None = None):
        self.store = store
        self.records = records
        self.retries = max(1, retries)
        self.projection = projection

    def create(self, write: Write, command: Command, *, game_id: str | None = None
               ) -> Reply:
        """Store the new game of ``command`` under a fresh random id (with an
        Idempotency-Key, the one the key's first request claimed:
        :meth:`GameStore.create_target`), or under ``game_id`` (a ranked attempt, whose
        id its day's attempts decided): a game there already is 409 ``write_conflict``."""
        return self._run(None, write, command, journal=False, fixed_id=game_id)

    def write(self, game_id: str, write: Write, command: Command, *,
              journal: bool = False) -> Reply:
        """Run ``command`` on the game; ``journal``: it reads the game's journal."""
        return self._run(game_id, write, command, journal=journal)

    def _run(self, game_id: str | None, write: Write, command: Command, *,
             journal: bool, fixed_id: str | None = None) -> Reply:
        creating = game_id is None
        # A player's create is answered again to that player only.
        hashed_token = None if creating and write.player is None else token_hash(write.token)
        key = write.idempotency_key
        for _attempt in range(self.retries):
            if creating and fixed_id is not None:
                game_id = fixed_id
                view = WriteView(None, "", None)
            elif creating:  # 128 random bits; with a key, the id its first request claimed
                game_id = (key is not None and self.store.claimed_target(key)) \
                    or secrets.token_urlsafe(16)
                view = WriteView(None, "", key and self.store.created_response(game_id, key))
            else:
                view = self.store.load_for_write(game_id, key, journal=journal)
            scope = None if creating else game_id  # of the idempotency record
            if view.first_response is not None:
                return self._again(view.first_response, scope, write, hashed_token,
                                   game_id, creating)
            current = None if creating else self._admit(game_id, write, view.game,
                                                        hashed_token)
            change = commands.settle(command(current, view.journal, now()))
            if creating and key is not None:  # a change to store: claim its id for the key
                game_id = self.store.create_target(key, game_id)
            reply = _reply(game_id, change)
            outbox = _outbox(game_id, change, current, write)
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
                create=creating, outbox=outbox, deadline_ms=_deadline(change, current))
            if result.outcome == OK:
                _count(change)
                if outbox and self.projection is not None:
                    # A create or a claim is answered once its player's list has it.
                    self.projection.apply(game_id, outbox,
                                          confirm=CREATED in outbox or CLAIMED in outbox)
                return reply
            if result.outcome == CLOSED:
                raise day_closed()
            if result.outcome == ANSWERED:  # a racing request with the same key came first
                return self._again(result.first_response, scope, write, hashed_token,
                                   game_id, creating)
            if result.outcome == MISSING:
                raise game_not_found(game_id)
            if result.outcome != CONFLICT:
                raise RuntimeError(f"unknown outcome of a write: {result.outcome!r}")
            if fixed_id is not None:
                raise write_conflict(1)
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
        owner = game.record.owner
        if not (write.player is not None and owner is not None
                and secrets.compare_digest(owner, write.player)) \
                and not secrets.compare_digest(game.record.token, hashed_token):
            raise wrong_token()
        if write.if_match is not None and game.version not in write.if_match:
            raise version_mismatch(f"the game is at version {game.version}")
        return game

    def _again(self, record: bytes, game_id: str | None, write: Write,
               hashed_token: str | None, target: str, creating: bool) -> Reply:
        """The first answer to a write with this Idempotency-Key, for a retry of it; a
        player's retry first finishes what the first request left in the outbox of the
        game (``target``): a create is answered once its player's list has it."""
        reply = self.records.open(record, game_id=game_id,
                                  idempotency_key=write.idempotency_key,
                                  request=write.request_hash, token=hashed_token)
        if write.player is not None and self.projection is not None:
            self.projection.finish(target, confirm=creating)
        return reply


def _deadline(change: Change, current: StoredGame | None) -> int | None:
    """The end of the day of a ranked game's write by its player, which the write
    script checks against Redis' clock (None: no deadline; the close of the day by the
    server has none)."""
    if current is None or current.record.ranked is None or change.kind == commands.ABANDON:
        return None
    return current.record.ranked["deadline_ms"]


def outbox_events(game_id: str, change: Change, current: StoredGame | None
                  ) -> dict[str, bytes] | None:
    """The outbox events of a change that does not go through :meth:`Pipeline.write`
    (the close of a day's games, :meth:`service.game.application.Games.abandon_many`)."""
    return _outbox(game_id, change, current)


def count(change: Change) -> None:
    """The metrics of a change stored outside :meth:`Pipeline.write`."""
    _count(change)


def _outbox(game_id: str, change: Change, current: StoredGame | None,
            write: Write | None = None) -> dict[str, bytes] | None:
    """The outbox events of an owned game's change and their payloads (None: no event,
    and every anonymous game's change): the player's event, and a ranked game's end
    for its day's board, with the player's name when ``write`` is their own and knows
    it (else the board's projection reads it)."""
    record = change.record if change.record is not None else \
        (current.record if current is not None else None)
    if record is None or record.owner is None:
        return None
    if change.kind == commands.CREATE:
        event = CREATED
    elif change.kind == commands.CLAIM:
        event = CLAIMED
    elif change.kind == commands.DELETE:
        event = DELETED
    elif change.stat is not None:
        event = ENDED
    else:
        return None
    version = change.version if change.version is not None else current.version
    over = record.is_over
    payload = {
        "player": record.owner, "summary": record.summary(game_id, version),
        "variant": record.variant, "status": record.status, "moves": record.moves,
        "created_ms": epoch_ms(record.created),
        "ended_ms": epoch_ms(record.updated) if over else None,
        "win_ms": epoch_ms(record.updated) - epoch_ms(record.started)
        if record.status == "won" and record.started else None,
    }
    events = {event: orjson.dumps(payload)}
    if event == ENDED and record.ranked is not None and "result" in record.ranked:
        ended = {"player": record.owner, "game": game_id, "variant": record.variant,
                 "day": record.ranked["day"], "index": record.ranked["index"],
                 "ended_ms": epoch_ms(record.updated), **record.ranked["result"]}
        if write is not None and write.player == record.owner \
                and write.player_name is not None:
            ended["name"] = write.player_name
        events[RANKED_ENDED] = orjson.dumps(ended)
    return events


def _reply(game_id: str, change: Change) -> Reply:
    """The answer to a stored change."""
    if change.record is None:
        return Reply(204, b"")
    if change.kind == commands.CLAIM:
        return Reply(200, orjson.dumps({"game": change.record.summary(game_id,
                                                                      change.version)}))
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
