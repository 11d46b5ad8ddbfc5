"""The request group's gunicorn settings: gthread processes that answer moves and reads,
and hand every events stream to the events group.  All taken from the configuration's
table (:mod:`service.config`), read once when gunicorn loads this module::

    gunicorn -c python:service.runtime.request_group 'service.app:create_app()'

(the Dockerfile, both compose files, and `make run` through devtools/launch.py).
"""

import gc

from service.config import REQUEST_GROUP, process_settings
from service.runtime import shared
from service.runtime.balance import ConnectionShares
from service.runtime.shared import *  # noqa: F403 (the settings both groups share)

#: The request group's settings (:data:`service.config.REQUEST_GROUP`).
settings = process_settings(REQUEST_GROUP)

bind = [f"{settings['HOST']}:{settings['PORT']}"]
# Two processes per core (WEB_CONCURRENCY=2*cores): a process runs Python one thread at a
# time, and a request spends much of its time waiting on Redis or the socket.
workers = settings["WEB_CONCURRENCY"]
# gthread (service.runtime.request_process.RequestProcess): every request runs on one of
# the process's threads.  With EVENTS_HANDOFF_SOCKET set (`make run`), an events stream
# is handed to the events group (service.runtime.events_group: gevent, the same app),
# where it costs a few kilobytes instead of a thread; moves and reads stay here, on
# threads, without monkey-patching.  Without it, an open stream ties up one thread,
# never a process: threads are cheap (started on demand, mostly waiting on a socket),
# hence many of them, and the app admits at most SSE_MAX_STREAMS streams a process (by
# default its threads less a quarter: service.config.stream_cap), so threads are always
# left to answer moves.  The process's main loop, not the request threads, tells the
# arbiter it is alive: `timeout` never kills a long-lived stream.
worker_class = settings["GUNICORN_WORKER_CLASS"]
threads = settings["GUNICORN_THREADS"]
# After an answer on a kept-alive connection, its thread waits this long for the next
# request and reads it itself, instead of handing the connection back to the process's
# main loop (RequestProcess: only while a quarter of the threads stay free).  0 turns it
# off.
next_request_wait = settings["KEEPALIVE_WAIT_SECONDS"]
#: Where the events group receives the streams handed to it (None: served here).
handoff_socket = shared.settings["EVENTS_HANDOFF_SOCKET"]
# A new connection goes to a process that holds few (service/runtime/balance.py): the
# counts, in memory the processes share, made here in the arbiter before any fork; a
# slot per process, twice the processes for those a reload or a restart overlaps.
accept_balance = settings["ACCEPT_BALANCE"]
shares = ConnectionShares(max(8, 2 * workers)) if accept_balance >= 0 else None
# Each process lets REQUEST_SLOTS requests through the app at once, the others in the
# order they arrived, none waiting more than REQUEST_SLOT_WAIT_SECONDS
# (service/runtime/slots.py); 0: no turns.
request_slots = settings["REQUEST_SLOTS"]
slot_wait = settings["REQUEST_SLOT_WAIT_SECONDS"]
if request_slots < 0 or slot_wait < 0:
    raise ValueError("REQUEST_SLOTS and REQUEST_SLOT_WAIT_SECONDS cannot be negative "
                     f"({request_slots}, {slot_wait})")
# Once the app is made, a process collects and freezes what it holds (gc.freeze): the
# full collections that follow leave the app's modules and tables alone.
gc_freeze = settings["GC_FREEZE"]
# Timeouts, logging, heartbeat files, metrics: service/runtime/shared.py.


def pre_fork(server, worker):
    """The arbiter, before it starts a process: its slot of the connection counts."""
    if shares is not None:
        worker.balance_slot = shares.claim({getattr(other, "balance_slot", None)
                                            for other in server.WORKERS.values()})


def child_exit(server, worker):
    """A process exited: its slot of the connection counts freed, and what the groups
    share (:func:`service.runtime.shared.child_exit`)."""
    shared.child_exit(server, worker)
    if shares is not None:
        shares.free(getattr(worker, "balance_slot", None))


def post_worker_init(worker):
    """Give the process what it reads at start: its app in turns (``REQUEST_SLOTS``),
    its wait for a kept-alive connection's next request, the events group's hand-off
    socket and the connection counts; freeze what the app made (``GC_FREEZE``); and on
    SIGTERM (a graceful stop), end its events streams first: they would hold the
    shutdown up for `graceful_timeout`; their clients resume elsewhere with
    Last-Event-ID."""
    # Imported here, in the process: it counts in the metrics, and prometheus-client must
    # not be imported by the arbiter before it names the metrics directory (on_starting).
    from service.runtime.slots import RequestSlots

    feed = shared.events_feed(worker)  # the app's, before it is wrapped
    if request_slots:
        worker.wsgi = RequestSlots(worker.wsgi, request_slots, slot_wait)
    worker.next_request_wait = next_request_wait
    worker.handoff_socket = handoff_socket
    worker.accept_balance = accept_balance
    worker.shares = shares
    if gc_freeze:
        gc.collect()
        gc.freeze()
    if feed is not None:
        shared.on_sigterm(feed.stop_streams)
