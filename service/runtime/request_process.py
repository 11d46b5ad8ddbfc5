"""The request group's gunicorn process class: gthread, handing each events stream to the
events group before the app sees it (:mod:`service.runtime.handoff`)."""

from __future__ import annotations

import logging
import os

from gunicorn.workers.gthread import ThreadWorker

from service.runtime.handoff import ENV, is_stream_request, request_head, send
from service.runtime.refusals import ProblemRefusals

log = logging.getLogger("patience.handoff")


class RequestProcess(ProblemRefusals, ThreadWorker):
    """A process of the request group: gunicorn's gthread worker, which passes the
    connection of an events stream to the events group listening at
    ``EVENTS_HANDOFF_SOCKET``, and serves the stream itself when none does.  What it
    refuses before the app answers problem details (:mod:`service.runtime.refusals`)."""

    def handle_request(self, req, conn):
        path = os.environ.get(ENV)
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
