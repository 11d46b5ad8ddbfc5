"""A game's feed in an app: ``GET /v1/games/<id>/events``, read as JSON or followed as a
stream (Server-Sent Events, :mod:`service.live.wires`).

The feed is stored, not kept in any process: it is replayed from the game's journal in
Redis (:mod:`service.engine.journal`, written by the same Lua script that stores each
change, see :mod:`service.storage.game_store`), so a reader on any process of any replica sees every
change, in order, exactly once, however far back it starts.  Each entry is
``{"version", "move", "events"}``:

- a move (resign included), with the events it caused, under the event name ``move``;
- an undo is ``{"version": n, "move": {"type": "undo"}, "events": [...]}`` under the
  event name ``undo``, its events the undone move's, last first, from and to swapped
  (the answer of ``POST .../undo``);
- autoplay adds one ``move`` entry per move it played (one version each).

Events only name cards that moved, and a card that leaves the stock is face up from then
on: nothing in the feed tells an undealt card.
"""

from __future__ import annotations

from collections.abc import Callable

import redis

from service.game.application import check_visible
from service.game.errors import game_not_found
from service.game.record import StoredGame, Viewer
from service.game.replay import replay
from service.live.hub import Hub
from service.live.streams import EventStreams
from service.storage.game_store import GameStore


class EventsFeed:
    """The events feed of the process (built by :mod:`service.services`): the JSON
    reads, and the streams (:class:`~service.live.streams.EventStreams`) over the
    process's hub (:class:`~service.live.hub.Hub`), whose subscription connects with
    ``subscriber`` (:meth:`service.storage.backend.Backend.subscriber`).  ``config``:
    the settings ``SSE_*`` and ``REDIS_CONNECT_TIMEOUT``."""

    def __init__(self, store: GameStore[StoredGame], subscriber: Callable[[], redis.Redis],
                 config):
        self.store = store
        self.hub = Hub(store, subscriber,
                       backlog=config["SSE_BACKLOG"], backlog_bytes=config["SSE_BACKLOG_BYTES"],
                       heartbeat=config["SSE_HEARTBEAT_SECONDS"],
                       confirm_timeout=config["REDIS_CONNECT_TIMEOUT"])
        self.streams = EventStreams(store, self.hub, retry_ms=config["SSE_RETRY_MS"],
                                    max_streams=config["SSE_MAX_STREAMS"],
                                    max_seconds=config["SSE_MAX_SECONDS"])

    def read(self, game_id: str, after: int, viewer: Viewer | None = None
             ) -> tuple[int, dict]:
        """``{"events": [every entry after version after], "game": Game}``; ``viewer``:
        who reads (a ranked game is its owner's only while its day is open)."""
        found = self.store.load_with_journal(game_id)
        if found is None:
            raise game_not_found(game_id)
        stored, journal = found
        check_visible(stored, viewer)
        changes = []
        if after < stored.version:  # a poll that is up to date replays nothing
            _replayed, changes = replay(stored, journal, after=after)
        return stored.version, {"events": [change.entry() for change in changes],
                                "game": stored.public(game_id)}

    def stop_streams(self) -> None:
        """End every open stream of this process now (a gunicorn process on SIGTERM)."""
        self.streams.stop()

    def close(self) -> None:
        """Close the hub's connection (before the store it reads)."""
        self.hub.stop()
