"""gunicorn settings of the events worker group, all read from the environment.

The events feed's Server-Sent Events streams (``GET /v1/games/<id>/events``) are served
by gevent workers of the same app, where an idle stream costs a greenlet and a few
kilobytes instead of a thread (service/handoff.py, service/feed.py):
    gunicorn -c gunicorn.events.conf.py 'service.app:create_app()'

It receives streams two ways: handed over by the gthread workers of gunicorn.conf.py
through the Unix socket at ``EVENTS_HANDOFF_SOCKET`` (what `make run` sets up: one
address for clients), and on its own address ``EVENTS_BIND`` (default 127.0.0.1:8001),
where a load balancer may route the events path (docker-compose.yml).  It answers every
other route too (it is the whole app), so a misrouted request still gets its answer.
"""

import os

from service.env import env_int
from service.runtime.shared import (  # noqa: F401 (gunicorn reads these settings)
    accesslog,
    child_exit,
    control_socket_disable,
    errorlog,
    events_feed,
    graceful_timeout,
    keepalive,
    loglevel,
    on_sigterm,
    timeout,
    worker_tmp_dir,
)

bind = [os.environ.get("EVENTS_BIND") or "127.0.0.1:8001"]
# One worker by default: a single process holds ten thousand idle streams on one core,
# and every process holds one Redis subscription.  More workers spread the frames'
# writing over more cores.
workers = env_int("EVENTS_WORKERS", 1)
worker_class = "service.runtime.events_process.EventsWorker"
# Descriptors an events worker keeps for everything but streams: its listening and
# hand-off sockets, Redis connections, connections being handed over, log files.
FILE_RESERVE = 256


def stream_capacity(wanted: int | None) -> int:
    """Streams an events worker may hold: ``wanted`` (EVENTS_MAX_STREAMS; unset: 16384),
    at most what the open-file limit leaves past :data:`FILE_RESERVE`, since each stream
    holds a connection, a file descriptor.  The soft limit is raised first, as far as the
    hard limit allows (the workers inherit it); a container's limit is its `ulimits`."""
    import resource

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
        import sys

        print(f"patience-events: EVENTS_MAX_STREAMS={wanted} lowered to {capacity}: the "
              f"open-file limit is {soft} (hard {hard}); raise it for more streams",
              file=sys.stderr, flush=True)
    return capacity


# Streams each events worker holds at most (then 503 too_many_streams): one worker does
# not promise more streams than it has file descriptors for.
max_streams = stream_capacity(env_int("EVENTS_MAX_STREAMS", None))
os.environ["SSE_MAX_STREAMS"] = str(max_streams)
worker_connections = max_streams + FILE_RESERVE
# Timeouts, logging, heartbeat files, metrics: service/gunicorn_shared.py.
proc_name = "patience-events"

_handoff = {}


def on_starting(server):
    """Listen for handed-over connections before the workers start (they inherit it)."""
    path = os.environ.get("EVENTS_HANDOFF_SOCKET")
    if path:
        from service.runtime.handoff import listen

        _handoff["listener"] = listen(path)
        _handoff["path"] = path


def post_worker_init(worker):
    """End this worker's streams first on SIGTERM (their clients resume with
    Last-Event-ID), and serve the connections handed to it."""
    import gevent

    feed = events_feed(worker)

    def stop_now():
        if feed is not None:
            feed.stop_streams()
        server = _handoff.get("server")
        if server is not None:
            server.close()  # no new hand-off: the gthread workers serve it or retry

    # In a greenlet of its own: the handler may interrupt one that holds a lock
    # stop_streams() takes.
    on_sigterm(lambda: gevent.spawn(stop_now))
    listener = _handoff.pop("listener", None)
    if listener is not None:
        import socket  # gevent's, once the worker has patched it

        from service.runtime.events_process import handoff_server

        patched = socket.socket(listener.family, listener.type, fileno=listener.detach())
        _handoff["server"] = handoff_server(patched, worker.wsgi, worker_connections)
        _handoff["server"].start()


def worker_exit(server, worker):
    """Let the handed-over connections finish (their streams have ended)."""
    handed = _handoff.get("server")
    if handed is not None:
        handed.stop(timeout=graceful_timeout)


def on_exit(server):
    path = _handoff.get("path")
    if path:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(path)
