"""The service on a local Redis Cluster (:class:`devtools.redis_server.LocalCluster`: 3
masters, a replica each, AOF with ``appendfsync always``) with gunicorn started as
:class:`bench.http.service.Service` starts it: the same server code, ``REDIS_URL`` the
cluster's (writes confirmed by a replica, ``REDIS_WAIT_REPLICAS`` 1 by default there)."""

from __future__ import annotations

from pathlib import Path

import redis
from redis.crc import key_slot

from bench.http.service import Service
from devtools.processes import children, cpu_seconds
from devtools.redis_server import LocalCluster


class ClusterService(Service):
    """Its own Redis Cluster and gunicorn (production config) on free ports."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None):
        self.nodes = LocalCluster(workdir / "service-cluster-nodes", appendfsync="always")
        super().__init__(workdir, "always", name="service-cluster", redis_server=self.nodes,
                         env=env)

    @property
    def url(self) -> str:
        return self.nodes.url

    def cpu(self) -> tuple[float, float]:
        """CPU seconds used so far by gunicorn and by every node of the cluster."""
        master = self.gunicorn.pid
        return (cpu_seconds([master, *children(master)]),
                cpu_seconds([node.pid for node in self.nodes.nodes if node.running]))

    def master_of(self, key: str) -> redis.Redis:
        """A client of the master that holds ``key``'s slot."""
        node = self.nodes.node_of_slot(key_slot(key.encode()))
        return redis.Redis(host=node.host, port=node.port)
