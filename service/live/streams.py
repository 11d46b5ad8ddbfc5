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

A stream (:meth:`Feed.open`, then :meth:`Feed.frames`) joins its game's channel on the
process's :class:`~service.feed.Hub` (one Redis subscription for every stream of the
process), reads the game and its journal, sends the entries after the client's version,
then sends what the hub hands it: each new entry's frame, built once for all the
followers of the game.  A follower that misses a version (it fell behind, or the hub
started its channel later) reads the journal and replays what it has not sent.  A wait
of ``SSE_HEARTBEAT_SECONDS`` without anything to send ends with a heartbeat comment,
which also tells a server whose client left (the write fails and the server closes the
stream).  The stream ends with an ``end`` event when the game ends, with a ``deleted``
event when it is deleted (or expires), after ``SSE_MAX_SECONDS``, when the hub loses its
Redis connection, and when the worker shuts down (:func:`stop_streams`, called by the
gunicorn configurations on SIGTERM); a client resumes with ``Last-Event-ID``.  A process
holds at most ``SSE_MAX_STREAMS`` streams (then 503 ``too_many_streams``): under gthread
each open stream takes a thread, so the cap leaves threads to answer moves.  In the events
worker group (gevent, gunicorn.events.conf.py) a stream that has caught up is attached
instead (:class:`Attach`): the server gives its connection to the hub, which writes the
frames and heartbeats itself, and the stream keeps no greenlet.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import orjson

from service import metrics
from service.game.errors import game_not_found
from service.game.record import StoredGame
from service.game.replay import replay
from service.live.hub import (
    BEAT,
    DELETED_GAME,
    END,
    FRAME,
    HEARTBEAT,
    SYNC,
    Follower,
    Hub,
    LiveFeed,
    close_all_followers,
    deleted_frame,
    end_frame,
    entry_frame,
    frame,
)
from service.store import GameStore, StorageUnavailable

log = logging.getLogger("patience.events")

#: The largest version a client may name (``after``, ``Last-Event-ID``).
MAX_VERSION = 2**63 - 1

#: Set when the worker process is stopping: open streams end (their clients resume
#: elsewhere with Last-Event-ID) instead of holding the graceful shutdown up.
SHUTDOWN = threading.Event()

__all__ = ["ATTACH_ENVIRON", "HEARTBEAT", "MAX_VERSION", "SHUTDOWN", "Attach", "Feed", "Stream",
           "TooManyStreams", "frame", "stop_streams"]

#: Set in the WSGI environment by a server that can attach a stream's connection to the
#: hub (service/events_worker.py, which spells it out too).
ATTACH_ENVIRON = "patience.attach"


def stop_streams() -> None:
    """End every open stream of this process now."""
    SHUTDOWN.set()
    close_all_followers()


class NothingToStream(Exception):
    """The game is over and the client has seen its end."""


class TooManyStreams(Exception):
    """This process holds ``SSE_MAX_STREAMS`` streams already."""


@dataclass(slots=True)
class Stream:
    """An admitted stream: what was read when it opened (dropped once sent), and what to
    give back: ``release()`` when the server closes the response, which does nothing
    once the stream is attached (the hub calls ``release(final=True)`` when it ends)."""

    game_id: str
    after: int
    game: StoredGame | None
    journal: str | None
    follower: Follower
    release: _Release
    attachable: bool = False


class _Release:
    """Gives a stream's place back, once: to its game's channel, the gauge and the
    process's cap.  Called with no argument when the server closes the response, which
    does nothing once the stream is attached; the hub then calls it with ``final``."""

    __slots__ = ("attached", "follower", "released", "slots")

    def __init__(self, follower: Follower, slots: threading.BoundedSemaphore):
        self.follower = follower
        self.slots = slots
        self.attached = False
        self.released = False

    def __call__(self, final: bool = False) -> None:
        if (self.attached and not final) or self.released:
            return
        self.released = True
        self.follower.leave()
        metrics.EVENT_STREAMS.dec()
        self.slots.release()


@dataclass(slots=True)
class Attach:
    """What :meth:`Feed.frames` yields, in place of waiting, to a server that can attach
    the stream (``ATTACH_ENVIRON``): the server calls :meth:`attach` with the client's
    connection once everything before it is sent, and lets go of the response."""

    hub: Hub
    stream: Stream
    sent: int

    def attach(self, conn, *, chunked: bool) -> None:
        release = self.stream.release
        release.attached = True  # from now on only the hub releases it
        self.hub.attach(self.stream.follower, conn, chunked=chunked, sent=self.sent,
                        on_end=lambda: release(final=True))


class Feed:
    """The events feed of the games in a :class:`GameStore`."""

    def __init__(self, store: GameStore, live: LiveFeed, *, heartbeat: float, retry_ms: int,
                 max_streams: int, max_seconds: float):
        self.store = store
        self.hub = live.hub
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
        follower = None
        try:
            # Follow, then read again: no change can slip between the read and the
            # wait.
            follower = self.hub.follow(game_id, self.max_seconds)
            found = self.store.load_with_journal(game_id)
            self._check_open(game_id, found and found[0], after)
        except BaseException:
            if follower is not None:
                follower.leave()
            self._slots.release()
            raise
        stored, journal = found
        metrics.EVENT_STREAMS.inc()
        return Stream(game_id, after, stored, journal, follower,
                      _Release(follower, self._slots))

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
            stored, journal = stream.game, stream.journal
            stream.game = stream.journal = None  # an idle stream keeps no copy of the game
            chunk, sent, over = _catch_up(game_id, stored, journal, stream.after)
            del stored, journal
            if chunk:
                yield chunk
            if over:
                return
            if stream.attachable:
                yield Attach(self.hub, stream, sent)
                return
            yield from self._follow(stream, sent)
        except StorageUnavailable as error:
            log.warning("events stream of game %s ended: storage unavailable: %s",
                        game_id, error)

    def _follow(self, stream: Stream, sent: int) -> Iterator[bytes]:
        """Send what the hub hands the follower, from version ``sent`` on; catch up from
        the journal when a version is missing."""
        game_id = stream.game_id
        follower = stream.follower
        while not SHUTDOWN.is_set():
            taken = follower.take()
            if taken is None or SHUTDOWN.is_set():
                # Past SSE_MAX_SECONDS, the hub lost Redis, or the worker stops: the
                # client resumes with Last-Event-ID.
                return
            items, lagging = taken
            if not lagging and all(kind is BEAT for kind, _version, _data in items):
                yield HEARTBEAT
                continue
            behind = lagging
            out = []
            for kind, version, data in items:
                if behind:
                    break
                if kind is BEAT:
                    continue
                if kind is FRAME:
                    if version == sent + 1:
                        out.append(data)
                        sent = version
                    elif version > sent:
                        behind = True
                elif kind is SYNC:
                    behind = version != sent
                elif kind is END:
                    if version == sent:
                        out.append(data)
                        yield b"".join(out)
                        return
                    behind = True
                elif kind is DELETED_GAME:
                    out.append(data)
                    yield b"".join(out)
                    return
            if out:
                yield b"".join(out)
            if behind:
                found = self.store.load_with_journal(game_id)
                if found is None:
                    yield deleted_frame(game_id)
                    return
                chunk, sent, over = _catch_up(game_id, found[0], found[1], sent)
                del found
                if chunk:
                    yield chunk
                if over:
                    return


def _catch_up(game_id: str, stored: StoredGame, journal: str, after: int
              ) -> tuple[bytes, int, bool]:
    """The frames of every entry after version ``after`` (the whole game first if the
    client is ahead of it), the version they reach, and whether the game is over (its
    ``end`` event is then the last frame)."""
    _replayed, changes = replay(stored, journal, after=after)
    parts = []
    if after > stored.version:
        # The client is ahead of the game (another game's version, or a game deleted
        # and created again): the whole game, to start from.
        parts.append(frame("game", orjson.dumps({"version": stored.version,
                                                 "game": stored.public(game_id)}),
                           stored.version))
    parts.extend(entry_frame(change) for change in changes)
    over = stored.record.is_over
    if over:
        parts.append(end_frame(game_id, stored))
    return b"".join(parts), stored.version, over
