"""The request group's gunicorn settings: gthread processes that answer moves and reads,
and hand every events stream to the events group.  All read from the environment::

    gunicorn -c python:service.runtime.request_group 'service.app:create_app()'

(the Dockerfile, both compose files, and `make run` through devtools/launch.py).
"""

import os

from service.env import env_float, env_int
from service.runtime import shared
from service.runtime.request_process import idle_reserve
from service.runtime.shared import *  # noqa: F403 (the settings both groups share)

bind = [f"{os.environ.get('HOST') or '127.0.0.1'}:{env_int('PORT', 8000)}"]
# Processes: two per core (4 on the 2-core machines this is sized for; scale it with the
# cores: WEB_CONCURRENCY=2*cores).  A process runs Python one thread at a time, and a
# request spends much of its time waiting on Redis or the socket, so two per core keep
# the cores busy.  Chosen by measurement (`python -m bench http`, fsync always, one run
# per model on 2 cores, docs/performance.md has the table): gthread 2 x 64 and 4 x 8
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


# After an answer on a kept-alive connection, its thread waits this long for the next
# request and reads it itself, instead of handing the connection back to the process's
# main loop (RequestProcess: only while a quarter of the threads stay free).  Measured on
# 2 cores (`python -m bench http`-style rounds, fsync always, this and the reference app
# both on the same setting): 0.05 s against none cut gunicorn's and Redis' CPU per request
# by 12-25 % in one run (a move 1,785 -> 1,529 us, the reference write 1,289 -> 1,139 us,
# /healthz 595 -> 444 us) and 9-20 % in another (docs/performance.md, "Workers"); a waiting thread
# costs no CPU.  0.005, 0.05 and 0.5 s came out alike (one 4-round run: a move 1,481,
# 1,388 and 1,449 us): the benchmark's clients send their next request within 5 ms.
# 0.05 s also covers a client a little slower than that, and holds an idle thread for
# 50 ms at most.  0 turns it off.
next_request_wait = env_float("KEEPALIVE_WAIT_SECONDS", 0.05)


def stream_cap(threads: int) -> int:
    """Streams a process of ``threads`` threads serves at most: its threads less a reserve
    of a quarter, at least 4."""
    return max(1, threads - idle_reserve(threads))


#: Streams each process serves itself at most (then 503 too_many_streams).
max_streams = env_int("SSE_MAX_STREAMS", None)
if max_streams is None:
    max_streams = stream_cap(threads)
# Timeouts, logging, heartbeat files, metrics: service/runtime/shared.py.


def post_worker_init(worker):
    """Give the process its wait for a kept-alive connection's next request, and its
    app its cap of streams; and on SIGTERM (a graceful stop), end
    its events streams first: they would hold the shutdown up for `graceful_timeout`;
    their clients resume elsewhere with Last-Event-ID."""
    worker.next_request_wait = next_request_wait
    feed = shared.events_feed(worker)
    if feed is not None:
        feed.streams.limit(max_streams)
        shared.on_sigterm(feed.stop_streams)
