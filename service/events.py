"""Following a game: ``GET /v1/games/<id>/events``, as JSON or as Server-Sent Events.

The feed is stored, not kept in any process: it is replayed from the game's journal in
Redis (:mod:`service.engine.journal`, written by the same Lua script that stores each
change, see :mod:`service.store`), so a reader on any worker of any replica sees every
change, in order, exactly once, however far back it starts.  Each entry is
``{"version", "move", "events"}``:

- a move (resign included), with the events it caused, under the event name ``move``;
- an undo is ``{"version": n, "move": {"type": "undo"}, "events": [...]}`` under the
  event name ``undo``, its events the undone move's, last first, from and to swapped
  (the answer of ``POST .../undo``);
- autoplay adds one ``move`` entry per move it played (one version each).

Events only name cards that moved, and a card that leaves the stock is face up from then
on: nothing in the feed tells an undealt card.

A stream (:meth:`Feed.open`, then :meth:`Feed.frames`) subscribes to the game's pub/sub
channel, reads the game and its journal, sends the entries after the client's version,
then waits on the channel (never on process memory) for up to ``SSE_HEARTBEAT_SECONDS``.
Every change publishes the game's new version there; the stream then reads the journal
again and replays only the tokens it has not seen.  An idle wait ends with a heartbeat
comment, which also tells a server whose client left (the write fails and the WSGI
server closes the stream).  The stream ends with an ``end`` event when the game ends,
with a ``deleted`` event when it is deleted (or expires), after ``SSE_MAX_SECONDS``, and
when the worker shuts down (:func:`stop_streams`, called by gunicorn.conf.py on
SIGTERM); a client resumes with ``Last-Event-ID``.  Each open stream takes one thread of
a gthread worker: a process holds at most ``SSE_MAX_STREAMS`` (then 503
``too_many_streams``), so threads are always left to answer moves.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import orjson

from service import metrics
from service.engine.journal import Change, Replay
from service.feed import DELETED, LiveFeed, Subscription
from service.game.errors import game_not_found
from service.game.record import StoredGame
from service.game.replay import replay
from service.store import GameStore, StorageUnavailable

log = logging.getLogger("patience.events")

#: The largest version a client may name (``after``, ``Last-Event-ID``).
MAX_VERSION = 2**63 - 1

#: Set when the worker process is stopping: open streams end (their clients resume
#: elsewhere with Last-Event-ID) instead of holding the graceful shutdown up.
SHUTDOWN = threading.Event()


def stop_streams() -> None:
    """End every open stream of this process at its next wake-up (at most a heartbeat)."""
    SHUTDOWN.set()


class NothingToStream(Exception):
    """The game is over and the client has seen its end."""


class TooManyStreams(Exception):
    """This process holds ``SSE_MAX_STREAMS`` streams already."""


def frame(event: str, data: bytes, event_id: int | None = None) -> bytes:
    """One Server-Sent Event (``data`` is one line of JSON)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\n".encode() + b"data: " + data + b"\n\n"


HEARTBEAT = b": heartbeat\n\n"


@dataclass(slots=True)
class Stream:
    """An admitted stream: what was read when it opened, and what to give back."""

    game_id: str
    after: int
    game: StoredGame
    journal: str
    subscription: Subscription
    release: Callable[[], None]


class Feed:
    """The events feed of the games in a :class:`GameStore`."""

    def __init__(self, store: GameStore, live: LiveFeed, *, heartbeat: float, retry_ms: int,
                 max_streams: int, max_seconds: float):
        self.store = store
        self.live = live
        self.heartbeat = max(0.05, float(heartbeat))
        self.retry_ms = max(0, int(retry_ms))
        self.max_streams = max(1, int(max_streams))
        self.max_seconds = max(0.1, float(max_seconds))
        self._slots = threading.BoundedSemaphore(self.max_streams)

    # --- JSON ---------------------------------------------------------------------------
    def read(self, game_id: str, after: int) -> tuple[int, dict]:
        """``{"events": [every entry after version after], "game": Game}``."""
        found = self.store.load_with_journal(game_id)
        if found is None:
            raise game_not_found(game_id)
        stored, journal = found
        changes = []
        if after < stored.version:  # a poll that is up to date replays nothing
            _replayed, changes = replay(stored, journal, after=after)
        return stored.version, {"events": [change.entry() for change in changes],
                                "game": stored.public(game_id)}

    # --- Server-Sent Events ---------------------------------------------------------
    def open(self, game_id: str, after: int) -> Stream | None:
        """Admit a stream: None when there is nothing to stream ever (the game is over
        and the client has seen its end: 204, which stops an EventSource); 404 for an
        unknown game; :class:`TooManyStreams` past ``SSE_MAX_STREAMS``."""
        try:
            return self._admit(game_id, after)
        except NothingToStream:
            return None

    def _admit(self, game_id: str, after: int) -> Stream:
        self._check_open(game_id, self.store.load(game_id), after)
        if not self._slots.acquire(blocking=False):
            raise TooManyStreams(f"this server holds {self.max_streams} streams already")
        subscription = None
        try:
            # Subscribe, then read again: no change can slip between the read and the
            # wait.
            subscription = self.live.subscribe(game_id)
            found = self.store.load_with_journal(game_id)
            self._check_open(game_id, found and found[0], after)
        except BaseException:
            if subscription is not None:
                subscription.close()
            self._slots.release()
            raise
        stored, journal = found
        metrics.EVENT_STREAMS.inc()
        released = threading.Lock()

        def release():
            if released.acquire(blocking=False):  # once, however often it is called
                subscription.close()
                metrics.EVENT_STREAMS.dec()
                self._slots.release()

        return Stream(game_id, after, stored, journal, subscription, release)

    @staticmethod
    def _check_open(game_id: str, stored: StoredGame | None, after: int) -> None:
        """404 for an unknown game; :class:`NothingToStream` for a finished game whose
        end the client has seen."""
        if stored is None:
            raise game_not_found(game_id)
        if stored.record.is_over and after >= stored.version:
            raise NothingToStream(game_id)

    def frames(self, stream: Stream) -> Iterator[bytes]:
        """The stream's bytes: ``retry:``, the entries after the client's version, then
        every new entry as it is stored, heartbeats while idle, and an ``end`` or
        ``deleted`` event to close.  Storage failures end the stream (the client
        resumes); the caller releases the slot when the WSGI server closes it."""
        game_id = stream.game_id
        try:
            yield f"retry: {self.retry_ms}\n\n".encode()
            stored = stream.game
            replayed, changes = replay(stored, stream.journal, after=stream.after)
            if stream.after > stored.version:
                # The client is ahead of the game (another game's version, or a game
                # deleted and created again): the whole game, to start from.
                yield frame("game", orjson.dumps({"version": stored.version,
                                                  "game": stored.public(game_id)}),
                            stored.version)
            for change in changes:
                yield _entry_frame(change)
            if stored.record.is_over:
                yield self._end(game_id, stored)
                return
            yield from self._follow(stream, replayed, len(stream.journal))
        except StorageUnavailable as error:
            log.warning("events stream of game %s ended: storage unavailable: %s",
                        game_id, error)

    def _follow(self, stream: Stream, replayed: Replay, seen: int) -> Iterator[bytes]:
        """Wait for changes; replay the journal past its first ``seen`` characters."""
        game_id = stream.game_id
        deadline = time.monotonic() + self.max_seconds
        while not SHUTDOWN.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            published = stream.subscription.wait(min(self.heartbeat, left))
            if DELETED in published:
                yield self._deleted(game_id)
                return
            if not published:
                if not self.store.exists(game_id):  # expired
                    yield self._deleted(game_id)
                    return
                yield HEARTBEAT
                continue
            if max(published) <= replayed.version:
                continue  # already sent
            found = self.store.load_with_journal(game_id)
            if found is None:
                yield self._deleted(game_id)
                return
            stored, journal = found
            for change in replayed.run(journal[seen:]):
                yield _entry_frame(change)
            seen = len(journal)
            if stored.record.is_over:
                yield self._end(game_id, stored)
                return

    @staticmethod
    def _end(game_id: str, stored: StoredGame) -> bytes:
        return frame("end", orjson.dumps({"version": stored.version,
                                          "game": stored.public(game_id)}))

    @staticmethod
    def _deleted(game_id: str) -> bytes:
        return frame("deleted", orjson.dumps({"id": game_id}))


def _entry_frame(change: Change) -> bytes:
    return frame(change.kind, orjson.dumps(change.entry()), change.version)
