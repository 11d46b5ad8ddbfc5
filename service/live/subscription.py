"""The process's one pub/sub connection: a pattern subscription to every game's channel and
every day's board's channel (:data:`PATTERNS`),
watched with PING, and made again after a loss (on a connection of the storage
backend's :meth:`~service.storage.backend.Backend.subscriber`: on a Redis Cluster, the
next node).

Every change of a game publishes its new version on the game's channel
(:func:`service.storage.keys.channel`; the write script of :mod:`service.storage.game_store`
does it, a delete publishes ``deleted``); every entry added to a day's board's feed
publishes its id on the board's channel (:func:`service.storage.keys.board_channel`, the
board's script of :mod:`service.storage.daily_store`).  With Redis Cluster, ``PUBLISH``
reaches every node, so a connection to any node of the cluster receives every channel's
messages.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

import redis

from service.storage import keys

log = logging.getLogger("patience.feed")

#: What a delete publishes on the game's channel (a change publishes its version).
DELETED_MESSAGE = b"deleted"
#: Every game's channel (:func:`service.storage.keys.channel` with ``*`` for the id) and
#: every day's board's (:func:`service.storage.keys.board_channel`).
PATTERNS = (keys.channel("*"), keys.board_channel("*", "*"))
#: Seconds between two PINGs; one unanswered for three connect timeouts ends the
#: connection (a node whose host vanished closes nothing and sends nothing more).
PING_EVERY = 1.0
#: Seconds before subscribing again after a loss: the first pause, and the longest.
BACKOFF_FIRST, BACKOFF_MOST = 0.05, 2.0


class Listener(Protocol):
    """What a subscription tells (the hub)."""

    def received(self, changed: set[str], deleted: set[str]) -> bool:
        """The channels that carried something new, and those that carried ``deleted``,
        since the last call (every ``tick`` at least, both sets possibly empty); False ends the
        subscription."""

    def lost(self) -> bool:
        """The connection was lost; True to subscribe again."""


class Subscription:
    """A ``PSUBSCRIBE`` of every followed thing's channel on a connection of ``connect``,
    in force
    while :attr:`connected` is set; :meth:`run` keeps it until its listener is done."""

    def __init__(self, connect: Callable[[], redis.Redis], *, confirm_timeout: float,
                 tick: float):
        self._connect = connect
        self.confirm_timeout = confirm_timeout
        self.tick = tick
        self.connected = threading.Event()
        self._client: redis.Redis | None = None
        self._pubsub = None
        self._next_ping = 0.0
        self._unanswered: float | None = None  # when the PING awaiting its answer went

    def run(self, listener: Listener) -> None:
        """Subscribe, and tell ``listener`` what the channels carry until it says stop;
        after a loss, subscribe again (pausing longer after each failure in a row) if it
        says so."""
        backoff = BACKOFF_FIRST
        while True:
            try:
                self._subscribe()
                self.connected.set()
                backoff = BACKOFF_FIRST
                while listener.received(*self._read()):
                    pass
                return
            except (redis.RedisError, OSError) as error:
                log.warning("events subscription lost: %s: %s", type(error).__name__, error)
            except Exception:
                log.exception("events subscription failed")
            finally:
                self.connected.clear()
                self._close()
            if not listener.lost():
                return
            time.sleep(backoff)
            backoff = min(BACKOFF_MOST, backoff * 2)

    def _subscribe(self) -> None:
        self._client = self._connect()
        self._pubsub = self._client.pubsub()
        self._pubsub.psubscribe(*PATTERNS)
        for _pattern in PATTERNS:
            confirmed = self._pubsub.get_message(timeout=self.confirm_timeout)
            if confirmed is None or confirmed.get("type") != "psubscribe":
                raise redis.TimeoutError(f"no confirmation of the subscription: {confirmed}")
        self._next_ping, self._unanswered = time.monotonic() + PING_EVERY, None

    def _read(self) -> tuple[set[str], set[str]]:
        """The messages of up to ``tick`` seconds: the channels changed and deleted.
        Raises when the node has not answered a PING in time."""
        changed: set[str] = set()
        deleted: set[str] = set()
        message = self._pubsub.get_message(timeout=self.tick)
        while message is not None:
            kind = message.get("type")
            if kind == "pmessage":
                name = message["channel"].decode()
                if message["data"] == DELETED_MESSAGE:
                    deleted.add(name)
                else:
                    changed.add(name)
            elif kind == "pong":
                self._unanswered = None
            message = self._pubsub.get_message(timeout=0)
        self._ping(time.monotonic())
        return changed, deleted

    def _ping(self, now: float) -> None:
        if self._unanswered is not None and now - self._unanswered > self.confirm_timeout * 3:
            raise redis.TimeoutError(f"no answer to PING for {now - self._unanswered:.1f} s")
        if now >= self._next_ping:
            self._next_ping = now + PING_EVERY
            if self._unanswered is None:
                self._unanswered = now
                self._pubsub.ping()

    def _close(self) -> None:
        for closing in (self._pubsub, self._client):
            if closing is not None:
                with contextlib.suppress(redis.RedisError, OSError):
                    closing.close()
        self._pubsub = self._client = None
