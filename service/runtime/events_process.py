"""The events group's gunicorn process class: gevent, with streams that need no greenlet
once they follow.

:class:`EventsProcess` is gunicorn's gevent worker whose WSGI handler lets an events
stream be *attached*: once a stream has sent what the client had not seen, the stream
(:meth:`service.live.streams.EventStreams.frames`) yields an
:class:`~service.live.follower.Attach` instead of waiting, and the handler gives the
connection to the stream's follower, whose items the process's hub then frames on the
stream's wire and writes to the socket itself.  The request's greenlet, its WSGI
environment and its Flask objects are then gone: a following client costs its socket and
a small record.  The same handler serves the connections handed over by the request
group (:class:`HandoffServer`, over :mod:`service.runtime.handoff`).

gunicorn's arbiter imports this module before gevent patches a process: the app's modules
(and with them redis-py and prometheus-client) are imported once it has, and of the live
feed this module imports only :mod:`service.live.follower` (with the feed's items and
wires, :mod:`service.live.items` and :mod:`service.live.wires`), which imports none of
them.
"""

from __future__ import annotations

import _socket
import io
import logging
import os

from gevent.pool import Pool
from gevent.pywsgi import WSGIHandler, WSGIServer
from gunicorn.workers.ggevent import GeventPyWSGIWorker, PyWSGIHandler

from service.live.follower import ATTACH_ENVIRON, Attach
from service.runtime.handoff import receive
from service.runtime.refusals import ProblemRefusalHandler, ProblemRefusals

log = logging.getLogger("patience.handoff")


class _Attaching:
    """A gevent WSGI handler that attaches events streams to their followers."""

    def get_environ(self):
        environ = super().get_environ()
        environ[ATTACH_ENVIRON] = True
        return environ

    def process_result(self):
        if self.command == "HEAD":  # the head alone: no body, no end of a chunked one
            if self.status and not self.headers_sent:
                self.write(b"")
            return
        for data in self.result:
            if isinstance(data, Attach):
                if not self.headers_sent:
                    self.write(b"")
                conn = _socket.socket(fileno=os.dup(self.socket.fileno()))
                conn.setblocking(False)
                data.attach(conn, chunked=bool(self.response_use_chunked))
                self.close_connection = True  # this handler lets go of its copy
                return
            if data:
                self.write(data)
        if self.status and not self.headers_sent:
            self.write(b"")
        if self.response_use_chunked:
            self._sendall(b"0\r\n\r\n")


class AttachingHandler(ProblemRefusalHandler, _Attaching, WSGIHandler):
    pass


class AttachingPyWSGIHandler(ProblemRefusalHandler, _Attaching, PyWSGIHandler):
    pass


class EventsProcess(ProblemRefusals, GeventPyWSGIWorker):
    """A process of the events group: gunicorn's gevent worker with
    :class:`AttachingPyWSGIHandler`.  gevent's server reads the requests here, and its
    handler answers what it refuses before the app as problem details; the worker's own
    :meth:`handle_error` (gunicorn's parser, not used by this worker's server) does too
    (:mod:`service.runtime.refusals`)."""

    wsgi_handler = AttachingPyWSGIHandler


class _Prefixed(io.RawIOBase):
    """A connection's bytes: those read before the hand-off, then the socket's."""

    def __init__(self, prefix: bytes, sock):
        self._prefix = prefix
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._prefix:
            count = min(len(buffer), len(self._prefix))
            buffer[:count] = self._prefix[:count]
            self._prefix = self._prefix[count:]
            return count
        return self._sock.recv_into(buffer)


class HandoffServer(WSGIServer):
    """Serves the connections handed over on a Unix socket as if it had accepted them."""

    def handle(self, channel, _address):
        try:
            connection, head = receive(channel)
        except OSError as error:
            log.warning("a hand-off failed: %s", error)
            return
        finally:
            channel.close()
        try:
            peer = connection.getpeername()
        except OSError:
            connection.close()
            return
        rfile = io.BufferedReader(_Prefixed(head, connection), 1024)
        try:
            AttachingHandler(connection, peer, self, rfile).handle()
        finally:
            connection.close()


def handoff_server(listener, application, pool_size: int) -> WSGIServer:
    """A gevent WSGI server of ``application`` over the connections handed to
    ``listener`` (a gevent socket)."""
    server = HandoffServer(listener, application, spawn=Pool(pool_size), log=None,
                            environ={"SERVER_NAME": "localhost", "SERVER_PORT": "0",
                                     "wsgi.multithread": True, "wsgi.multiprocess": True})
    server.max_accept = 64
    return server
