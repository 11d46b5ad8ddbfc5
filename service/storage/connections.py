"""The connections of the request path: how a read or a write's script reaches Redis.

:class:`Connections` is what the game repository (:mod:`.game_store`) asks of them; three
classes give it:

- :class:`ThreadConnections`: one connection per thread, on one Redis (a gthread process
  of the request group);
- :class:`PooledConnections`: a bounded pool, on one Redis, where gevent patches the
  process (the events group);
- :class:`service.storage.cluster.ClusterConnections`: one connection per thread and
  master, on a Redis Cluster.

:func:`request_connections` picks the first or the second for one Redis; the backend
(:mod:`.backend`) holds the connections of its mode.  The commands off the request path
go over redis-py's own pool (:attr:`Backend.client
<service.storage.backend.Backend.client>`).
"""

from __future__ import annotations

import functools
import threading
import weakref
from typing import Protocol

import redis
from redis.exceptions import ResponseError


class Connections(Protocol):
    """The commands of the request path, each sent in one round trip.  Failures raise
    redis-py's exceptions (the repository turns them into ``StorageUnavailable``)."""

    def execute(self, *args):
        """One command (``"HMGET", key, ...``): its reply; an error reply raises."""

    def transaction(self, *commands: tuple) -> list:
        """``commands`` (all of one hash slot) in one MULTI/EXEC: their replies, in
        order."""

    def run(self, key: str, commands: list[tuple]) -> list:
        """``commands`` (all of ``key``'s hash slot) sent together on one connection:
        their replies, errors as exception objects, in place.  What a ``WAIT`` needs:
        it counts the replicas that reached the last write of its own connection."""

    def close(self) -> None:
        """Disconnect every connection."""


def ready(connection: redis.Connection) -> redis.Connection:
    """``connection``, checked before a command as redis-py's pool checks it: one that
    was dropped, has a reply left unread or was closed by the server (a restarted Redis)
    is connected again (once: a node that does not answer costs one connect timeout)."""
    if not connection.is_connected:
        connection.connect()
        return connection
    try:
        fine = not connection.can_read()
    except (redis.ConnectionError, redis.TimeoutError, OSError):
        fine = False
    if not fine:
        connection.disconnect()
        connection.connect()
    return connection


def read_replies(connection: redis.Connection, count: int, wait_ms: int = 0) -> list:
    """The next ``count`` replies on ``connection``; a reply that is an error comes back
    as its exception object, in place.  ``wait_ms``: the round trip ends with a ``WAIT``
    of that timeout, whose reply may take that much longer than the socket's timeout
    (``REDIS_SOCKET_TIMEOUT``): the replicas' confirmation has its own time
    (``REDIS_WAIT_TIMEOUT_MS``), and a write is refused for want of it, never for the
    socket's.  The replies before it come as soon as their commands ran (a stalled
    Redis is still found out within the socket's timeout)."""
    waits = wait_ms > 0 and connection.socket_timeout is not None
    replies = []
    for number in range(count):
        try:
            if waits and number == count - 1:
                replies.append(connection.read_response(
                    timeout=connection.socket_timeout + wait_ms / 1000))
            else:
                replies.append(connection.read_response())
        except ResponseError as error:
            replies.append(error)
    return replies


def wait_of(commands: list[tuple]) -> int:
    """The timeout (ms) of the ``WAIT`` that ends ``commands``, 0 without one."""
    last = commands[-1] if commands else ()
    return int(last[2]) if last and last[0] == "WAIT" else 0


def round_trip(connection, commands: list[tuple]) -> list:
    """``commands`` sent together on ``connection`` (one round trip): their replies,
    errors as exception objects.  A connection that failed midway is dropped: replies
    may be left unread on it."""
    try:
        connection.send_packed_command(connection.pack_commands(commands))
        return read_replies(connection, len(commands), wait_of(commands))
    except BaseException:
        connection.disconnect()
        raise


def packed_round_trip(connection, packed: bytes, count: int, wait_ms: int = 0) -> list:
    """:func:`round_trip` for ``count`` commands packed already (``wait_ms``: those of
    the ``WAIT`` that ends them, if one does)."""
    try:
        connection.send_packed_command([packed])
        return read_replies(connection, count, wait_ms)
    except BaseException:
        connection.disconnect()
        raise


class ThreadConnections:
    """One redis-py connection per thread for the commands of the request path.

    redis-py's pooled client spends more CPU per command on taking a connection from the
    pool and giving it back (a lock, a readiness poll, bookkeeping) than on the command
    itself (docs/performance.md has the figures).  A gthread process keeps its
    threads, so each thread keeps a
    connection of its own instead and sends on it directly, with the same options (the
    socket timeouts, no retry).  Like the pool, it checks before each command that the
    connection has nothing unread and was not closed by the server (a restarted Redis),
    and reconnects if so; a connection that failed is dropped, the next command
    reconnects."""

    def __init__(self, url: str, options: dict):
        pool = redis.ConnectionPool.from_url(url, **options)
        self._make = functools.partial(pool.connection_class, **pool.connection_kwargs)
        self._local = threading.local()
        self._all: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def _connection(self):
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._make()
            with self._lock:
                self._all.add(connection)
            connection.connect()
            return connection
        return ready(connection)

    def execute(self, *args):
        connection = self._connection()
        try:
            connection.send_command(*args)
            return connection.read_response()
        except redis.ResponseError:
            raise  # the connection is fine: Redis answered with an error
        except BaseException:
            connection.disconnect()
            raise

    def transaction(self, *commands: tuple) -> list:
        """``commands`` in one MULTI/EXEC, sent together (one round trip): their
        replies, in order."""
        connection = self._connection()
        try:
            connection.send_packed_command(
                connection.pack_commands([("MULTI",), *commands, ("EXEC",)]))
            replies = [connection.read_response() for _ in range(len(commands) + 2)]
        except BaseException:
            connection.disconnect()  # replies may be left unread: never reuse it
            raise
        return replies[-1]

    def run(self, key: str, commands: list[tuple]) -> list:
        """``commands`` sent together on this thread's connection (one round trip):
        their replies, errors as exception objects (``key``: one Redis has every
        slot)."""
        return round_trip(self._connection(), commands)

    def run_packed(self, key: str, packed: bytes, count: int, wait_ms: int = 0) -> list:
        """:meth:`run` for ``count`` commands packed already (``wait_ms``: those of the
        ``WAIT`` that ends them, if one does)."""
        return packed_round_trip(self._connection(), packed, count, wait_ms)

    def close(self) -> None:
        with self._lock:
            connections = list(self._all)
        for connection in connections:
            connection.disconnect()


class PooledConnections:
    """The commands of the request path over a bounded pool, for a process patched by
    gevent (the events group): there a "thread" is a greenlet, one per request
    and per open stream, and a connection each would mean one per stream."""

    def __init__(self, url: str, options: dict, size: int = 512):
        self._pool = redis.BlockingConnectionPool.from_url(
            url, max_connections=size, timeout=options.get("socket_timeout"), **options)

    def execute(self, *args):
        connection = self._pool.get_connection()
        try:
            connection.send_command(*args)
            return connection.read_response()
        except redis.ResponseError:
            raise
        except BaseException:
            connection.disconnect()
            raise
        finally:
            self._pool.release(connection)

    def transaction(self, *commands: tuple) -> list:
        connection = self._pool.get_connection()
        try:
            connection.send_packed_command(
                connection.pack_commands([("MULTI",), *commands, ("EXEC",)]))
            replies = [connection.read_response() for _ in range(len(commands) + 2)]
        except BaseException:
            connection.disconnect()
            raise
        finally:
            self._pool.release(connection)
        return replies[-1]

    def run(self, key: str, commands: list[tuple]) -> list:
        """``commands`` sent together on one connection of the pool (one round trip):
        their replies, errors as exception objects (``key``: one Redis has every
        slot)."""
        connection = self._pool.get_connection()
        try:
            return round_trip(connection, commands)
        finally:
            self._pool.release(connection)

    def run_packed(self, key: str, packed: bytes, count: int, wait_ms: int = 0) -> list:
        """:meth:`run` for ``count`` commands packed already (``wait_ms``: those of the
        ``WAIT`` that ends them, if one does)."""
        connection = self._pool.get_connection()
        try:
            return packed_round_trip(connection, packed, count, wait_ms)
        finally:
            self._pool.release(connection)

    def close(self) -> None:
        self._pool.disconnect()


def request_connections(url: str, options: dict) -> Connections:
    """Per-thread connections to the Redis at ``url``, or a pool where threads are
    gevent's greenlets."""
    try:
        from gevent import monkey
    except ImportError:
        return ThreadConnections(url, options)
    if monkey.is_module_patched("threading"):
        return PooledConnections(url, options)
    return ThreadConnections(url, options)
