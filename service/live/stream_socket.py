"""A stream's socket, written by the hub itself without blocking: the client connection of a
stream attached to its follower (the events group, :mod:`service.runtime.events_process`).
"""

from __future__ import annotations

import contextlib
import select
import threading
from collections.abc import Callable


class StreamSocket:
    """A non-blocking socket whose response is a stream under way (a game's feed, framed
    on its wire).

    :meth:`write` sends at once what the socket takes and keeps the rest, which a thread
    of its own (a greenlet under gevent, whose ``select.poll`` it patches) sends once
    the socket has room.  A client that does not read is taken for gone, and its
    connection closed, once more than ``limit`` bytes would wait for it or after
    ``patience`` seconds without room: its memory is bounded whatever it does.  Every
    method runs under ``lock`` (the hub's); ``on_end`` runs once the connection is
    closed."""

    __slots__ = ("_chunked", "_limit", "_lock", "_on_end", "_patience", "_sock", "pending")

    def __init__(self, sock, *, chunked: bool, lock: threading.RLock, limit: int,
                 patience: float, on_end: Callable[[], None]):
        self._sock = sock
        self._chunked = chunked
        self._lock = lock
        self._limit = limit
        self._patience = patience
        self._on_end = on_end
        self.pending = b""

    def write(self, data: bytes) -> None:
        if self._sock is None:
            return
        if self._chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        if self.pending:
            if len(self.pending) + len(data) > self._limit:
                self.end(finish=False)  # its client does not read: drop it
            else:
                self.pending += data
            return
        try:
            written = self._sock.send(data)
        except BlockingIOError:
            written = 0
        except OSError:
            self.end(finish=False)  # the client left
            return
        if written < len(data):
            self.pending = data[written:]
            threading.Thread(target=self._flush_when_ready, name="events-flush",
                             daemon=True).start()

    def end(self, *, finish: bool) -> None:
        """Close the connection, after the end of the response if ``finish`` (else the
        response is cut short, and the client resumes)."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        if finish and self._chunked and not self.pending:
            with contextlib.suppress(OSError):
                sock.send(b"0\r\n\r\n")
        with contextlib.suppress(OSError):
            sock.close()
        self.pending = b""
        on_end, self._on_end = self._on_end, None
        on_end()

    def _flush_when_ready(self) -> None:
        """Send what is pending as the socket takes it; close the connection after
        ``patience`` seconds without room."""
        while True:
            sock = self._sock
            if sock is None:
                return
            poller = select.poll()
            try:
                poller.register(sock.fileno(), select.POLLOUT)
                ready = poller.poll(self._patience * 1000)
            except (OSError, ValueError):
                ready = []
            with self._lock:
                if not ready:
                    self.end(finish=False)
                    return
                if self._flush():
                    return

    def _flush(self) -> bool:
        """Send what is pending: whether all of it went."""
        if self._sock is None:
            return True
        try:
            written = self._sock.send(self.pending)
        except BlockingIOError:
            return False
        except OSError:
            self.end(finish=False)
            return True
        self.pending = self.pending[written:]
        return not self.pending
