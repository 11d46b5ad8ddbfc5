"""The request group's gunicorn process class: gthread, handing each events stream to the
events group before the app sees it (:mod:`service.runtime.handoff`), reading a
kept-alive connection's next request on the thread that answered the last one, and
leaving a new connection to the processes that hold fewer (:mod:`.balance`)."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time

from gunicorn.workers.gthread import ThreadWorker

from service.config import idle_reserve
from service.runtime.balance import ConnectionShares
from service.runtime.handoff import is_stream_request, request_head, send
from service.runtime.refusals import ProblemRefusals

log = logging.getLogger("patience.handoff")

#: Seconds a process that holds more than its share of the connections leaves a new
#: one to the others before it looks again, and the longest it leaves one.
ACCEPT_PAUSE, ACCEPT_PATIENCE = 0.002, 0.05


class RequestProcess(ProblemRefusals, ThreadWorker):
    """A process of the request group: gunicorn's gthread worker, which passes the
    connection of an events stream to the events group listening at
    ``EVENTS_HANDOFF_SOCKET``, and serves the stream itself when none does.  What it
    refuses before the app answers problem details (:mod:`service.runtime.refusals`).

    **The next request on the same thread.**  gthread hands a kept-alive connection back
    to the process's main loop after every answer: a callback through a pipe, an
    ``epoll`` registration, a wake-up of the main thread when the next request arrives,
    and a second hand-over to a pool thread; for a client that sends its next request
    at once (a load balancer's pooled connection, a bot, a benchmark) that round trip
    costs more CPU than the bare Flask answer.  Here, the thread that answered waits up
    to :attr:`next_request_wait` seconds for the next request on that connection and
    reads it itself; only a connection that stays quiet goes back to the main loop.  A
    thread waits only while :func:`idle_reserve` threads of the process stay free, so
    new connections and waiting streams never queue behind idle ones; a graceful stop
    ends every wait at once."""

    #: Seconds a thread waits for a kept-alive connection's next request (0: never);
    #: the request group's ``next_request_wait`` (KEEPALIVE_WAIT_SECONDS) sets it.
    next_request_wait = 0.05
    #: The events group's hand-off socket (None: streams are served here); the request
    #: group's ``handoff_socket`` (EVENTS_HANDOFF_SOCKET) sets it when the process starts.
    handoff_socket: str | None = None
    #: **A new connection to the processes that hold fewer.**  A process that holds more
    #: than :attr:`accept_balance` connections over the fewest another accepting process
    #: holds leaves a waiting connection to the others for :data:`ACCEPT_PAUSE` seconds,
    #: then looks again; after :data:`ACCEPT_PATIENCE` seconds of that it accepts the
    #: connection itself.  The counts (:attr:`shares`, the slot :attr:`balance_slot`) are
    #: the group's, set by its hooks (``ACCEPT_BALANCE``; -1: accept as gunicorn does).
    accept_balance = -1
    shares: ConnectionShares | None = None
    balance_slot: int | None = None

    def init_process(self):
        self._paused_until = 0.0  # no accept before this time (monotonic)
        self._left_since: float | None = None  # leaving a connection to others since
        self._busy = 0  # threads inside handle(): answering, waiting, or holding a stream
        self._busy_lock = threading.Lock()
        self._wait_cap = self.cfg.threads - idle_reserve(self.cfg.threads)
        self._stop_read, self._stop_write = os.pipe()  # readable once the process stops
        os.set_blocking(self._stop_write, False)  # written from the SIGTERM handler
        super().init_process()

    def handle_exit(self, sig, frame):
        super().handle_exit(sig, frame)
        with contextlib.suppress(OSError):  # the pipe full: a byte is there already
            os.write(self._stop_write, b"\0")

    # --- a new connection to the processes that hold fewer --------------------------------
    def accept(self, listener):
        if self._leave_to_others():
            return
        self._left_since = None
        super().accept(listener)
        self._publish()

    def notify(self):
        super().notify()  # once a turn of the main loop: the count follows it
        self._publish()

    def _publish(self):
        if self.shares is not None and self.alive and self.accept_balance >= 0:
            self.shares.publish(self.balance_slot, self.nr_conns)

    def _leave_to_others(self) -> bool:
        """Whether to leave the waiting connection to another process for now (then
        accepting pauses for :data:`ACCEPT_PAUSE`)."""
        if self.accept_balance < 0 or self.shares is None or self.balance_slot is None:
            return False
        fewest = self.shares.fewest_elsewhere(self.balance_slot)
        if fewest is None or self.nr_conns <= fewest + self.accept_balance:
            return False
        now = time.monotonic()
        if self._left_since is None:
            self._left_since = now
        elif now - self._left_since >= ACCEPT_PATIENCE:
            return False  # the others did not take it: taken here
        self._paused_until = now + ACCEPT_PAUSE
        self.set_accept_enabled(False)
        return True

    def set_accept_enabled(self, enabled):
        if enabled and self._paused_until:
            if time.monotonic() < self._paused_until:
                return  # the main loop asks again once the pause is over
            self._paused_until = 0.0
            if self._left_since is not None and not self._waiting_connection():
                self._left_since = None  # another process took it
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive and self.shares is not None:
            self.shares.free(self.balance_slot)  # stopping: no longer one to leave them to

    def _waiting_connection(self) -> bool:
        """Whether a new connection waits on a listening socket."""
        try:
            return bool(select.select(self.sockets, [], [], 0)[0])
        except (OSError, ValueError):
            return False

    def wait_for_and_dispatch_events(self, timeout):
        if self._paused_until:  # wake up when the pause is over
            timeout = max(0.0, min(timeout, self._paused_until - time.monotonic()))
        super().wait_for_and_dispatch_events(timeout)

    # --- the next request on the same thread ---------------------------------------------
    def handle(self, conn):
        with self._busy_lock:
            self._busy += 1
        try:
            keepalive = super().handle(conn)
            while keepalive is True and self._next_request_arrives(conn):
                keepalive = super().handle(conn)
            return keepalive
        finally:
            with self._busy_lock:
                self._busy -= 1

    def _next_request_arrives(self, conn) -> bool:
        """Whether ``conn``'s next request is there within :attr:`next_request_wait`
        (False at once when the process stops or too few threads are free)."""
        if not self.alive or not self.next_request_wait or self._busy > self._wait_cap:
            return False
        if conn.parser.unreader.buf.getvalue():
            return True  # read ahead with the last request's body: it is here already
        poll = select.poll()
        try:
            poll.register(conn.sock, select.POLLIN)
            poll.register(self._stop_read, select.POLLIN)
            ready = poll.poll(self.next_request_wait * 1000)
        except (OSError, ValueError):  # the connection closed under us
            return False
        return self.alive and any(fd != self._stop_read for fd, _event in ready)

    def handle_request(self, req, conn):
        path = self.handoff_socket
        if path and not self.cfg.is_ssl and is_stream_request(req.method, req.path,
                                                                req.headers):
            data = request_head(req.method, req.uri, req.version, req.headers)
            data += conn.parser.unreader.take_buffered()
            try:
                send(path, conn.sock, data)
            except OSError as error:
                log.warning("events group unreachable at %s (%s): serving the stream here",
                            path, error)
            else:
                conn.sock.close()  # the events process holds the connection now
                return False
        return super().handle_request(req, conn)
