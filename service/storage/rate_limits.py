"""The rate limiter's counters: counted in each process, reconciled with Redis in batches.

A client's budget is a fixed window of the ``limits`` library's notation (``1200 per
minute``): a Redis counter per client and limit, opened by the window's first request
and expiring with it (:data:`~service.storage.scripts.RATE_COUNT`: ``INCRBY``, the
``EXPIRE`` of a new window, and the count and time to live read back, in one round
trip).  Every process and replica adds its requests to the same counter, so the budget
is one for all of them; but a process does not send every request there.  For each
client it keeps the window's last count read from Redis (*known*) and the requests it
let through since (*pending*), and decides from their sum:

- a client whose known count reached the limit is refused (429) at once, without Redis
  (Redis is asked again every ``sync_seconds`` while the client keeps asking, in case
  its counter went away);
- otherwise the request is counted locally, without Redis, while the process holds
  fewer than ``sync_hits`` requests of that client not yet sent, fewer than a
  :data:`SHARE`\\ th of the budget it knows to be left, and its last exchange with Redis
  for that client is less than ``sync_seconds`` old;
- else (and for a client's first request in a window) the request goes to Redis with
  the pending ones, on the request path, and is decided by the count that comes back.

So a busy client costs one round trip every ``sync_hits`` requests a process, and a
client near its limit (or with a small limit) one a request: there the count is exact.
How far past its limit a client spread over processes can get: a process lets through
at most ``sync_hits - 1`` requests that Redis has not seen yet, and the first answer
from Redis past the limit stops it for the rest of the window; with N processes in all
(replicas x processes each), a client is let through at most ``limit + N x (sync_hits -
1)`` requests in a window, and never refused before ``limit`` (docs/performance.md).

When the counters' Redis cannot be reached, requests are let through uncounted (fail
open: a request that needs the games' storage then answers 503 from the store); the
counters are tried again a second later.  Nothing connects when the process starts.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import NamedTuple

import redis
from limits import RateLimitItem, parse_many
from redis.exceptions import RedisClusterException

from service.storage.backend import Script
from service.storage.connections import Connections
from service.storage.scripts import RATE_COUNT

__all__ = ["SHARE", "RateCounters", "Verdict"]

log = logging.getLogger("patience.limits")

_RATE_COUNT = Script(RATE_COUNT)

#: A process counts locally at most this fraction of the budget it knows to be left:
#: near the limit (and for a small limit) every request goes to Redis.
SHARE = 32

#: Seconds the counters are left alone after Redis failed to answer.
RETRY_SECONDS = 1.0

#: Seconds by which a reply's window must end later than the one known to be a new one.
_NEW_COUNTER = 0.05

#: Windows kept in a process before the ended ones are first dropped.
_SWEEP_SIZE = 4096


class Verdict(NamedTuple):
    """What the limiter decided for a request, and the figures of its headers."""

    allowed: bool
    limit: RateLimitItem
    remaining: int
    #: When the window ends (seconds since the epoch).
    reset: float


class _Window:
    """One client's window of one limit, as this process sees it."""

    __slots__ = ("end", "known", "pending", "sending", "synced")

    def __init__(self, end: float):
        self.end = end  # when the window ends, from the counter's time to live
        self.known = 0  # the count last read from Redis
        self.pending = 0  # requests let through here, not yet sent to Redis
        self.sending = 0  # requests on their way to Redis
        self.synced = 0.0  # when this process last sent the window's count


class RateCounters:
    """The counters of one process for the limits of ``limits`` (``"1200 per minute"``,
    several separated by ``;``).  ``connections``: the Redis of the counters, None to
    count in this process alone (one process: tests and ``memory://``)."""

    def __init__(self, limits: str, connections: Connections | None, *,
                 prefix: str = "ratelimit", sync_hits: int = 16,
                 sync_seconds: float = 0.2):
        self.limits = [(item, f"{prefix}:{{}}:{item.amount}/{item.multiples}"
                              f"{item.GRANULARITY.name}") for item in parse_many(limits)]
        if not self.limits:
            raise ValueError(f"no rate limit in {limits!r}")
        self._connections = connections
        self._sync_hits = max(1, sync_hits)
        self._sync_seconds = sync_seconds
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._sweep_at = _SWEEP_SIZE
        self._local: dict[str, tuple[int, float]] = {}  # without Redis: count, end

    def hit(self, client: str) -> Verdict | None:
        """Count a request of ``client``: the verdict of the limit it breaks, else of
        the limit with the least left; None if the counters cannot be reached (the
        request goes on uncounted)."""
        now = time.time()
        if now < self._down_until:
            return None
        verdict = None
        for item, key in self.limits:
            one = self._hit(item, key.format(client), now)
            if one is None:
                return None
            if not one.allowed:
                return one
            if verdict is None or one.remaining < verdict.remaining:
                verdict = one
        return verdict

    def _hit(self, item: RateLimitItem, key: str, now: float) -> Verdict | None:
        amount = item.amount
        with self._lock:
            window = self._windows.get(key)
            if window is None or now >= window.end:
                if len(self._windows) >= self._sweep_at:
                    self._sweep(now)
                window = self._windows[key] = _Window(now + item.get_expiry())
            elif (window.known >= amount and self._sync_hits > 1
                  and now - window.synced < self._sync_seconds):
                return Verdict(False, item, 0, window.end)
            else:
                used = window.known + window.pending + window.sending
                batch = min(self._sync_hits, (amount - used) // SHARE)
                if (window.pending + window.sending + 1 < batch
                        and now - window.synced < self._sync_seconds):
                    window.pending += 1
                    return Verdict(True, item, amount - used - 1, window.end)
            send = window.pending + 1
            window.pending = 0
            window.sending += send
            window.synced = now
        try:
            count, ttl_ms = self._count(key, item.get_expiry(), send, now)
        except (redis.RedisError, RedisClusterException, OSError) as error:
            with self._lock:
                window.sending -= send
                was_up, self._down_until = self._down_until == 0.0, now + RETRY_SECONDS
            if was_up:
                log.warning("rate-limit counters unreachable, requests go uncounted: %r",
                            error)
            return None
        if self._down_until:
            self._down_until = 0.0
            log.warning("rate-limit counters reachable again")
        count = int(count)
        end = now + (ttl_ms / 1000 if ttl_ms > 0 else item.get_expiry())
        with self._lock:
            window.sending -= send
            # A lower count that ends later is a new counter in Redis (the old one
            # expired or went away); else the higher of two replies is the later one.
            if count < window.known and end > window.end + _NEW_COUNTER:
                window.known = count
            else:
                window.known = max(window.known, count)
            window.end = end
            left = amount - window.known - window.pending - window.sending
        return Verdict(count <= amount, item, max(0, left), end)

    def _count(self, key: str, expiry: int, amount: int, now: float) -> tuple[int, int]:
        """Add ``amount`` to the window's counter: its count and time to live (ms)."""
        if self._connections is not None:
            return _RATE_COUNT.run(self._connections, (key,), (expiry, amount))
        with self._lock:
            count, end = self._local.get(key, (0, 0.0))
            if now >= end:
                count, end = 0, now + expiry
            self._local[key] = (count + amount, end)
        return count + amount, int((end - now) * 1000)

    def _sweep(self, now: float) -> None:
        """Drop the windows that ended; the next sweep once twice as many are kept."""
        for key in [key for key, window in self._windows.items() if window.end <= now]:
            del self._windows[key]
        for key in [key for key, (_count, end) in self._local.items() if end <= now]:
            del self._local[key]
        self._sweep_at = max(_SWEEP_SIZE, 2 * len(self._windows))
