"""A stream's place on its game's channel: what the hub hands it, taken by the stream's own
thread, or framed on the stream's wire and written by the hub to the client's connection
once the stream is attached."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from service.live.items import BEAT_ITEM, FINISHED, FOLLOWING, Item, deliver
from service.live.stream_socket import StreamSocket
from service.live.wires import Wire, frame

#: Set in the WSGI environment by a server that can attach a stream's connection to its
#: follower (:mod:`service.runtime.events_process`).
ATTACH_ENVIRON = "patience.attach"


@dataclass(frozen=True, slots=True)
class Limits:
    """What a follower may hold back for its client: ``backlog`` items its thread has not
    taken (past it they are dropped, and the stream catches up from the journal), or,
    attached, ``backlog_bytes`` its client has not read, for ``patience`` seconds."""

    backlog: int
    backlog_bytes: int
    patience: float


class Follower:
    """One stream's place on its game's channel.

    The hub hands it items (:meth:`push`), times it (:meth:`round`) and closes it
    (:meth:`close`), under the hub's ``lock``.  The stream takes the items
    (:meth:`take`) in its own thread or greenlet and writes them, or it *attaches* the
    follower to the client's connection (:meth:`attach`): the hub then writes each item
    to the socket itself, framed on the stream's wire, as
    :func:`~service.live.items.deliver` says, and the stream needs no greenlet at all.  An
    attached follower whose client is behind (a version would be missing) has its
    connection closed; its client resumes from its last version."""

    __slots__ = ("_connection", "_items", "_lagging", "_leave", "_limits", "_lock", "_sent",
                 "_wake", "_wire", "channel", "closed", "deadline", "quiet")

    def __init__(self, channel: str, deadline: float, *, lock: threading.RLock,
                 limits: Limits, leave: Callable[[Follower], None]):
        """``channel``: the name of the channel it follows; ``leave`` is the hub's, called
        under the lock when the follower leaves."""
        self.channel = channel
        self.deadline = deadline
        self.closed = False
        self.quiet = False  # nothing reached it since the last heartbeat round
        self._lock = lock
        self._limits = limits
        self._leave = leave
        self._items: list[Item] | None = []
        self._lagging = False
        self._wake: threading.Event | None = threading.Event()
        self._connection: StreamSocket | None = None
        self._wire: Wire | None = None  # attached: the stream's wire
        self._sent = -1  # attached: the position its client has

    # --- the hub's side (under the lock) ---------------------------------------------
    def push(self, item: Item) -> None:
        if item is not BEAT_ITEM:
            self.quiet = False
        if self.closed:
            return
        if self._connection is not None:
            self._deliver(item)
            return
        if self._lagging:
            return
        if len(self._items) >= self._limits.backlog:
            self._items = []
            self._lagging = True
        else:
            self._items.append(item)
        self._wake.set()

    def round(self, now: float) -> bool:
        """A heartbeat round: a ``BEAT`` if nothing reached the follower since the last
        one; False once it is past its deadline (it is closed then)."""
        if now >= self.deadline:
            self.close()
            return False
        if self.quiet:
            self.push(BEAT_ITEM)
        self.quiet = True
        return True

    def close(self) -> None:
        """End the stream (its client resumes from its last version)."""
        if self._connection is not None:
            self._connection.end(finish=True)
            return
        self.closed = True
        self._items = []
        self._wake.set()

    # --- the stream's side -----------------------------------------------------------
    def take(self) -> tuple[list[Item], bool] | None:
        """Wait for items: ``(items, lagging)``; None once closed (past its deadline, the
        hub lost its connection, or the process stops)."""
        self._wake.wait()
        with self._lock:
            if self.closed:
                return None
            items, self._items = self._items, []
            lagging, self._lagging = self._lagging, False
            self._wake.clear()
        return items, lagging

    def attach(self, sock, *, chunked: bool, sent: int, wire: Wire,
               on_end: Callable[[], None]) -> None:
        """Have the hub write the stream to ``sock`` on ``wire`` (a non-blocking socket
        whose response has sent everything up to version ``sent``); ``on_end`` runs once
        the hub has closed it."""
        with self._lock:
            self._wire = wire
            self._connection = StreamSocket(
                sock, chunked=chunked, lock=self._lock, limit=self._limits.backlog_bytes,
                patience=self._limits.patience, on_end=lambda: self._ended(on_end))
            self._sent = sent
            items, self._items, self._wake = self._items, None, None
            if self.closed:  # closed before it was attached
                self._connection.end(finish=True)
            elif self._lagging:
                self._connection.end(finish=False)
            else:
                for item in items:
                    self._deliver(item)

    def leave(self) -> None:
        """Give the place back: the hub forgets the follower."""
        with self._lock:
            self.closed = True
            self._leave(self)

    @property
    def pending_bytes(self) -> int:
        """Bytes waiting for an attached client to read them."""
        return len(self._connection.pending) if self._connection is not None else 0

    def _deliver(self, item: Item) -> None:
        sending, self._sent, outcome = deliver((item,), self._sent)
        for sent_item in sending:
            self._connection.write(frame(self._wire, sent_item))
        if outcome != FOLLOWING:
            self._connection.end(finish=outcome == FINISHED)

    def _ended(self, on_end: Callable[[], None]) -> None:
        self.closed = True
        on_end()


@dataclass(slots=True)
class Attach:
    """What a stream yields, in place of waiting, to a server that can attach it
    (:data:`ATTACH_ENVIRON`): the server calls :meth:`attach` with the client's
    connection once everything before it is sent, and lets go of the response.
    ``release`` is the stream's (:class:`service.live.streams.Release`): from then on the
    hub's end of the connection releases the stream, not the server's."""

    follower: Follower
    sent: int
    wire: Wire
    release: Callable[..., None]

    def attach(self, sock, *, chunked: bool) -> None:
        release = self.release
        release.attached = True
        self.follower.attach(sock, chunked=chunked, sent=self.sent, wire=self.wire,
                             on_end=lambda: release(final=True))

