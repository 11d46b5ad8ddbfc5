"""gunicorn settings, all read from the environment.

Used by `make run` (service/devserver.py), the Dockerfile and docker-compose.yml:
    gunicorn -c gunicorn.conf.py 'service.app:create_app()'
"""

import os


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


bind = [f"{os.environ.get('HOST') or '127.0.0.1'}:{_int('PORT', 8000)}"]
workers = _int("WEB_CONCURRENCY", 4)
worker_class = os.environ.get("GUNICORN_WORKER_CLASS") or "gthread"
threads = _int("GUNICORN_THREADS", 8)
timeout = _int("GUNICORN_TIMEOUT", 30)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT", 30)
keepalive = _int("GUNICORN_KEEPALIVE", 5)

# The app writes its own JSON request log; gunicorn only reports on itself, to stderr.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL") or "info"

# Heartbeat files in memory rather than on a possibly slow container filesystem.
if os.path.isdir("/dev/shm"):
    worker_tmp_dir = "/dev/shm"

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
