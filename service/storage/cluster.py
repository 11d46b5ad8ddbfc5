"""Redis Cluster mode: ``REDIS_URL=redis+cluster://host:port[,host:port...]``.

The store talks to a cluster through redis-py's :class:`~redis.cluster.RedisCluster`,
which keeps the map of slots to masters (:attr:`RedisCluster.nodes_manager`), and for
the commands of the request path through :class:`ClusterConnections`: one connection
per thread and master, on which the commands of one game (they share its slot) go
together in one round trip.  That is what a write needs to be confirmed by ``WAIT``:
Redis counts the replicas that reached the last write *of the connection* that asks.

Redirections are followed, never shown to a client: ``MOVED`` (the slot has another
master now: after a resharding or a failover) updates the map and sends again; ``ASK``
(the slot is being migrated and a key is on the target already) sends again to the
target after ``ASKING``; ``TRYAGAIN`` (a command of several keys while they are split
between the two nodes of a migration) and ``CLUSTERDOWN`` wait a little and send again.
None of these ran the command, so sending again is safe even for a write.  A lost
connection is never sent again (the write may have run): it raises, and the map is
read again from the cluster so that the next request finds the master that took over.

Keys sharded by slot (the statistics counters, the players' pending projections) are
:mod:`.slots`.
"""

from __future__ import annotations

import threading
import time
import weakref
from urllib.parse import unquote, urlsplit

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)

from service.storage.connections import read_replies, ready, wait_of

SCHEME = "redis+cluster"
#: Redirections (MOVED, ASK) and waits (TRYAGAIN, CLUSTERDOWN) one command may go
#: through before it gives up (the request answers 503).
MAX_REDIRECTIONS = 16
#: Seconds between two attempts after TRYAGAIN or CLUSTERDOWN, and the most a command
#: waits that way in all before it gives up (a migration moves a slot in milliseconds;
#: a failover takes seconds, which the client had better spend waiting on a 503).
RETRY_PAUSE = 0.02
RETRY_BUDGET = 0.5
#: Seconds between two readings of the slot map after a lost connection.
REFRESH_PAUSE = 0.2
#: Seconds during which a node that could not be reached is not tried again: the
#: requests for its slots answer 503 at once (and read the slot map again, so they go
#: to the replica that takes over as soon as the cluster names it), and one of them
#: probes the node after that.  A node that died costs a process one timeout a pause,
#: not one per request.
PROBE_PAUSE = 1.0


class NodeUnreachable(redis.ConnectionError):
    """A node of the cluster could not be connected to: nothing was sent to it."""


def is_cluster_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() == SCHEME


def parse_cluster_url(url: str) -> tuple[list[tuple[str, int]], dict]:
    """``redis+cluster://[user:password@]host:port[,host:port...]`` → the startup nodes
    and the credentials (the scheme of the ``limits`` library)."""
    parts = urlsplit(url)
    if parts.scheme.lower() != SCHEME:
        raise ValueError(f"not a {SCHEME}:// URL: {url!r}")
    netloc = parts.netloc
    credentials: dict = {}
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        user, _, password = userinfo.partition(":")
        if user:
            credentials["username"] = unquote(user)
        if password:
            credentials["password"] = unquote(password)
    nodes = []
    for location in netloc.split(","):
        host, _, port = location.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{SCHEME}:// URL: {location!r} is not host:port")
        nodes.append((host.strip("[]"), int(port)))
    return nodes, credentials


def cluster_client(url: str, options: dict) -> RedisCluster:
    """A RedisCluster for ``url`` that never sends a command twice after a lost
    connection (``options`` are
    :func:`~service.storage.backend.client_options`); it reads the slot map
    from the cluster now (raises a RedisError if no node answers)."""
    nodes, credentials = parse_cluster_url(url)
    options = {key: value for key, value in options.items()
               if key != "health_check_interval"}
    return RedisCluster(startup_nodes=[ClusterNode(host, port) for host, port in nodes],
                        require_full_coverage=False, **credentials, **options)


class ClusterConnections:
    """One connection per thread and master for the commands of the request path (the
    :class:`~service.storage.connections.Connections` of the cluster mode, the
    counterpart of :class:`~service.storage.connections.ThreadConnections`).

    :meth:`run` sends commands that all concern one slot, together, to the master of
    that slot, following redirections (see the module docstring); replies that are
    errors come back as exception objects, in place."""

    def __init__(self, url: str, options: dict):
        self._url, self.options = url, options
        self._client: RedisCluster | None = None
        self._local = threading.local()
        self._all: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()
        self._refreshed = 0.0
        #: Node name: when a connection to it last failed (cleared by a reply).
        self._down: dict[str, float] = {}
        #: Node name: when it last answered.
        self._answered: dict[str, float] = {}

    @property
    def client(self) -> RedisCluster:
        """The RedisCluster, made on first use: the service starts (and answers 503)
        while no node of the cluster answers yet."""
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    self._client = cluster_client(self._url, self.options)
                client = self._client
        return client

    def _connection(self, node: ClusterNode) -> redis.Connection:
        """This thread's connection to ``node``, connected (raises NodeUnreachable if it
        cannot be: nothing was sent)."""
        failed_at = self._down.get(node.name)
        if failed_at is not None:
            now = time.monotonic()
            if now - failed_at < PROBE_PAUSE:
                self.refresh(node)
                raise NodeUnreachable(f"{node.name} failed {now - failed_at:.2f} s ago")
            self._down[node.name] = now  # this request probes it; the others wait
        connections = self._local.__dict__.setdefault("by_node", {})
        connection = connections.get(node.name)
        try:
            if connection is None:
                pool = self.client.get_redis_connection(node).connection_pool
                connection = pool.connection_class(**pool.connection_kwargs)
                connections[node.name] = connection
                with self._lock:
                    self._all.add(connection)
                connection.connect()
                return connection
            return ready(connection)
        except (redis.ConnectionError, redis.TimeoutError, OSError) as error:
            self.failed(node)
            raise NodeUnreachable(f"{node.name}: {error}") from error

    def failed(self, node: ClusterNode) -> None:
        """``node`` could not be reached: it is not tried again for PROBE_PAUSE
        seconds, and the slot map is read again."""
        self._down[node.name] = time.monotonic()
        self.refresh(node)

    def refresh(self, failed: ClusterNode | None = None) -> None:
        """Read the slot map again, as redis-py's RedisCluster does after a connection
        error or a redirection: the node that ``failed`` is asked last.  A master that
        was failed over is then replaced by the replica that took its slots.  At most
        every REFRESH_PAUSE seconds, by one thread at a time; the others go on with the
        map they have."""
        if time.monotonic() - self._refreshed < REFRESH_PAUSE:
            return
        if not self._refreshing.acquire(blocking=False):
            return
        try:
            self._refreshed = time.monotonic()
            manager = self.client.nodes_manager
            if failed is None:
                manager.initialize()
            else:
                manager.move_node_to_end_of_cached_nodes(failed.name)
                manager.initialize(last_failed_node_name=failed.name)
        except (redis.RedisError, RedisClusterException, OSError):
            pass  # no node answered: the next failure tries again
        finally:
            self._refreshing.release()

    def send(self, node: ClusterNode, commands: list[tuple]) -> list:
        """Send ``commands`` to ``node`` in one round trip; their replies, errors as
        exception objects (redirections included)."""
        connection = self._connection(node)
        return self._exchange(node, connection, connection.pack_commands(commands),
                              len(commands), wait_of(commands))

    def send_packed(self, node: ClusterNode, packed, count: int) -> list:
        """:meth:`send` for ``count`` commands packed already."""
        return self._exchange(node, self._connection(node), packed, count)

    def send_each(self, batches: list[tuple[ClusterNode, bytes, int]], wait_ms: int = 0
                  ) -> list:
        """Each node's ``count`` commands, packed already, sent to it, every node's
        before any reply is read (the nodes run them at once): per node its replies (as
        :meth:`send` gives them), or the exception that its connection raised
        (``wait_ms``: those of the ``WAIT`` that ends each node's commands, if one
        does)."""
        sent: list = []
        for node, packed, count in batches:
            try:
                connection = self._connection(node)
            except NodeUnreachable as error:
                sent.append(error)
                continue
            try:
                connection.send_packed_command([packed])
            except (redis.ConnectionError, redis.TimeoutError, OSError) as error:
                connection.disconnect()
                self.failed(node)
                sent.append(error)
                continue
            sent.append((node, connection, count))
        found: list = []
        for item in sent:
            if isinstance(item, BaseException):
                found.append(item)
                continue
            node, connection, count = item
            try:
                found.append(self._exchange(node, connection, None, count, wait_ms))
            except (redis.ConnectionError, redis.TimeoutError, OSError) as error:
                found.append(error)
        return found

    def _exchange(self, node: ClusterNode, connection: redis.Connection, packed,
                  count: int, wait_ms: int = 0) -> list:
        """``packed`` sent (None: sent already), then ``count`` replies read (as
        :func:`~.connections.read_replies` reads them); a connection that failed is
        dropped and its node counted failed."""
        try:
            if packed is not None:
                connection.send_packed_command(packed)
            replies = read_replies(connection, count, wait_ms)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            connection.disconnect()
            self.failed(node)
            raise
        except BaseException:
            connection.disconnect()  # replies may be left unread: never reuse it
            raise
        self._answered[node.name] = time.monotonic()
        self._down.pop(node.name, None)
        return replies

    def run(self, key: str | bytes, commands: list[tuple]) -> list:
        """Send ``commands`` (they concern ``key``'s slot only) in one round trip to the
        slot's master; their replies, errors as exception objects."""
        slot = key_slot(key.encode() if isinstance(key, str) else key)
        asking: ClusterNode | None = None
        waited = 0.0
        unreachable_retried = False
        # Each wait may come after an ASK (to the target, which answers TRYAGAIN).
        for _attempt in range(MAX_REDIRECTIONS + 2 * round(RETRY_BUDGET / RETRY_PAUSE)):
            try:
                node = asking or self.client.nodes_manager.get_node_from_slot(slot)
            except SlotNotCoveredError:
                self.refresh()
                raise
            sent = [("ASKING",), *commands] if asking is not None else commands
            try:
                replies = self.send(node, sent)
            except NodeUnreachable:
                # Nothing was sent.  If the slot map read again names another master
                # (the replica that took over), send there; else the request fails.
                if asking is None and not unreachable_retried and \
                        self._master_of(slot) not in (None, node):
                    unreachable_retried = True
                    continue
                raise
            if asking is not None:
                replies = replies[1:]
            asking = None
            redirect = next((reply for reply in replies if isinstance(
                reply, (AskError, TryAgainError, ClusterDownError))), None)
            if redirect is None:
                return replies
            if isinstance(redirect, MovedError):
                self.client.nodes_manager.move_slot(redirect)
            elif isinstance(redirect, AskError):
                asking = (self.client.nodes_manager.get_node(redirect.host, redirect.port)
                          or ClusterNode(redirect.host, redirect.port))
            else:  # TRYAGAIN: a migration is under way; CLUSTERDOWN: a failover
                if isinstance(redirect, ClusterDownError):
                    self.refresh()
                if waited >= RETRY_BUDGET:
                    break
                time.sleep(RETRY_PAUSE)
                waited += RETRY_PAUSE
        raise redirect

    def _master_of(self, slot: int) -> ClusterNode | None:
        try:
            return self.client.nodes_manager.get_node_from_slot(slot)
        except SlotNotCoveredError:
            return None

    def ping(self) -> None:
        """Raise unless some master of the slot map answers PING: the process can reach
        the cluster.  Masters that never failed (or least recently) are asked first, the
        one that answered last first among them, so a dead node costs nothing while
        another answers; a shard failing over is no reason to stop serving the others."""
        masters = self.client.nodes_manager.get_nodes_by_server_type("primary")
        masters.sort(key=lambda node: (self._down.get(node.name, 0.0),
                                       -self._answered.get(node.name, 0.0)))
        error: Exception | None = None
        for node in masters:
            try:
                reply = self.send(node, [("PING",)])[0]
            except (redis.RedisError, OSError) as failure:
                error = failure
                continue
            if not isinstance(reply, Exception):
                return
            error = reply
        raise error or ClusterDownError("the slot map names no master")

    def execute(self, *args):
        """One command (its key: the first, or the first of an EVAL's keys)."""
        key = args[3] if args[0] in ("EVAL", "EVALSHA") else args[1]
        reply = self.run(key, [args])[0]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def transaction(self, *commands) -> list:
        """``commands`` (of the first one's key's slot) in one MULTI/EXEC, one round
        trip: their replies, in order."""
        replies = self.run(commands[0][1], [("MULTI",), *commands, ("EXEC",)])
        failed = next((reply for reply in replies if isinstance(reply, Exception)), None)
        if failed is not None:
            raise failed
        return replies[-1]

    def close(self) -> None:
        with self._lock:
            connections = list(self._all)
            client, self._client = self._client, None
        for connection in connections:
            connection.disconnect()
        if client is not None:
            client.close()
