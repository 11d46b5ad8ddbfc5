"""The streams of a game's feed (a stream: one open HTTP response that delivers it, on
the wire its client asked for, :mod:`service.live.wires`): admission under the process's
cap, the catch-up from the journal, then what the hub hands the stream's follower.

A stream (:meth:`EventStreams.open`, then :meth:`EventStreams.frames`) joins its game's
channel on the process's hub before it reads the game and its journal (no change slips
between the two), sends the entries after the client's version, then what the hub hands
it, as :func:`~service.live.items.deliver` says; a stream that misses a version (it fell
behind, or the hub started its channel later) reads the journal and replays what it has
not sent.  It ends with an ``end`` event when the game ends, with a ``deleted`` event
when it is deleted (or expires), after ``SSE_MAX_SECONDS``, when the hub loses its Redis
connection, and when the process stops (:meth:`EventStreams.stop`, on SIGTERM); a client
resumes from its last version (``Last-Event-ID``).  A process holds at most
``max_streams`` streams (then 503 ``too_many_streams``): a request-group process serves
each on a thread of its own, so its cap leaves threads to answer moves.  In the events
group a stream that has caught up is attached instead
(:class:`~service.live.follower.Attach`): the server gives its connection to the
follower, whose items the hub then frames and writes itself.

A day's board is followed the same way (:meth:`EventStreams.open_board`): its stream
joins the board's channel (:class:`~service.live.board.BoardChannel`) before it reads the
board's feed after the client's id, under the same cap, with the same heartbeats and the
same hand-off; it has no end.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from service.game.errors import game_not_found
from service.game.record import StoredGame
from service.game.replay import replay
from service.live import board
from service.live.channel import Channel, GameChannel
from service.live.follower import Attach, Follower
from service.live.hub import Hub
from service.live.items import (
    BEHIND,
    FINISHED,
    Item,
    Position,
    deleted_item,
    deliver,
    end_item,
    entry_item,
    game_item,
)
from service.live.wires import Wire, frames
from service.observability import metrics
from service.storage.daily_store import DailyStore
from service.storage.game_store import GameStore, StorageUnavailable

log = logging.getLogger("patience.events")

#: The largest version a client may name (``after``, ``Last-Event-ID``).
MAX_VERSION = 2**63 - 1


class NothingToStream(Exception):
    """The game is over and the client has seen its end."""


class TooManyStreams(Exception):
    """This process holds as many streams as it may already."""


class Release:
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


#: A stream's catch-up: the items after a position, the position they reach, and whether
#: the feed is over (its last item its end, or a ``deleted`` event: it is gone).
CatchUp = Callable[[Position], tuple[list[Item], Position, bool]]


@dataclass(slots=True)
class Stream:
    """An admitted stream: what it follows (``name``, for the logs), its wire, what was
    read when it opened (``first``: its catch-up from the client's position, made when
    the stream starts and dropped then; ``game``, a game's stored game, for the view's
    checks), how it catches up later (``reread``), and what to give back: ``release()``
    when the server closes the response."""

    name: str
    wire: Wire
    first: Callable[[], tuple[list[Item], Position, bool]] | None
    reread: CatchUp
    follower: Follower
    release: Release
    game: StoredGame | None = None
    attachable: bool = False


class EventStreams:
    """The streams of the feeds of the games in a :class:`GameStore`, and of the days'
    boards in a :class:`DailyStore` (``boards``), in this process, under one cap."""

    def __init__(self, store: GameStore, hub: Hub, *, retry_ms: int, max_streams: int,
                 max_seconds: float, boards: DailyStore | None = None):
        self.store = store
        self.boards = boards
        self.hub = hub
        self.retry_ms = max(0, int(retry_ms))
        self.max_seconds = max(0.1, float(max_seconds))
        #: Set when the process stops: open streams end (their clients resume elsewhere
        #: from their last version) instead of holding the graceful shutdown up.
        self.stopping = threading.Event()
        self.limit(max_streams)

    def limit(self, max_streams: int) -> None:
        """Hold at most ``max_streams`` streams; set before any is open (the gunicorn
        groups set their own, :mod:`service.runtime`)."""
        self.max_streams = max(1, int(max_streams))
        self._slots = threading.BoundedSemaphore(self.max_streams)

    def stop(self) -> None:
        """End every open stream now (the process stops)."""
        self.stopping.set()
        self.hub.close_followers()

    def open(self, game_id: str, after: int, wire: Wire) -> Stream | None:
        """Admit a stream on ``wire``: None when there is nothing to stream ever (the game
        is over and the client has seen its end: 204, which stops an EventSource); 404 for
        an unknown game; :class:`TooManyStreams` past the cap."""
        try:
            return self._admit(game_id, after, wire)
        except NothingToStream:
            return None

    def _admit(self, game_id: str, after: int, wire: Wire) -> Stream:
        _check_open(game_id, self.store.load(game_id), after)

        def read() -> tuple[StoredGame, str]:
            found = self.store.load_with_journal(game_id)
            _check_open(game_id, found and found[0], after)
            return found

        def reread(sent: int):
            found = self.store.load_with_journal(game_id)
            if found is None:
                return [deleted_item(game_id)], sent, True
            return catch_up(game_id, *found, sent)

        stream, (stored, journal) = self._join(GameChannel(self.store, game_id), read,
                                               wire, reread)
        stream.game = stored
        stream.first = lambda: catch_up(game_id, stored, journal, after)
        return stream

    def open_board(self, variant: str, day: str, after: str, wire: Wire) -> Stream:
        """Admit a stream of a day's board's feed (``variant``, ``day``: checked) from the
        entry ``after`` (an id of its feed, or ``0``) on ``wire``;
        :class:`TooManyStreams` past the cap."""
        boards, start = self.boards, board.position(after)

        def reread(sent: Position):
            return board.catch_up(boards, variant, day, sent)

        stream, first = self._join(board.BoardChannel(boards, variant, day),
                                   lambda: reread(start), wire, reread)
        stream.first = lambda: first
        return stream

    def _join(self, channel: Channel, read: Callable, wire: Wire, reread: CatchUp):
        """A stream on ``channel`` under the cap, and what ``read`` read once it was
        followed."""
        if not self._slots.acquire(blocking=False):
            raise TooManyStreams(f"this server holds {self.max_streams} streams already")
        follower = None
        try:
            # Follow, then read again: no change can slip between the read and the wait.
            follower = self.hub.follow(channel, self.max_seconds)
            found = read()
        except BaseException:
            if follower is not None:
                follower.leave()
            self._slots.release()
            raise
        metrics.EVENT_STREAMS.inc()
        return Stream(channel.name, wire, None, reread, follower,
                      Release(follower, self._slots)), found

    def frames(self, stream: Stream) -> Iterator[bytes | Attach]:
        """The stream's bytes on its wire: its preamble (the retry hint), the entries after
        the client's version, then every new entry as it is stored, heartbeats while idle,
        and an ``end`` or ``deleted`` event to close; or, once caught up, an
        :class:`Attach` for a server that can attach it.  Storage failures end the stream
        (the client resumes); the caller releases the slot when the WSGI server closes
        it."""
        wire = stream.wire
        try:
            yield wire.preamble(self.retry_ms)
            first, stream.first, stream.game = stream.first, None, None
            items, sent, over = first()  # an idle stream keeps no copy of what it read
            del first
            if items:
                yield frames(wire, items)
            if over:
                return
            if stream.attachable:
                yield Attach(stream.follower, sent, wire, stream.release)
                return
            yield from self._follow(stream, sent)
        except StorageUnavailable as error:
            log.warning("events stream of %s ended: storage unavailable: %s",
                        stream.name, error)

    def _follow(self, stream: Stream, sent: Position) -> Iterator[bytes]:
        """Send what the hub hands the follower, from position ``sent`` on; catch up from
        the store when something is missing."""
        wire = stream.wire
        while not self.stopping.is_set():
            taken = stream.follower.take()
            if taken is None or self.stopping.is_set():
                # Past its deadline, the hub lost Redis, or the process stops: the client
                # resumes from its last version.
                return
            items, lagging = taken
            sending, sent, outcome = deliver(items, sent, lagging=lagging)
            if sending:
                yield frames(wire, sending)
            if outcome == FINISHED:
                return
            if outcome == BEHIND:
                caught, sent, over = stream.reread(sent)
                if caught:
                    yield frames(wire, caught)
                if over:
                    return


def _check_open(game_id: str, stored: StoredGame | None, after: int) -> None:
    """404 for an unknown game; :class:`NothingToStream` for a finished game whose end the
    client has seen."""
    if stored is None:
        raise game_not_found(game_id)
    if stored.record.is_over and after >= stored.version:
        raise NothingToStream(game_id)


def catch_up(game_id: str, stored: StoredGame, journal: str, after: int
             ) -> tuple[list[Item], int, bool]:
    """The items of every entry after version ``after`` (the whole game first if the
    client is ahead of it), the version they reach, and whether the game is over (its
    ``end`` event is then the last item)."""
    _replayed, changes = replay(stored, journal, after=after)
    items = []
    if after > stored.version:
        # The client is ahead of the game (another game's version, or a game deleted and
        # created again): the whole game, to start from.
        items.append(game_item(game_id, stored))
    items.extend(entry_item(change) for change in changes)
    over = stored.record.is_over
    if over:
        items.append(end_item(game_id, stored))
    return items, stored.version, over
