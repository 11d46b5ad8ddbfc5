"""gunicorn settings, all read from the environment.

Used by `make run` (devtools/devserver.py), the Dockerfile and docker-compose.yml:
    gunicorn -c gunicorn.conf.py 'service.app:create_app()'
"""

import os

from service.env import env_int
from service.gunicorn_shared import (  # noqa: F401 (gunicorn reads these settings)
    accesslog,
    child_exit,
    control_socket_disable,
    errorlog,
    graceful_timeout,
    keepalive,
    loglevel,
    timeout,
    worker_tmp_dir,
)

bind = [f"{os.environ.get('HOST') or '127.0.0.1'}:{env_int('PORT', 8000)}"]
# Workers: two per core (4 on the 2-core machines this is sized for; scale it with the
# cores: WEB_CONCURRENCY=2*cores).  A worker runs Python one thread at a time, and a
# request spends much of its time waiting on Redis or the socket, so two per core keep
# the cores busy; the counts measured with `python -m bench http` are in README
# "Performance".  Sync workers cannot hold an events stream and close every connection;
# gevent cost more CPU per request here.  Redis is one core of its own: past ~8 cores
# per Redis, add Redis capacity, not workers.
workers = env_int("WEB_CONCURRENCY", 4)
# gthread (service.handoff.HandoffWorker): every request runs on one of the worker's
# threads.  With EVENTS_HANDOFF_SOCKET set (`make run`), an events stream is handed to the
# events worker group (gunicorn.events.conf.py: gevent, the same app), where it costs a
# few kilobytes instead of a thread; moves and reads stay here, on threads, without
# monkey-patching.  Without it, an open stream ties up one thread, never a worker:
# threads are cheap (started on demand, mostly waiting on a socket), hence many of them;
# each worker admits at most SSE_MAX_STREAMS streams (default: its threads less a reserve
# of a quarter, at least 4), so threads are always left to answer moves.  The worker's
# main loop, not the request threads, tells the arbiter it is alive: `timeout` never
# kills a long-lived stream.
worker_class = os.environ.get("GUNICORN_WORKER_CLASS") or "service.handoff.HandoffWorker"
threads = env_int("GUNICORN_THREADS", 64)
os.environ.setdefault("SSE_MAX_STREAMS", str(max(1, threads - max(4, threads // 4))))
# Timeouts, logging, heartbeat files, metrics: service/gunicorn_shared.py.


def post_worker_init(worker):
    """On SIGTERM (a graceful stop), end this worker's events streams first: they would
    hold the shutdown up for `graceful_timeout`; their clients resume elsewhere with
    Last-Event-ID."""
    import signal

    from service.events import stop_streams

    previous = signal.getsignal(signal.SIGTERM)

    def stop(signum, frame):
        stop_streams()
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, stop)
