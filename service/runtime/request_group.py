"""The request group's gunicorn settings: gthread processes that answer moves and reads,
and hand every events stream to the events group.  All read from the environment::

    gunicorn -c python:service.runtime.request_group 'service.app:create_app()'

(the Dockerfile, both compose files, and `make run` through devtools/launch.py).
"""

import os

from service.env import env_int
from service.runtime import shared
from service.runtime.shared import *  # noqa: F403 (the settings both groups share)

bind = [f"{os.environ.get('HOST') or '127.0.0.1'}:{env_int('PORT', 8000)}"]
# Processes: two per core (4 on the 2-core machines this is sized for; scale it with the
# cores: WEB_CONCURRENCY=2*cores).  A process runs Python one thread at a time, and a
# request spends much of its time waiting on Redis or the socket, so two per core keep
# the cores busy.  Chosen by measurement (`python -m bench http`, fsync always, one run
# per model on 2 cores, README "Performance" has the table): gthread 2 x 64 and 4 x 8
# were no better than 4 x 64 beyond the drift between two runs of 4 x 64 themselves (the
# reference /toy/write 2,167 and 1,980 us of CPU); gevent (4) used 7-28 % less CPU per
# request on the reference endpoints but left connections waiting (p99 of the bare JSON
# endpoint 0.69-0.78 s, against 64-73 ms) and needs the process monkey-patched; sync (8)
# closes every connection (more CPU per request: 2,315 us on /toy/write) and cannot hold
# a stream.  Redis is one core of its own: past ~8 cores per Redis, add Redis capacity,
# not processes.
workers = env_int("WEB_CONCURRENCY", 4)
# gthread (service.runtime.request_process.RequestProcess): every request runs on one of
# the process's threads.  With EVENTS_HANDOFF_SOCKET set (`make run`), an events stream
# is handed to the events group (service.runtime.events_group: gevent, the same app),
# where it costs a few kilobytes instead of a thread; moves and reads stay here, on
# threads, without monkey-patching.  Without it, an open stream ties up one thread,
# never a process: threads are cheap (started on demand, mostly waiting on a socket),
# hence many of them, and the process admits at most `max_streams` streams, so threads
# are always left to answer moves.  The process's main loop, not the request threads,
# tells the arbiter it is alive: `timeout` never kills a long-lived stream.
worker_class = (os.environ.get("GUNICORN_WORKER_CLASS")
                or "service.runtime.request_process.RequestProcess")
threads = env_int("GUNICORN_THREADS", 64)


def stream_cap(threads: int) -> int:
    """Streams a process of ``threads`` threads serves at most: its threads less a reserve
    of a quarter, at least 4."""
    return max(1, threads - max(4, threads // 4))


#: Streams each process serves itself at most (then 503 too_many_streams).
max_streams = env_int("SSE_MAX_STREAMS", None)
if max_streams is None:
    max_streams = stream_cap(threads)
# Timeouts, logging, heartbeat files, metrics: service/runtime/shared.py.


def post_worker_init(worker):
    """Give the process's app its cap of streams; and on SIGTERM (a graceful stop), end
    its events streams first: they would hold the shutdown up for `graceful_timeout`;
    their clients resume elsewhere with Last-Event-ID."""
    feed = shared.events_feed(worker)
    if feed is not None:
        feed.streams.limit(max_streams)
        shared.on_sigterm(feed.stop_streams)
