"""The rate limiter's counters in Redis, one round trip a request.

flask-limiter counts a request with the ``limits`` library's fixed window: an ``incr``
(a Lua ``INCRBY``, with an ``EXPIRE`` when the window opens), then, for the
``RateLimit-*`` headers, a ``GET`` of the count and a ``TTL`` of the window: three round
trips to Redis on every request, over redis-py's pooled client.  The storages here are
``limits``' own Redis storages (one Redis, Redis Cluster) whose ``incr`` runs
:data:`~service.storage.scripts.RATE_COUNT`, which answers the window's time to live
with the count; the ``get`` and ``get_expiry`` that follow on the same thread for the
same key answer what it read, without asking Redis again.  When the counters live in
the games' Redis (the default), the script goes over the backend's own connections of
the request path (:mod:`.connections`), like a game's read.

What the headers show is then the count this request made, not a later one: another
client's request that lands between the two no longer shows in this answer's
``RateLimit-Remaining`` (it shows in the next one).  The counting itself, and the 429,
are unchanged.

The storages register their URL schemes with ``limits`` (its documented way to add a
storage): :func:`storage_uri` turns a Redis URL into the matching one.
"""

from __future__ import annotations

import threading
import time

from limits.storage import RedisClusterStorage, RedisStorage

from service.storage.backend import Script
from service.storage.connections import Connections
from service.storage.scripts import RATE_COUNT

__all__ = ["storage_uri"]

_PREFIX = "patience+"
_RATE_COUNT = Script(RATE_COUNT)


class _OneTrip:
    """What the two storages add to ``limits``' own (a mixin before them).
    ``connections``: the request path's connections to the same Redis, if any."""

    def __init__(self, uri: str, *args, connections: Connections | None = None, **kwargs):
        super().__init__(uri.removeprefix(_PREFIX), *args, **kwargs)
        self._connections = connections
        self._last = threading.local()  # per thread (per greenlet where gevent patches)

    def initialize_storage(self, uri: str) -> None:
        super().initialize_storage(uri)
        self._count_script = self.get_connection().register_script(RATE_COUNT)

    def _count(self, key: str, expiry: int, amount: int) -> tuple[int, int]:
        if self._connections is None:
            return self._count_script([key], [expiry, amount])
        return _RATE_COUNT.run(self._connections, (key,), (expiry, amount))

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        count, ttl_ms = self._count(self.prefixed_key(key), expiry, amount)
        count = int(count)
        # When the window closes, as limits' get_expiry reads it (no TTL, -1, as 0).
        reset = max(int(ttl_ms), 0) / 1000 + time.time()
        self._last.seen = (key, count, reset)
        return count

    def _seen(self, key: str):
        seen = getattr(self._last, "seen", None)
        return seen if seen is not None and seen[0] == key else None

    def get(self, key: str) -> int:
        seen = self._seen(key)
        return seen[1] if seen is not None else super().get(key)

    def get_expiry(self, key: str) -> float:
        """The last of the three calls of a request: what ``incr`` read is used up."""
        seen = self._seen(key)
        if seen is None:
            return super().get_expiry(key)
        self._last.seen = None
        return seen[2]


class OneTripRedisStorage(_OneTrip, RedisStorage):
    STORAGE_SCHEME = [f"{_PREFIX}redis", f"{_PREFIX}rediss", f"{_PREFIX}redis+unix"]


class OneTripRedisClusterStorage(_OneTrip, RedisClusterStorage):
    STORAGE_SCHEME = [f"{_PREFIX}redis+cluster"]


def storage_uri(uri: str) -> str:
    """The URL of the storage above for a Redis or Redis Cluster ``uri``; any other
    (``memory://``, ``memcached://``...) as it is."""
    scheme = uri.split("://", 1)[0].lower()
    known = OneTripRedisStorage.STORAGE_SCHEME + OneTripRedisClusterStorage.STORAGE_SCHEME
    return _PREFIX + uri if _PREFIX + scheme in known else uri
