"""The process's hub: one subscription for every game, fanned out in memory to the
followers of each game.

A :class:`Hub` holds one :class:`~service.live.subscription.Subscription`, whatever the
number of followers, and one :class:`~service.live.channel.Channel` per game that has
followers in this process.  When a game's channel carries something, the hub reads the
game and its journal once, has the channel replay what is new once, and hands the same
items (:mod:`service.live.items`) to each :class:`~service.live.follower.Follower` of the
game; the followers' streams frame them on their wires (:mod:`service.live.wires`) and
write them to their clients, and the hub never waits on a client.

Every ``heartbeat`` seconds the hub gives a ``BEAT`` to each follower that got nothing
since the last round, closes those past their deadline (``SSE_MAX_SECONDS``) and looks
for followed games that expired (:class:`~service.live.expiry.ExpiryCheck`).
The followers of a process are closed when the subscription is lost: a change published
meanwhile would be missed, so their clients resume from their last version once Redis
answers again.  A game whose read fails (its shard failing over) is read again after
:data:`REREAD_PAUSE`, and the other games' followers go on.

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
from service.live.items import deleted_item
from service.live.subscription import Subscription
from service.storage.game_store import GameStore, StorageUnavailable

log = logging.getLogger("patience.feed")

#: Seconds a stream waits for its process's subscription beyond the confirmation time,
#: and how often it looks whether it was closed meanwhile.
SUBSCRIBE_GRACE = 4.0
SUBSCRIBE_POLL = 0.05
#: Seconds before the hub reads again a game whose reading failed.
REREAD_PAUSE = 0.25


class Hub:
    """The process's subscription and its channels (one hub per app, so per process)."""

    def __init__(self, store: GameStore, connect: Callable[[], redis.Redis], *,
                 backlog: int = 256, backlog_bytes: int = 64 * 1024,
                 heartbeat: float = 15.0, confirm_timeout: float = 1.0,
                 linger: float = 30.0, tick: float = 0.05):
        self.store = store
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
        self._expiry = ExpiryCheck(store, gone=self._deleted, stopping=self._stopped)
        # The subscription's thread's own: when the next heartbeat round is due, since
        # when no game is followed, and when to read again each game whose read failed.
        self._next_round = 0.0
        self._idle_since: float | None = None
        self._unread: dict[str, float] = {}

    # --- followers ----------------------------------------------------------------------
    def follow(self, game_id: str, seconds: float) -> Follower:
        """A follower of ``game_id`` for ``seconds`` at most, once the subscription is in
        force: whatever the caller reads of the game from now on, every later change
        reaches the follower."""
        # The first follower of a process may wait for the subscription to be made (a
        # connection and its confirmation, on a process that may be busy opening others).
        deadline = time.monotonic() + self.confirm_timeout + SUBSCRIBE_GRACE
        follower, subscription = self._join(game_id, seconds)
        while not subscription.connected.wait(SUBSCRIBE_POLL):
            if follower.closed:
                # The subscription was lost before it was in force, which closed every
                # follower: join again, and the hub subscribes again (on another node).
                follower, subscription = self._join(game_id, seconds)
            if time.monotonic() >= deadline:
                break
        if not subscription.connected.is_set() or follower.closed:
            follower.leave()
            raise StorageUnavailable("the events subscription is not in force")
        return follower

    def _join(self, game_id: str, seconds: float) -> tuple[Follower, Subscription]:
        follower = Follower(game_id, time.monotonic() + seconds, lock=self.lock,
                            limits=self.limits, leave=self._forget)
        with self.lock:
            channel = self._channels.get(game_id)
            if channel is None:
                channel = self._channels[game_id] = Channel(game_id)
                self._fresh.add(game_id)
            channel.followers.add(follower)
            if self._subscription is None:
                self._subscribe()
            return follower, self._subscription

    def _forget(self, follower: Follower) -> None:
        """A follower leaves (under the lock): its game's channel goes with its last one."""
        channel = self._channels.get(follower.game_id)
        if channel is not None:
            channel.followers.discard(follower)
            if not channel.followers:
                del self._channels[follower.game_id]
                self._fresh.discard(follower.game_id)

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
        """Hand what the channels carried to the followers, and time them; False once the
        hub is stopping or has had no follower for ``linger`` seconds."""
        now = time.monotonic()
        with self.lock:
            if self._stopping or self._lingered(now):
                # A follower arriving from now on waits for the next subscription.
                self._subscription = None
                return False
            changed = {game_id for game_id in changed if game_id in self._channels}
            changed |= self._fresh
            self._fresh = set()
            due = list(self._channels) if now >= self._next_round else ()
        for game_id in deleted:
            self._deleted(game_id)
        for game_id in changed - deleted:
            self._read(game_id, now)
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

    # --- the feed of one game -----------------------------------------------------------
    def _read(self, game_id: str, now: float) -> None:
        try:
            self._changed(game_id)
        except StorageUnavailable:
            # Its shard is failing over (or Redis is down): read it again in a while.
            self._unread[game_id] = now + REREAD_PAUSE

    def _reread(self, now: float) -> None:
        again = {game_id for game_id, when in self._unread.items() if when <= now}
        if again:
            for game_id in again:
                del self._unread[game_id]
            with self.lock:
                self._fresh |= again

    def _changed(self, game_id: str) -> None:
        found = self.store.load_with_journal(game_id)
        if found is None:
            self._deleted(game_id)
            return
        stored, journal = found
        with self.lock:
            channel = self._channels.get(game_id)
            if channel is None:
                return  # no follower left
            try:
                items = channel.advance(stored, journal)
            except Exception:
                log.exception("the journal of game %s could not be replayed", game_id)
                channel.close()
                self._channels.pop(game_id, None)
                return
            channel.hand(items)

    def _deleted(self, game_id: str) -> None:
        item = deleted_item(game_id)
        with self.lock:
            channel = self._channels.pop(game_id, None)
            self._fresh.discard(game_id)
            if channel is not None:
                channel.hand([item])

    # --- heartbeat rounds ---------------------------------------------------------------
    def _round(self, now: float, game_ids: list[str]) -> None:
        """A heartbeat round of every follower, and a look for games that expired."""
        with self.lock:
            for game_id, channel in list(self._channels.items()):
                channel.round(now)
                if not channel.followers:
                    self._channels.pop(game_id, None)
        self._expiry.look(game_ids)

    def _stopped(self) -> bool:
        return self._stopping
