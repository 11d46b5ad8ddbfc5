"""The Redis of the service, chosen once from ``REDIS_URL``: one Redis
(:class:`SingleRedis`) or a Redis Cluster (:class:`ClusterRedis`,
``redis+cluster://host:port[,host:port...]``), behind one interface, :class:`Backend`.
:func:`open_backend` makes the one the URL names; nothing else of the service looks at
the URL's scheme.

A backend gives the stores what differs between the two modes: the connections of the
request path (:class:`~.connections.Connections`), the redis-py client of the commands
off it, ``ping``, the statistics hash of a game's slot and the read of every
statistics counter (and of every set sharded the same way: the pending outboxes), the
number of replicas a write waits for by default, the connections of the live feed's
subscription, and ``close``.

:class:`Script` runs a Lua script by its SHA1 (``EVALSHA``) and sends its source
(``EVAL``) only when Redis answers that it does not have it (a new or restarted Redis:
nothing ran), alone or followed by a ``WAIT`` on the same connection.  Every script of
the service goes through it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import redis
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError
from redis.retry import Retry

from service.storage import cluster, slots
from service.storage.connections import Connections, request_connections

__all__ = ["Backend", "ClusterRedis", "Script", "SingleRedis", "client_options",
           "open_backend"]


def client_options(config) -> dict:
    """redis-py options (from the settings ``REDIS_SOCKET_TIMEOUT``,
    ``REDIS_CONNECT_TIMEOUT`` and ``REDIS_HEALTH_CHECK_INTERVAL``) that make a dead or
    hung Redis answer within the socket timeouts, and never send a command twice: a
    connection that breaks after Redis ran a write but before its reply arrived must not
    run the write again (the compare-and-set would fail, and the write loop would apply
    the move a second time; a create would discard the game it just stored).  A
    connection that died with a restarted Redis is reconnected before its next command
    (redis-py sees the closed socket), so no retry is needed for that."""
    return {
        "socket_timeout": config["REDIS_SOCKET_TIMEOUT"],
        "socket_connect_timeout": config["REDIS_CONNECT_TIMEOUT"],
        "health_check_interval": config["REDIS_HEALTH_CHECK_INTERVAL"],
        "retry": Retry(NoBackoff(), 0),
    }


class Script:
    """A Lua script of the service, run over the connections of the request path."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str):
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def run(self, connections: Connections, keys: Sequence, args: Sequence):
        """The script's reply (an error reply raises)."""
        try:
            return connections.execute("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:  # a new or restarted Redis: nothing ran, send the script
            return connections.execute("EVAL", self.source, len(keys), *keys, *args)

    def run_then(self, connections: Connections, keys: Sequence, args: Sequence,
                 then: tuple) -> list:
        """The script, then the command ``then`` (a ``WAIT``), on one connection in one
        round trip: both replies, errors as exception objects."""
        replies = connections.run(keys[0], [("EVALSHA", self.sha, len(keys), *keys, *args),
                                            then])
        if isinstance(replies[0], NoScriptError):  # nothing ran: send the script itself
            replies = connections.run(keys[0], [("EVAL", self.source, len(keys), *keys,
                                                 *args), then])
        return replies


@dataclass(frozen=True, slots=True)
class Call:
    """A call of ``script`` on ``keys`` (one slot's) with ``args``, to be sent with
    others (:meth:`service.storage.player_store.PlayerStore.run_calls`)."""

    script: Script
    keys: list
    args: tuple


class Backend(Protocol):
    """What the stores ask of the Redis they use.  Failures raise redis-py's exceptions
    (the repository turns them into ``StorageUnavailable``)."""

    #: The connections of the request path.
    connections: Connections
    #: The replicas a write waits for unless ``REDIS_WAIT_REPLICAS`` says otherwise.
    default_wait_replicas: int

    @property
    def client(self) -> redis.Redis:
        """The redis-py client of the commands off the request path."""

    def ping(self) -> None:
        """Raise unless this process can reach its Redis."""

    def stats_key(self, prefix: str, key_in_slot: str) -> str:
        """The statistics hash that counts the game of ``key_in_slot``."""

    def read_stats(self, prefix: str) -> dict[bytes, int]:
        """Every statistics counter, summed over the hashes of :meth:`stats_key`."""

    def read_members(self, prefix: str) -> list[bytes]:
        """The members of every set sharded like the statistics (:meth:`stats_key`)."""

    def subscriber(self) -> Callable[[], redis.Redis]:
        """What makes the connection of a pub/sub subscription (a new one each call:
        after a loss, the next call may go to another node)."""

    def close(self) -> None:
        """Disconnect every connection."""


def _subscription_options(options: dict) -> dict:
    # A subscription waits on its socket between messages: no read timeout (a PING tells
    # a silent node).  Nor does it reconnect by itself (the options' Retry of none): a
    # lost connection is the subscription's to handle, on the next node.
    return dict(options, socket_timeout=None)


class SingleRedis:
    """One Redis: every key on it, the statistics in one hash, writes wait for no
    replica by default."""

    default_wait_replicas = 0

    def __init__(self, url: str, options: dict):
        self.url, self.options = url, options
        self.client = redis.Redis.from_url(url, **options)
        self.connections = request_connections(url, options)

    def ping(self) -> None:
        self.client.ping()

    def stats_key(self, prefix: str, key_in_slot: str) -> str:
        return prefix

    def read_stats(self, prefix: str) -> dict[bytes, int]:
        return {field: int(value) for field, value in self.client.hgetall(prefix).items()}

    def read_members(self, prefix: str) -> list[bytes]:
        return list(self.client.smembers(prefix))

    def subscriber(self) -> Callable[[], redis.Redis]:
        url, options = self.url, _subscription_options(self.options)
        return lambda: redis.Redis.from_url(url, **options)

    def close(self) -> None:
        self.client.close()
        self.connections.close()


class ClusterRedis:
    """A Redis Cluster (:mod:`.cluster`): the request path's commands go to the master of
    their slot, the statistics are one hash per slot, and a write waits for one replica
    by default.  The RedisCluster is made on first use: the service starts (and answers
    503) while no node answers yet."""

    default_wait_replicas = 1

    def __init__(self, url: str, options: dict):
        self.url = url
        self.connections = self._cluster = cluster.ClusterConnections(url, options)
        self._nodes, credentials = cluster.parse_cluster_url(url)
        self._subscribe_options = _subscription_options(dict(options, **credentials))

    @property
    def client(self) -> redis.RedisCluster:
        return self._cluster.client

    def ping(self) -> None:
        """Raise unless some master answers: a shard failing over stops only its own
        games, not the process (:meth:`.cluster.ClusterConnections.ping`)."""
        self._cluster.ping()

    def stats_key(self, prefix: str, key_in_slot: str) -> str:
        return slots.stats_key(prefix, key_in_slot)

    def read_stats(self, prefix: str) -> dict[bytes, int]:
        return slots.read_stats(self._cluster, prefix)

    def read_members(self, prefix: str) -> list[bytes]:
        return slots.read_members(self._cluster, prefix)

    def subscriber(self) -> Callable[[], redis.Redis]:
        """The listed nodes in turn, the next one after each failure: ``PUBLISH``
        reaches every node of a cluster, so any node carries every game's messages,
        and a node that is down only moves the subscription."""
        nodes, options = self._nodes, self._subscribe_options
        turn = 0

        def connect() -> redis.Redis:
            nonlocal turn
            host, port = nodes[turn % len(nodes)]
            turn += 1
            return redis.Redis(host=host, port=port, **options)

        return connect

    def close(self) -> None:
        self._cluster.close()


def open_backend(url: str, options: dict) -> Backend:
    """The backend of the Redis at ``url`` (``options``: :func:`client_options`)."""
    if cluster.is_cluster_url(url):
        return ClusterRedis(url, options)
    return SingleRedis(url, options)
