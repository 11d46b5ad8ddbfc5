"""The rate limiter's counters in Redis, one round trip a request.

flask-limiter counts a request with the ``limits`` library's fixed window: an ``incr``
(a Lua ``INCRBY``, with an ``EXPIRE`` when the window opens), then, for the
``RateLimit-*`` headers, a ``GET`` of the count and a ``TTL`` of the window: three round
trips to Redis on every request.  The storages here are ``limits``' own Redis storages
(one Redis, Redis Cluster) whose ``incr`` answers the window's time to live with the
count, in the same script; the ``get`` and ``get_expiry`` that follow on the same
thread for the same key answer what it read, without asking Redis again.

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

__all__ = ["storage_uri"]

_PREFIX = "patience+"

#: ``incr_expire.lua`` of ``limits``, answering the key's time to live (ms) too.
_INCR_EXPIRE_TTL = """
local amount = tonumber(ARGV[2])
local current = redis.call('INCRBY', KEYS[1], amount)
if tonumber(current) == amount then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return {current, redis.call('PTTL', KEYS[1])}
"""


class _OneTrip:
    """What the two storages add to ``limits``' own (a mixin before them)."""

    def __init__(self, uri: str, *args, **kwargs):
        super().__init__(uri.removeprefix(_PREFIX), *args, **kwargs)
        self._last = threading.local()  # per thread (per greenlet where gevent patches)

    def initialize_storage(self, uri: str) -> None:
        super().initialize_storage(uri)
        self._incr_ttl = self.get_connection().register_script(_INCR_EXPIRE_TTL)

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        count, ttl_ms = self._incr_ttl([self.prefixed_key(key)], [expiry, amount])
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
