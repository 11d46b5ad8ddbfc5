"""The gunicorn settings both worker groups share: the request group
(gunicorn.conf.py) and the events group (gunicorn.events.conf.py) import them, so the
two never drift apart.  All read from the environment."""

import os
import signal
from collections.abc import Callable

from service.env import env_int
from service.live import EXTENSION

timeout = env_int("GUNICORN_TIMEOUT", 30)
graceful_timeout = env_int("GUNICORN_GRACEFUL_TIMEOUT", 30)
keepalive = env_int("GUNICORN_KEEPALIVE", 5)

# The app writes its own JSON request log; gunicorn only reports on itself, to stderr.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL") or "info"

# Heartbeat files in memory rather than on a possibly slow container filesystem.
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None

# No gunicornc control socket: its default path ($XDG_RUNTIME_DIR or ~/.gunicorn) is shared
# by every instance of the user, and nothing here uses it.
control_socket_disable = True

# Prometheus metrics summed over every worker: prometheus-client's multiprocess mode needs
# one empty directory shared by the workers, set before any of them imports the client.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    import tempfile

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="patience-metrics-")


def child_exit(server, worker):
    """Drop a dead worker's live gauges from the shared metrics files."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def events_feed(worker):
    """The events feed of the app that the gunicorn process ``worker`` serves
    (:class:`service.live.feed.EventsFeed`); None for an app without one (bench/toy.py's).
    """
    extensions = getattr(worker.wsgi, "extensions", None)
    return extensions.get(EXTENSION) if extensions else None


def on_sigterm(stop: Callable[[], object]) -> None:
    """Call ``stop`` on SIGTERM (a graceful stop), then what handled it before (gunicorn's
    own handler)."""
    previous = signal.getsignal(signal.SIGTERM)

    def handle(signum, frame):
        stop()
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGTERM, handle)
