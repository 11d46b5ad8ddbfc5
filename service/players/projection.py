"""The projection of owned games onto their players' keys, exactly once.

A game's keys and its player's keys are in different hash slots (of a Redis Cluster),
so no script can write both.  The game's write script puts each event of an owned game
(created, claimed, ended, deleted) in the game's outbox, atomically with the game, and
the game's id in the pending set of its slot.  Then :class:`Projector` applies it to
the player's keys with one script on the player's slot, which writes a marker of the
(game, event) with its effect, so applying it again changes nothing; once the player's
write is confirmed, the event leaves the outbox.  Whatever a failure leaves in an
outbox, :meth:`Projector.sweep` applies later (the solver's worker calls it every
couple of seconds).  docs/players.md says why an event thus counts once and only once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import orjson

from service.game.application import detach
from service.game.pipeline import CLAIMED, CREATED, DELETED, ENDED, RANKED_ENDED
from service.game.record import StoredGame
from service.storage.backend import Call
from service.storage.game_store import GameStore, StorageUnavailable
from service.storage.player_store import PlayerStore

log = logging.getLogger("patience.players")

#: The order in which a game's pending events are applied.
_ORDER = {CREATED: 0, CLAIMED: 0, ENDED: 1, RANKED_ENDED: 1, DELETED: 2}

#: What applies an event of another part (a ranked game's end: its day's board,
#: :mod:`service.daily`): ``handler(game_id, payload)`` is the call of its slot's
#: script, idempotent by its marker, which :meth:`Projector._apply` sends with the
#: player's call of the same rank of :data:`_ORDER` (one round trip per master).
Handler = Callable[[str, bytes], Call]
#: The same for many events at once: ``handler([(game_id, payload), ...])``.
BatchHandler = Callable[[list[tuple[str, bytes]]], None]


class Projector:
    """Applies the outbox events of owned games (:class:`service.game.pipeline.Projection`).
    ``detach(game_id, owner)``: what to do with a game whose player is gone (make it
    anonymous again).  ``handlers``: the events that go elsewhere than the player's
    keys, by name (the composition root gives the daily boards')."""

    def __init__(self, games: GameStore, players: PlayerStore,
                 detach: Callable[[str, str], None],
                 handlers: dict[str, Handler] | None = None,
                 batch_handlers: dict[str, BatchHandler] | None = None):
        self.games = games
        self.players = players
        self.detach = detach
        self.handlers = dict(handlers or {})
        self.batch_handlers = dict(batch_handlers or {})

    def apply(self, game_id: str, events: dict[str, bytes], *, confirm: bool) -> None:
        try:
            self._apply(game_id, events)
        except StorageUnavailable as error:
            if confirm:
                raise
            log.warning("projection left in the outbox",
                        extra={"game_id": game_id, "event": ",".join(events),
                               "error": str(error)})

    def finish(self, game_id: str, *, confirm: bool) -> None:
        try:
            events = self.games.outbox(game_id)
            if events:
                self._apply(game_id, events)
        except StorageUnavailable:
            if confirm:
                raise

    def apply_many(self, outboxes: dict[str, dict[str, bytes]]) -> int:
        """The events of many games' outboxes (game id -> event -> payload) applied in a
        few round trips: the players' ``ended`` events in one per master (each game's
        other events are left for :meth:`sweep`, which applies them in their order), each
        other kind by its batch handler, then the outboxes cleared (a failure leaves them
        for the sweeper).  How many applied."""
        players, others, done = [], {}, {}
        for game_id, events in outboxes.items():
            for event, payload in events.items():
                if event in self.batch_handlers:
                    others.setdefault(event, []).append((game_id, payload))
                elif event == ENDED:
                    data = orjson.loads(payload)
                    players.append({
                        "player_id": data["player"], "game_id": game_id, "event": event,
                        "summary": orjson.dumps(data["summary"]),
                        "variant": data["variant"], "status": data["status"],
                        "moves": data["moves"], "ended_ms": data["ended_ms"],
                        "win_ms": data["win_ms"], "created_ms": data.get("created_ms", 0)})
                else:
                    continue
                done.setdefault(game_id, []).append(event)
        outcomes = self.players.project_many(players)
        for event, outcome in zip(players, outcomes, strict=True):
            if outcome == "gone":
                self.detach(event["game_id"], event["player_id"])
        for event, items in others.items():
            self.batch_handlers[event](items)
        self.games.clear_outboxes(done)
        return sum(len(events) for events in done.values())

    def sweep(self) -> int:
        """Apply every event left in an outbox (one read per master for the pending
        sets, then per game its outbox and its player's write): how many."""
        applied = 0
        for game_id in self.games.pending_outboxes():
            events = self.games.outbox(game_id)
            applied += self._apply(game_id, events)
        return applied

    def _apply(self, game_id: str, events: dict[str, bytes]) -> int:
        """The game's events applied in the order of :data:`_ORDER`: the events of one
        rank (a ranked game's ``ended`` and ``ranked-ended``) sent together, in one
        round trip per master, each confirmed by the replicas, before the next rank's;
        then the outbox cleared of what was applied (a failure clears nothing)."""
        done = []
        for rank in sorted({_ORDER.get(name, 3) for name in events}):
            calls, applied, players = [], [], {}
            for event in sorted(name for name in events if _ORDER.get(name, 3) == rank):
                handler = self.handlers.get(event)
                if handler is not None:
                    calls.append(handler(game_id, events[event]))
                elif event == RANKED_ENDED:  # no board here: left for a projector with one
                    continue
                else:
                    data = orjson.loads(events[event])
                    players[len(calls)] = (event, data["player"])
                    calls.append(self.players.project_call(
                        data["player"], game_id, event, orjson.dumps(data["summary"]),
                        variant=data["variant"], status=data["status"],
                        moves=data["moves"], ended_ms=data["ended_ms"],
                        win_ms=data["win_ms"], created_ms=data.get("created_ms", 0)))
                applied.append(event)
            if not calls:
                continue
            outcomes = self.players.run_calls(calls)
            for index, outcome in enumerate(outcomes):
                if index not in players:  # another part's (the board's): no line of its own
                    log.debug("projected", extra={"game_id": game_id,
                                                  "event": applied[index], "outcome": outcome})
                    continue
                event, player = players[index]
                if outcome == "gone" and event != DELETED:  # the player was erased
                    self.detach(game_id, player)
            done += applied
        if done:
            self.games.clear_outbox(game_id, done)
        return len(done)


def projector_of(store: GameStore[StoredGame],
                 handlers: dict[str, Handler] | None = None,
                 batch_handlers: dict[str, BatchHandler] | None = None) -> Projector:
    """The projection of owned games onto their players' keys, on the game store's
    backend and with its replicas to wait for (the app's, and the solver's worker's,
    which sweeps the outboxes); ``handlers``: see :class:`Projector`."""
    players = PlayerStore(store.backend, wait_replicas=store.wait_replicas,
                          wait_timeout_ms=store.wait_timeout_ms)
    return Projector(store, players, lambda game_id, owner: detach(store, game_id, owner),
                     handlers, batch_handlers)
