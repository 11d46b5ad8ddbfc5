"""The gunicorn settings and hooks both groups share: :mod:`~service.runtime.request_group`
and :mod:`~service.runtime.events_group` take every name of :data:`__all__` (``from
service.runtime.shared import *``), so the two never drift apart; a group may define its
own hook over a shared one (the events group's ``on_starting`` calls this one).  The
settings come from the configuration's table (:mod:`service.config`, :data:`settings`:
read once, when gunicorn loads the group's settings)."""

import os
import shutil
import signal
from collections.abc import Callable

from service.config import GROUPS, prepare_process_environment, process_settings

#: What both groups take: the settings and hooks gunicorn reads.  (The helpers of their
#: own hooks, :func:`events_feed` and :func:`on_sigterm`, they call as ``shared.<name>``.)
__all__ = ["accesslog", "child_exit", "control_socket_disable", "errorlog",
           "graceful_timeout", "keepalive", "loglevel", "on_exit", "on_starting", "timeout",
           "worker_tmp_dir"]

#: The settings both groups read (:data:`service.config.GROUPS`).
settings = process_settings(GROUPS)

timeout = settings["GUNICORN_TIMEOUT"]
graceful_timeout = settings["GUNICORN_GRACEFUL_TIMEOUT"]
keepalive = settings["GUNICORN_KEEPALIVE"]

# The app writes its own JSON request log; gunicorn only reports on itself, to stderr.
accesslog = None
errorlog = "-"
loglevel = settings["GUNICORN_LOG_LEVEL"]

# Heartbeat files in memory rather than on a possibly slow container filesystem.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None

# No gunicornc control socket: its default path ($XDG_RUNTIME_DIR or ~/.gunicorn) is shared
# by every instance of the user, and nothing here uses it.
control_socket_disable = True

#: The metrics directory this arbiter made (none if one was given).
_made_metrics_folder: list[str] = []


def on_starting(server):
    """Prometheus metrics summed over every process of the group: prometheus-client's
    multiprocess mode needs one empty directory shared by the processes, named in
    ``PROMETHEUS_MULTIPROC_DIR`` before any of them imports the client.  Unless one is
    given, the arbiter makes it here, once, before it starts any process
    (:func:`service.config.prepare_process_environment`), and removes it when it exits
    (:func:`on_exit`)."""
    made = prepare_process_environment(settings)
    if made is not None:
        _made_metrics_folder.append(made)


def on_exit(server):
    """Remove the metrics directory the arbiter made, its processes all gone: a restart
    makes a new one, so none is left behind per start.  Kept when the arbiter hands over
    to a new one (``USR2``: the new arbiter inherits the directory and its processes
    use it)."""
    if server.reexec_pid == 0:
        for folder in _made_metrics_folder:
            shutil.rmtree(folder, ignore_errors=True)
        _made_metrics_folder.clear()


def child_exit(server, worker):
    """Drop a dead process's live gauges from the shared metrics files."""
    # Imported here, in the arbiter once on_starting has run: prometheus-client takes its
    # mode from the environment when first imported, and the processes inherit it.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def events_feed(worker):
    """The events feed (:class:`service.live.feed.EventsFeed`) of the app that the gunicorn
    process ``worker`` serves (its :class:`~service.services.Services`); None for an app
    without one (bench/toy.py's)."""
    services = getattr(worker.wsgi, "services", None)
    return services.events_feed if services is not None else None


def on_sigterm(stop: Callable[[], object]) -> None:
    """Call ``stop`` on SIGTERM (a graceful stop), then what handled it before (gunicorn's
    own handler)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handle(signum, frame):
        stop()
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, handle)
