"""The service on a local Redis Cluster (:class:`devtools.redis_server.LocalCluster`: 3
masters, a replica each, AOF with ``appendfsync always``) with gunicorn started as
:class:`bench.http.service.Service` starts it: the same server code, ``REDIS_URL`` the
cluster's (writes confirmed by a replica, ``REDIS_WAIT_REPLICAS`` 1 by default there)."""

from __future__ import annotations

import os
from pathlib import Path

import redis
from redis.crc import key_slot

from bench.http.constants import HOST
from bench.http.service import gunicorn_settings
from devtools.launch import Gunicorn
from devtools.processes import children, cpu_seconds
from devtools.redis_server import LocalCluster, free_port


class ClusterService:
    """Its own Redis Cluster and gunicorn (production config) on free ports."""

    persistence = "always"

    def __init__(self, workdir: Path):
        self.workdir = workdir / "service-cluster"
        self.workdir.mkdir(parents=True)
        self.nodes = LocalCluster(self.workdir / "cluster", appendfsync="always")
        self.port = free_port(HOST)
        self.base = f"http://{HOST}:{self.port}"
        metrics_dir = self.workdir / "prometheus"
        metrics_dir.mkdir()
        self.env = dict(os.environ, HOST=HOST, PORT=str(self.port),
                        REDIS_URL=self.nodes.url, RATELIMIT_ENABLED="false",
                        PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
        self.settings = gunicorn_settings(self.env)
        self.gunicorn = Gunicorn(self.env, output=self.workdir / "gunicorn.log",
                                 workers=self.settings["workers"])

    def __enter__(self) -> ClusterService:
        self.nodes.start()
        try:
            self.gunicorn.start()
            self.gunicorn.wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_exc_info) -> None:
        self.gunicorn.stop()
        self.nodes.stop()

    @property
    def url(self) -> str:
        return self.nodes.url

    def log(self) -> str:
        return self.gunicorn.log()

    def cpu(self) -> tuple[float, float]:
        """CPU seconds used so far by gunicorn and by every node of the cluster."""
        master = self.gunicorn.pid
        return (cpu_seconds([master, *children(master)]),
                cpu_seconds([node.pid for node in self.nodes.nodes if node.running]))

    def master_of(self, key: str) -> redis.Redis:
        """A client of the master that holds ``key``'s slot."""
        node = self.nodes.node_of_slot(key_slot(key.encode()))
        return redis.Redis(host=node.host, port=node.port)
