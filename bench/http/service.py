"""The service under load: its own redis-server and gunicorn (the request group's
settings as they are, started by :mod:`devtools.launch`) on free ports, and the settings
gunicorn reads."""

from __future__ import annotations

import importlib.util
import os
import runpy
from pathlib import Path
from unittest import mock

import redis

from bench.http.constants import HOST
from devtools.launch import GUNICORN_COMMAND, Gunicorn
from devtools.processes import children, cpu_seconds
from devtools.redis_server import RedisServer, free_port


def gunicorn_settings(env: dict) -> dict:
    """What the request group's settings (:data:`GUNICORN_COMMAND`'s ``-c``) are under
    ``env`` (they read everything from there)."""
    # Its file run afresh, as gunicorn does (run_module would warn when an earlier
    # import left the module in sys.modules).
    path = importlib.util.find_spec(GUNICORN_COMMAND[2].removeprefix("python:")).origin
    with mock.patch.dict(os.environ, env, clear=True):
        namespace = runpy.run_path(path)
    worker_class = namespace.get("worker_class") or "sync"
    return {
        "workers": namespace.get("workers", 1),
        "worker_class": worker_class,
        "threads": namespace.get("threads", 1),
        "worker_connections": namespace.get("worker_connections", 1000),
        "keepalive": namespace.get("keepalive", 2),
        "timeout": namespace.get("timeout", 30),
    }


def describe_workers(settings: dict) -> str:
    kind = settings["worker_class"].rsplit(".", 1)[-1]
    text = f"{settings['workers']} × {kind}"
    if "thread" in kind:
        text += f", {settings['threads']} threads each"
    elif any(name in kind for name in ("gevent", "eventlet", "tornado", "uvicorn")):
        text += f", up to {settings['worker_connections']} connections each"
    return text


#: The limit of ``--rate-limit``: the limiter's work on every request, never a 429.
RATE_LIMIT = "1000000000 per minute"


class Service:
    """Its own redis-server and gunicorn (production config) on free ports."""

    def __init__(self, workdir: Path, persistence: str, *, app: str = GUNICORN_COMMAND[-1],
                 ready_path: str = "/healthz", name: str = "service", rate_limit: bool = False,
                 redis_server=None, env: dict[str, str] | None = None):
        """``redis_server``: the Redis to start and serve from (anything with ``start``,
        ``stop`` and ``url``, a :class:`~devtools.redis_server.LocalCluster` say); by
        default a redis-server of its own with ``persistence``.  ``env``: settings of
        this service's processes over this process's environment, which stays as it is
        (an app made later in this process reads its own)."""
        self.persistence = persistence
        self.workdir = workdir / f"{name}-{persistence}"
        self.workdir.mkdir(parents=True)
        always = persistence == "always"
        self.redis = redis_server or RedisServer(
            self.workdir / "redis", appendonly=always,
            appendfsync="always" if always else "everysec")
        self.port = free_port(HOST)
        self.base = f"http://{HOST}:{self.port}"
        metrics_dir = self.workdir / "prometheus"
        metrics_dir.mkdir()
        self.env = dict(os.environ, **(env or {}))
        self.env.update(HOST=HOST, PORT=str(self.port), REDIS_URL=self.redis.url,
                        RATELIMIT_ENABLED="false", PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
        if rate_limit:  # every request counted in Redis, under a limit none reaches
            self.env.update(RATELIMIT_ENABLED="true", RATELIMIT_DEFAULT=RATE_LIMIT)
        self.settings = gunicorn_settings(self.env)
        self.gunicorn = Gunicorn(self.env, app=app, output=self.workdir / "gunicorn.log",
                                 ready_path=ready_path, workers=self.settings["workers"])

    def __enter__(self) -> Service:
        self.redis.start()
        try:
            self.gunicorn.start()
            self.gunicorn.wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc_info) -> None:
        self.gunicorn.stop()
        self.redis.stop()

    def log(self) -> str:
        return self.gunicorn.log()

    def cpu(self) -> tuple[float, float]:
        """CPU seconds used so far by gunicorn (master and workers) and by Redis."""
        master = self.gunicorn.pid
        return cpu_seconds([master, *children(master)]), cpu_seconds([self.redis.pid])

    def redis_client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis.url)
