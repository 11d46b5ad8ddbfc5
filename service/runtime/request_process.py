"""The request group's gunicorn process class: gthread, handing each events stream to the
events group before the app sees it (:mod:`service.runtime.handoff`), and reading a
kept-alive connection's next request on the thread that answered the last one."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading

from gunicorn.workers.gthread import ThreadWorker

from service.config import idle_reserve
from service.runtime.handoff import is_stream_request, request_head, send
from service.runtime.refusals import ProblemRefusals

log = logging.getLogger("patience.handoff")


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

    def init_process(self):
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
