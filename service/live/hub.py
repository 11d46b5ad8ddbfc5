"""The process's hub: one subscription for every followed thing (a game, a day's board),
fanned out in memory to the followers of each.

A :class:`Hub` holds one :class:`~service.live.subscription.Subscription`, whatever the
number of followers, and one :class:`~service.live.channel.Channel` per followed thing
that has followers in this process, named by its pub/sub channel.  When a channel
carries something, the hub has the channel read what it follows once (a game and its
journal, :class:`~service.live.channel.GameChannel`; a board's feed,
:class:`~service.live.board.BoardChannel`) and make the items of what is new once, and
hands the same items (:mod:`service.live.items`) to each
:class:`~service.live.follower.Follower`; the followers' streams frame them on their wires
(:mod:`service.live.wires`) and write them to their clients, and the hub never waits on a
client.

Every ``heartbeat`` seconds the hub gives a ``BEAT`` to each follower that got nothing
since the last round, closes those past their deadline (``SSE_MAX_SECONDS``) and looks
for followed games that expired (:class:`~service.live.expiry.ExpiryCheck`).
The followers of a process are closed when the subscription is lost: a change published
meanwhile would be missed, so their clients resume from their last version once Redis
answers again.  A channel whose read fails (its shard failing over) is read again after
:data:`REREAD_PAUSE`, and the other channels' followers go on.

The subscription's thread starts with the first follower and stops a while after the
last one left.  Under gevent (the events group, :mod:`service.runtime.events_group`) the
threads, the locks and the events are greenlets and gevent's own, through its
monkey-patching.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import redis

from service.live.channel import Channel
from service.live.expiry import ExpiryCheck
from service.live.follower import Follower, Limits
from service.live.subscription import Subscription
from service.storage.game_store import StorageUnavailable

log = logging.getLogger("patience.feed")

#: Seconds a stream waits for its process's subscription beyond the confirmation time,
#: and how often it looks whether it was closed meanwhile.
SUBSCRIBE_GRACE = 4.0
SUBSCRIBE_POLL = 0.05
#: Seconds before the hub reads again a game whose reading failed.
REREAD_PAUSE = 0.25


class Hub:
    """The process's subscription and its channels (one hub per app, so per process)."""

    def __init__(self, connect: Callable[[], redis.Redis], *,
                 backlog: int = 256, backlog_bytes: int = 64 * 1024,
                 heartbeat: float = 15.0, confirm_timeout: float = 1.0,
                 linger: float = 30.0, tick: float = 0.05):
        self._connect = connect
        self.heartbeat = max(0.05, float(heartbeat))
        self.confirm_timeout = max(0.05, float(confirm_timeout))
        self.linger = max(0.0, float(linger))
        self.tick = tick
        self.limits = Limits(backlog=max(1, int(backlog)),
                             backlog_bytes=max(0, int(backlog_bytes)), patience=self.heartbeat)
        # Reentrant: ending an attached follower, under the lock, makes it leave.
        self.lock = threading.RLock()
        self._channels: dict[str, Channel] = {}
        self._fresh: set[str] = set()  # channels the hub has not read yet
        self._subscription: Subscription | None = None  # while its thread runs
        self._stopping = False
        self._expiry = ExpiryCheck(gone=self._deleted, stopping=self._stopped)
        # The subscription's thread's own: when the next heartbeat round is due, since
        # when nothing is followed, and when to read again each channel whose read failed.
        self._next_round = 0.0
        self._idle_since: float | None = None
        self._unread: dict[str, float] = {}

    # --- followers ----------------------------------------------------------------------
    def follow(self, channel: Channel, seconds: float) -> Follower:
        """A follower of what ``channel`` follows (the hub's channel of that name if it
        has one, else ``channel``) for ``seconds`` at most, once the subscription is in
        force: whatever the caller reads of it from now on, every later change reaches
        the follower."""
        # The first follower of a process may wait for the subscription to be made (a
        # connection and its confirmation, on a process that may be busy opening others).
        deadline = time.monotonic() + self.confirm_timeout + SUBSCRIBE_GRACE
        follower, subscription = self._join(channel, seconds)
        while not subscription.connected.wait(SUBSCRIBE_POLL):
            if follower.closed:
                # The subscription was lost before it was in force, which closed every
                # follower: join again, and the hub subscribes again (on another node).
                follower, subscription = self._join(channel, seconds)
            if time.monotonic() >= deadline:
                break
        if not subscription.connected.is_set() or follower.closed:
            follower.leave()
            raise StorageUnavailable("the events subscription is not in force")
        return follower

    def _join(self, channel: Channel, seconds: float) -> tuple[Follower, Subscription]:
        name = channel.name
        follower = Follower(name, time.monotonic() + seconds, lock=self.lock,
                            limits=self.limits, leave=self._forget)
        with self.lock:
            joined = self._channels.get(name)
            if joined is None:
                joined = self._channels[name] = channel
                self._fresh.add(name)
            joined.followers.add(follower)
            if self._subscription is None:
                self._subscribe()
            return follower, self._subscription

    def _forget(self, follower: Follower) -> None:
        """A follower leaves (under the lock): its channel goes with its last one."""
        channel = self._channels.get(follower.channel)
        if channel is not None:
            channel.followers.discard(follower)
            if not channel.followers:
                del self._channels[follower.channel]
                self._fresh.discard(follower.channel)

    def close_followers(self) -> None:
        """Close every follower (they end their streams) and forget the channels."""
        with self.lock:
            for channel in list(self._channels.values()):
                channel.close()
            self._channels.clear()
            self._fresh.clear()

    def stop(self) -> None:
        """Close the followers and end the subscription (at its next tick)."""
        with self.lock:
            self._stopping = True
        self.close_followers()

    # --- the subscription ---------------------------------------------------------------
    def _subscribe(self) -> None:
        """Start the subscription's thread (under the lock)."""
        self._stopping = False
        self._next_round = time.monotonic() + self.heartbeat
        self._idle_since, self._unread = None, {}
        self._subscription = Subscription(self._connect, confirm_timeout=self.confirm_timeout,
                                          tick=self.tick)
        threading.Thread(target=self._subscription.run, args=(self,), name="events-hub",
                         daemon=True).start()

    def received(self, changed: set[str], deleted: set[str]) -> bool:
        """Hand what the channels carried (``changed``, ``deleted``: channel names) to the
        followers, and time them; False once the hub is stopping or has had no follower
        for ``linger`` seconds."""
        now = time.monotonic()
        with self.lock:
            if self._stopping or self._lingered(now):
                # A follower arriving from now on waits for the next subscription.
                self._subscription = None
                return False
            changed = {name for name in changed if name in self._channels}
            changed |= self._fresh
            self._fresh = set()
            due = list(self._channels.values()) if now >= self._next_round else ()
        for name in deleted:
            self._deleted(name)
        for name in changed - deleted:
            self._read(name, now)
        self._reread(now)
        if due:
            self._next_round = now + self.heartbeat
            self._round(now, due)
        return True

    def lost(self) -> bool:
        """Changes may have been published while the connection was down: every follower
        is closed (its client resumes from its last id).  True to subscribe again, for
        followers that joined since."""
        self.close_followers()
        with self.lock:
            self._unread = {}
            if self._stopping or not self._channels:
                self._subscription = None
                return False
            return True

    def _lingered(self, now: float) -> bool:
        """Whether the hub has had no follower for ``linger`` seconds (under the lock)."""
        if self._channels:
            self._idle_since = None
            return False
        if self._idle_since is None:
            self._idle_since = now
            return False
        return now - self._idle_since >= self.linger

    # --- the feed of one channel --------------------------------------------------------
    def _read(self, name: str, now: float) -> None:
        try:
            self._changed(name)
        except StorageUnavailable:
            # Its shard is failing over (or Redis is down): read it again in a while.
            self._unread[name] = now + REREAD_PAUSE

    def _reread(self, now: float) -> None:
        again = {name for name, when in self._unread.items() if when <= now}
        if again:
            for name in again:
                del self._unread[name]
            with self.lock:
                self._fresh |= again

    def _changed(self, name: str) -> None:
        with self.lock:
            channel = self._channels.get(name)
        if channel is None:
            return  # no follower left
        found = channel.read()
        if found is None:
            self._deleted(name)
            return
        with self.lock:
            if self._channels.get(name) is not channel:
                return  # no follower left
            try:
                items = channel.advance(found)
            except Exception:
                log.exception("the feed of %s could not be read", name)
                channel.close()
                self._channels.pop(name, None)
                return
            channel.hand(items)

    def _deleted(self, name: str) -> None:
        with self.lock:
            channel = self._channels.pop(name, None)
            self._fresh.discard(name)
            if channel is not None:
                item = channel.gone()
                if item is None:
                    channel.close()
                else:
                    channel.hand([item])

    # --- heartbeat rounds ---------------------------------------------------------------
    def _round(self, now: float, channels: list[Channel]) -> None:
        """A heartbeat round of every follower, and a look for games that expired."""
        with self.lock:
            for name, channel in list(self._channels.items()):
                channel.round(now)
                if not channel.followers:
                    self._channels.pop(name, None)
        self._expiry.look(channels)

    def _stopped(self) -> bool:
        return self._stopping
