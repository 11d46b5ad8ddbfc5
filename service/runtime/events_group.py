"""The events group's gunicorn settings: gevent processes of the same app that hold the
Server-Sent Events streams (``GET /v1/games/<id>/events``), where an idle stream costs a
few kilobytes instead of a thread::

    gunicorn -c python:service.runtime.events_group 'service.app:create_app()'

It receives streams two ways: handed over by the request group's processes through the
Unix socket at ``EVENTS_HANDOFF_SOCKET`` (:mod:`service.runtime.handoff`; what `make run`
and docker-compose.yml set up: one address for clients), and on its own address
``EVENTS_BIND`` (default 127.0.0.1:8001), where a load balancer may route the events path
(docker-compose.cluster.yml).  It answers every other route too (it is the whole app), so
a misrouted request still gets its answer.  Its settings come from the configuration's
table (:mod:`service.config`), read once when gunicorn loads this module.
"""

import contextlib
import os
import resource
import socket
import sys

import gevent

from service.config import EVENTS_GROUP, process_settings
from service.runtime import shared
from service.runtime.events_process import handoff_server
from service.runtime.handoff import listen
from service.runtime.shared import *  # noqa: F403 (the settings both groups share)

#: The events group's settings (:data:`service.config.EVENTS_GROUP`).
settings = process_settings(EVENTS_GROUP)

bind = [settings["EVENTS_BIND"]]
# One process by default: it holds ten thousand idle streams on one core, and every
# process holds one Redis subscription.  More processes spread the frames' writing over
# more cores.
workers = settings["EVENTS_WORKERS"]
worker_class = "service.runtime.events_process.EventsProcess"
# Descriptors an events process keeps for everything but streams: its listening and
# hand-off sockets, Redis connections, connections being handed over, log files.
FILE_RESERVE = 256


def stream_capacity(wanted: int | None) -> int:
    """Streams an events process may hold: ``wanted`` (EVENTS_MAX_STREAMS; unset: 16384),
    at most what the open-file limit leaves past :data:`FILE_RESERVE`, since each stream
    holds a connection, a file descriptor.  The soft limit is raised first, as far as the
    hard limit allows (the processes inherit it); a container's limit is its `ulimits`."""
    target = (wanted or 16384) + FILE_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < target:
        raised = target if hard == resource.RLIM_INFINITY else min(target, hard)
        if raised > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
    allowed = target if soft == resource.RLIM_INFINITY else max(1, soft - FILE_RESERVE)
    capacity = min(wanted or 16384, allowed)
    if wanted is not None and capacity < wanted:
        print(f"patience-events: EVENTS_MAX_STREAMS={wanted} lowered to {capacity}: the "
              f"open-file limit is {soft} (hard {hard}); raise it for more streams",
              file=sys.stderr, flush=True)
    return capacity


#: Streams each events process holds at most (then 503 too_many_streams): it does not
#: promise more streams than it has file descriptors for.
max_streams = stream_capacity(settings["EVENTS_MAX_STREAMS"])
worker_connections = max_streams + FILE_RESERVE
# Timeouts, logging, heartbeat files, metrics: service/runtime/shared.py.
proc_name = "patience-events"

#: The hand-off's ends: the listening socket and its path (the arbiter's, inherited by
#: the processes it starts), and a process's server of the connections handed to it.
_handoff = {}


def on_starting(server):
    """The metrics directory, and the hand-off's listening socket, before the processes
    start (they inherit both)."""
    shared.on_starting(server)
    path = shared.settings["EVENTS_HANDOFF_SOCKET"]
    if path:
        _handoff["listener"] = listen(path)
        _handoff["path"] = path


def post_worker_init(worker):
    """Give the process's app its cap of streams, serve the connections handed to it, and
    on SIGTERM end its streams first (their clients resume with Last-Event-ID)."""
    feed = shared.events_feed(worker)
    if feed is not None:
        feed.streams.limit(max_streams)
    listener = _handoff.pop("listener", None)
    if listener is not None:
        # socket.socket is gevent's once the process has patched it.
        patched = socket.socket(listener.family, listener.type, fileno=listener.detach())
        _handoff["server"] = handoff_server(patched, worker.wsgi, worker_connections)
        _handoff["server"].start()

    def stop_now():
        if feed is not None:
            feed.stop_streams()
        handed = _handoff.get("server")
        if handed is not None:
            handed.close()  # no new hand-off: the request group serves it or retries

    # In a greenlet of its own: the handler may interrupt one that holds a lock
    # stop_streams() takes.
    shared.on_sigterm(lambda: gevent.spawn(stop_now))


def worker_exit(server, worker):
    """Let the handed-over connections finish (their streams have ended)."""
    handed = _handoff.get("server")
    if handed is not None:
        handed.stop(timeout=shared.graceful_timeout)


def on_exit(server):
    """The hand-off's socket file and the metrics directory removed."""
    shared.on_exit(server)
    path = _handoff.get("path")
    if path:
        with contextlib.suppress(OSError):
            os.unlink(path)
