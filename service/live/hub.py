"""The live feed: one pub/sub subscription per process, fanned out in memory to the
followers of each game.

Every change of a game publishes its new version on the game's channel
(:func:`service.keys.channel`; the write script of :mod:`service.store` does it, a delete
publishes ``deleted``).  A
:class:`Hub` holds a single Redis connection subscribed to the pattern of all those
channels, whatever the number of followers, and one :class:`_Channel` per game that has
followers in this process.  When a game's channel carries something, the hub reads the
game and its journal once, replays the new tokens once on the channel's own replay of the
game, and hands the resulting Server-Sent Event frames (the same bytes for every follower)
to each :class:`Follower` of the game: a bounded list and an event to wake it.  The
followers write the frames to their clients; the hub never waits on a client.

Items given to a follower are ``(kind, version, frame)``:

- ``FRAME``: the entry of one version, in version order;
- ``END``: the game is over at ``version`` (``frame`` is the ``end`` event);
- ``SYNC``: the channel (re)started from the stored game at ``version``, without frames
  for what came before: a follower at another version catches up from the journal;
- ``DELETED``: the game was deleted or expired;
- ``BEAT``: nothing was handed to the follower for a heartbeat period (``frame`` is the
  heartbeat comment).

The hub also times the followers: every ``heartbeat`` seconds it gives a ``BEAT`` to each
follower that got nothing since the last round, and closes those older than their
deadline (``SSE_MAX_SECONDS``).  A follower waits on its event alone, with no timer of
its own.

A follower that does not take its items (a slow client) holds at most ``backlog`` of them:
past that its list is dropped and it is marked as lagging, and it catches up from the
journal the next time it runs.  Its memory is bounded whatever it does.  The followers
of a process are closed (``take`` answers None) when the hub loses its connection: a
change published meanwhile would be missed, so their clients resume with
``Last-Event-ID`` once Redis answers again.

The subscription is a plain ``PSUBSCRIBE`` on one connection: with Redis Cluster,
``PUBLISH`` reaches every node, so a connection to any node of the cluster receives every
game's messages.  The hub's thread starts with the first follower and stops a while after
the last one left.  Under gevent (the events worker group, see gunicorn.events.conf.py)
the thread, the locks and the events are greenlets and gevent's own, through its
monkey-patching.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
import weakref
from collections.abc import Callable

import orjson
import redis

from service import cluster, keys
from service.engine.journal import Change
from service.game.record import StoredGame
from service.game.replay import replay
from service.store import GameStore, StorageUnavailable

log = logging.getLogger("patience.feed")

EXTENSION = "live_feed"

#: What a delete publishes on the game's channel (a change publishes its version).
DELETED = b"deleted"
#: Every game's channel: :func:`service.keys.channel` with ``*`` for the id.
PATTERN = keys.channel("*")
_PREFIX, _SUFFIX = (part.encode() for part in PATTERN.split("*"))
#: Entries a starting channel hands out before its SYNC.
RECENT = 32
#: Seconds a stream waits for its process's subscription beyond the confirmation time,
#: and how often it looks whether it was closed meanwhile.
SUBSCRIBE_GRACE = 4.0
SUBSCRIBE_POLL = 0.05
#: Seconds between two PINGs on the subscription; one unanswered for three connect
#: timeouts ends it (and the hub subscribes again, on the next node of a cluster).
PING_EVERY = 1.0
#: Seconds before the hub reads again a game whose reading failed.
REREAD_PAUSE = 0.25

FRAME, END, SYNC, DELETED_GAME, BEAT = "frame", "end", "sync", "deleted", "beat"
HEARTBEAT = b": heartbeat\n\n"
_BEAT = (BEAT, 0, HEARTBEAT)

#: Every hub of this process, for :func:`close_all_followers` (a process has one per app).
_HUBS: weakref.WeakSet = weakref.WeakSet()


def frame(event: str, data: bytes, event_id: int | None = None) -> bytes:
    """One Server-Sent Event (``data`` is one line of JSON)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\n".encode() + b"data: " + data + b"\n\n"


def entry_frame(change: Change) -> bytes:
    return frame(change.kind, orjson.dumps(change.entry()), change.version)


def end_frame(game_id: str, stored: StoredGame) -> bytes:
    return frame("end", orjson.dumps({"version": stored.version,
                                      "game": stored.public(game_id)}))


def deleted_frame(game_id: str) -> bytes:
    return frame("deleted", orjson.dumps({"id": game_id}))


def close_all_followers() -> None:
    """Wake every follower of this process with the end of its stream (a stopping
    worker)."""
    for hub in list(_HUBS):
        hub.close_followers()


class Follower:
    """One stream's place on its game's channel.

    A follower is taken from (:meth:`take`) by the stream's own thread or greenlet, which
    writes the frames.  Or it is *attached* to the client's connection
    (:meth:`Hub.attach`, the events worker group): the hub then writes each frame to the
    socket itself, without blocking, and the stream needs no greenlet at all.  An
    attached follower whose client does not read keeps at most ``backlog`` frames' worth
    of bytes waiting (and for a heartbeat period at most), then its connection is closed
    (its client resumes with ``Last-Event-ID``); a version it would miss closes it the
    same way."""

    __slots__ = ("__weakref__", "_hub", "_items", "_wake", "chunked", "closed", "conn",
                 "deadline", "game_id", "lagging", "on_end", "pending", "quiet", "sent")

    def __init__(self, hub: Hub, game_id: str, deadline: float):
        self._hub = hub
        self.game_id = game_id
        self.deadline = deadline
        self._items: list | None = []
        self._wake: threading.Event | None = threading.Event()
        self.lagging = False
        self.closed = False
        self.quiet = False
        self.conn = None  # an attached follower's socket (non-blocking)
        self.chunked = False
        self.pending = b""
        self.sent = -1
        self.on_end: Callable[[], None] | None = None

    def _push(self, item: tuple, backlog: int) -> None:
        """Under the hub's lock."""
        if item is not _BEAT:
            self.quiet = False
        if self.closed:
            return
        if self.conn is not None:
            self._deliver(item)
            return
        if self.lagging:
            return
        if len(self._items) >= backlog:
            self._items = []
            self.lagging = True
        else:
            self._items.append(item)
        self._wake.set()

    def _close(self) -> None:
        """Under the hub's lock."""
        if self.conn is not None:
            self._end(finish=True)
            return
        self.closed = True
        self._items = []
        self._wake.set()

    def take(self) -> tuple[list, bool] | None:
        """Wait for items: ``(items, lagging)``; None once closed (past its deadline, the
        hub lost its connection, or the process stops)."""
        self._wake.wait()
        with self._hub.lock:
            if self.closed:
                return None
            items, self._items = self._items, []
            lagging, self.lagging = self.lagging, False
            self._wake.clear()
        return items, lagging

    def leave(self) -> None:
        self._hub.leave(self)

    # --- attached -----------------------------------------------------------------------
    def _deliver(self, item: tuple) -> None:
        """Write an item to the attached connection (under the hub's lock)."""
        kind, version, data = item
        if kind is BEAT:
            self._write(data)
        elif kind is FRAME:
            if version == self.sent + 1:
                self._write(data)
                self.sent = version
            elif version > self.sent:
                self._end(finish=False)  # a version would be missing: the client resumes
        elif kind is SYNC:
            if version != self.sent:
                self._end(finish=False)
        elif kind is END:
            if version == self.sent:
                self._write(data)
                self._end(finish=True)
            else:
                self._end(finish=False)
        elif kind is DELETED_GAME:
            self._write(data)
            self._end(finish=True)

    def _write(self, data: bytes) -> None:
        if self.conn is None:
            return
        if self.chunked:
            data = b"%x\r\n%s\r\n" % (len(data), data)
        if self.pending:
            if len(self.pending) + len(data) > self._hub.backlog_bytes:
                self._end(finish=False)  # its client does not read: drop it
            else:
                self.pending += data
            return
        try:
            written = self.conn.send(data)
        except BlockingIOError:
            written = 0
        except OSError:
            self._end(finish=False)  # the client left
            return
        if written < len(data):
            self.pending = data[written:]
            self._hub._flush_later(self)

    def _flush(self) -> bool:
        """Send what is pending (under the hub's lock): whether all of it went."""
        if self.conn is None:
            return True
        try:
            written = self.conn.send(self.pending)
        except BlockingIOError:
            return False
        except OSError:
            self._end(finish=False)
            return True
        self.pending = self.pending[written:]
        return not self.pending

    def _end(self, *, finish: bool) -> None:
        """Close the attached connection, after the end of the response if ``finish``
        (else the response is cut short, and the client resumes)."""
        conn, self.conn = self.conn, None
        if conn is None:
            return
        self.closed = True
        if finish and self.chunked and not self.pending:
            with contextlib.suppress(OSError):
                conn.send(b"0\r\n\r\n")
        with contextlib.suppress(OSError):
            conn.close()
        self.pending = b""
        on_end, self.on_end = self.on_end, None
        if on_end is not None:
            on_end()


class _Channel:
    """The followers of one game in this process, and the game replayed as far as they
    were sent."""

    __slots__ = ("followers", "replayed", "seen", "version")

    def __init__(self):
        self.followers: set[Follower] = set()
        self.replayed = None  # the Replay at `version`; None until the hub read the game
        self.seen = 0  # characters of the journal replayed
        self.version = -1


class Hub:
    """The process's subscription and its channels (one per app, so per worker)."""

    def __init__(self, store: GameStore, connect: Callable[[], redis.Redis], *,
                 backlog: int = 256, backlog_bytes: int = 64 * 1024,
                 heartbeat: float = 15.0, confirm_timeout: float = 1.0,
                 linger: float = 30.0, tick: float = 0.05):
        self.store = store
        self._connect = connect
        self.backlog = max(1, int(backlog))
        self.heartbeat = max(0.05, float(heartbeat))
        self.confirm_timeout = max(0.05, float(confirm_timeout))
        self.linger = max(0.0, float(linger))
        self.tick = tick
        # Reentrant: ending an attached follower, under the lock, makes it leave.
        self.lock = threading.RLock()
        self.backlog_bytes = max(0, int(backlog_bytes))
        self._channels: dict[str, _Channel] = {}
        self._fresh: set[str] = set()  # channels the hub has not read yet
        self._connected = threading.Event()
        self._thread: threading.Thread | None = None
        self._checker: threading.Thread | None = None
        self._stopping = False
        _HUBS.add(self)

    # --- followers --------------------------------------------------------------------
    def follow(self, game_id: str, seconds: float) -> Follower:
        """A follower of ``game_id`` for ``seconds`` at most, once the subscription is in
        force: whatever the caller reads of the game from now on, every later change
        reaches the follower."""
        # The first follower of a process may wait for the subscription to be made (a
        # connection and its confirmation, on a worker that may be busy opening others).
        deadline = time.monotonic() + self.confirm_timeout + SUBSCRIBE_GRACE
        follower = self._join(game_id, seconds)
        while not self._connected.wait(SUBSCRIBE_POLL):
            if follower.closed:
                # The subscription was lost before it was in force, which closed every
                # follower: join again, and the hub subscribes again (on another node).
                follower = self._join(game_id, seconds)
            if time.monotonic() >= deadline:
                break
        if not self._connected.is_set() or follower.closed:
            self.leave(follower)
            raise StorageUnavailable("the events subscription is not in force")
        return follower

    def _join(self, game_id: str, seconds: float) -> Follower:
        follower = Follower(self, game_id, time.monotonic() + seconds)
        with self.lock:
            channel = self._channels.get(game_id)
            if channel is None:
                channel = self._channels[game_id] = _Channel()
                self._fresh.add(game_id)
            channel.followers.add(follower)
            if self._thread is None:
                self._stopping = False
                self._thread = threading.Thread(target=self._run, name="events-hub",
                                                daemon=True)
                self._thread.start()
        return follower

    def leave(self, follower: Follower) -> None:
        with self.lock:
            follower.closed = True
            channel = self._channels.get(follower.game_id)
            if channel is not None:
                channel.followers.discard(follower)
                if not channel.followers:
                    del self._channels[follower.game_id]
                    self._fresh.discard(follower.game_id)

    def attach(self, follower: Follower, conn, *, chunked: bool, sent: int,
               on_end: Callable[[], None]) -> None:
        """Let the hub write the follower's frames to ``conn`` (a non-blocking socket
        whose response has sent everything up to version ``sent``); ``on_end`` runs once
        the hub has closed it."""
        with self.lock:
            follower.chunked = chunked
            follower.sent = sent
            follower.on_end = on_end
            follower.conn = conn
            items, follower._items, follower._wake = follower._items, None, None
            if follower.closed:  # closed before it was attached
                follower.closed = False
                follower._end(finish=True)
                return
            if follower.lagging:
                follower._end(finish=False)
                return
            for item in items:
                follower._deliver(item)

    def _flush_later(self, follower: Follower) -> None:
        """Send an attached follower's pending bytes once its socket can take them, in a
        thread of its own (a greenlet under gevent, whose ``select.poll`` it patches);
        after a heartbeat period without room, its client is taken for gone."""

        def flush():
            while True:
                conn = follower.conn
                if conn is None:
                    return
                poller = select.poll()
                try:
                    poller.register(conn.fileno(), select.POLLOUT)
                    ready = poller.poll(self.heartbeat * 1000)
                except (OSError, ValueError):
                    ready = []
                with self.lock:
                    if not ready:
                        follower._end(finish=False)
                        return
                    if follower._flush():
                        return

        threading.Thread(target=flush, name="events-flush", daemon=True).start()

    def close_followers(self) -> None:
        """Close every follower (they end their streams) and forget the channels."""
        with self.lock:
            for channel in list(self._channels.values()):
                for follower in list(channel.followers):
                    follower._close()
            self._channels.clear()
            self._fresh.clear()

    def stop(self) -> None:
        """Close the followers and end the thread (at its next tick)."""
        with self.lock:
            self._stopping = True
        self.close_followers()

    @property
    def followers(self) -> int:
        with self.lock:
            return sum(len(channel.followers) for channel in self._channels.values())

    # --- the subscription's thread ----------------------------------------------------
    def _run(self) -> None:
        backoff = 0.05
        while True:
            client = pubsub = None
            done = False
            try:
                client = self._connect()
                pubsub = client.pubsub()
                pubsub.psubscribe(PATTERN)
                confirmed = pubsub.get_message(timeout=self.confirm_timeout)
                if confirmed is None or confirmed.get("type") != "psubscribe":
                    raise redis.TimeoutError(f"no confirmation of the subscription: "
                                             f"{confirmed}")
                self._connected.set()
                backoff = 0.05
                done = self._serve(pubsub)  # it cleared _connected itself
            except (redis.RedisError, OSError, StorageUnavailable) as error:
                log.warning("events subscription lost: %s: %s", type(error).__name__, error)
            except Exception:
                log.exception("events subscription failed")
            finally:
                if not done:
                    self._connected.clear()
                for closing in (pubsub, client):
                    if closing is not None:
                        with contextlib.suppress(redis.RedisError, OSError):
                            closing.close()
            if done:
                return
            # Changes may have been published while the connection was down: every
            # stream of this process ends, and its client resumes from its last id.
            self.close_followers()
            with self.lock:
                if self._stopping or not self._channels:
                    self._thread = None
                    return
            time.sleep(backoff)
            backoff = min(2.0, backoff * 2)

    def _serve(self, pubsub) -> bool:
        """Read the channel until the hub has had no follower for ``linger`` seconds
        (True) or the connection fails (an exception)."""
        next_round = time.monotonic() + self.heartbeat
        next_ping, unanswered = time.monotonic() + PING_EVERY, None
        unread: dict[str, float] = {}  # games whose reading failed: when to try again
        idle_since = None
        while True:
            changed: set[str] = set()
            deleted: set[str] = set()
            message = pubsub.get_message(timeout=self.tick)
            while message is not None:
                kind = message.get("type")
                if kind == "pmessage":
                    name = message["channel"]
                    if name.startswith(_PREFIX) and name.endswith(_SUFFIX):
                        game_id = name[len(_PREFIX):-len(_SUFFIX)].decode()
                        (deleted if message["data"] == DELETED else changed).add(game_id)
                elif kind == "pong":
                    unanswered = None
                message = pubsub.get_message(timeout=0)
            now = time.monotonic()
            # A node that died without closing the connection (its host gone) sends
            # nothing more, not even an error: a PING it does not answer tells.
            if unanswered is not None and now - unanswered > self.confirm_timeout * 3:
                raise redis.TimeoutError(f"no answer to PING for {now - unanswered:.1f} s")
            if now >= next_ping:
                next_ping = now + PING_EVERY
                if unanswered is None:
                    unanswered = now
                    pubsub.ping()
            with self.lock:
                if self._stopping:
                    self._connected.clear()
                    self._thread = None
                    return True
                changed = {game_id for game_id in changed if game_id in self._channels}
                changed |= self._fresh
                self._fresh = set()
                if self._channels:
                    idle_since = None
                elif idle_since is None:
                    idle_since = now
                elif now - idle_since >= self.linger:
                    # A follower arriving from now on waits for the next thread's
                    # subscription, not this one's.
                    self._connected.clear()
                    self._thread = None
                    return True
                check = list(self._channels) if now >= next_round else ()
            for game_id in deleted:
                self._deleted(game_id)
            for game_id in changed - deleted:
                try:
                    self._changed(game_id)
                except StorageUnavailable:
                    # Its shard is failing over (or Redis is down): read it again in a
                    # while; the other games' followers go on.
                    unread[game_id] = now + REREAD_PAUSE
            if unread:
                again = {game_id for game_id, when in unread.items() if when <= now}
                for game_id in again:
                    del unread[game_id]
                with self.lock:
                    self._fresh |= again
            if check:
                next_round = now + self.heartbeat
                self._beat(now)
                # An expired game publishes nothing: look for them in a thread of their
                # own, one Redis round trip per game, while this one keeps reading.
                if self._checker is None or not self._checker.is_alive():
                    self._checker = threading.Thread(target=self._check_expired,
                                                     args=(check,), name="events-expiry",
                                                     daemon=True)
                    self._checker.start()

    def _check_expired(self, game_ids: list[str]) -> None:
        try:
            for game_id in game_ids:
                if self._stopping:
                    return  # the app is closing (its store may be closed already)
                if not self.store.exists(game_id):
                    self._deleted(game_id)
        except Exception as error:  # the next round tries again
            if not self._stopping:
                log.warning("events expiry check failed: %s: %s", type(error).__name__, error)

    def _beat(self, now: float) -> None:
        """A heartbeat to each follower that got nothing since the last round; the end
        of those past their deadline."""
        with self.lock:
            for game_id, channel in list(self._channels.items()):
                for follower in list(channel.followers):
                    if now >= follower.deadline:
                        follower._close()
                        channel.followers.discard(follower)
                        continue
                    if follower.quiet:
                        follower._push(_BEAT, self.backlog)
                    follower.quiet = True
                if not channel.followers:
                    self._channels.pop(game_id, None)

    def _deleted(self, game_id: str) -> None:
        item = (DELETED_GAME, 0, deleted_frame(game_id))
        with self.lock:
            channel = self._channels.pop(game_id, None)
            self._fresh.discard(game_id)
            if channel is not None:
                for follower in list(channel.followers):
                    follower._push(item, self.backlog)

    def _changed(self, game_id: str) -> None:
        found = self.store.load_with_journal(game_id)
        if found is None:
            self._deleted(game_id)
            return
        stored, journal = found
        with self.lock:
            channel = self._channels.get(game_id)
            if channel is None or stored.version <= channel.version:
                return  # no follower left, or nothing new
            items = []
            try:
                if channel.replayed is None or len(journal) < channel.seen:
                    # The channel starts: the last few entries too, for the followers
                    # that read the game a little earlier than the hub did.
                    channel.replayed, changes = replay(
                        stored, journal, after=max(0, stored.version - RECENT))
                    items.extend((FRAME, change.version, entry_frame(change))
                                 for change in changes)
                    items.append((SYNC, stored.version, b""))
                else:
                    items.extend((FRAME, change.version, entry_frame(change))
                                 for change in channel.replayed.run(journal[channel.seen:]))
            except Exception:
                log.exception("the journal of game %s could not be replayed", game_id)
                for follower in list(channel.followers):
                    follower._close()
                self._channels.pop(game_id, None)
                return
            channel.seen = len(journal)
            channel.version = stored.version
            if stored.record.is_over:
                items.append((END, stored.version, end_frame(game_id, stored)))
            for follower in list(channel.followers):
                for item in items:
                    follower._push(item, self.backlog)


class _Subscriber:
    """The Redis the hub subscribes on: ``REDIS_URL``'s; on a Redis Cluster
    (``redis+cluster://[user:password@]host:port[,host:port...]``) any of its nodes, since
    a ``PUBLISH`` reaches every node: the listed nodes in turn, the next one after each
    failure, so a node that is down only moves the subscription."""

    def __init__(self, url: str, options: dict):
        self.url, self.options = url, options
        self.nodes: list[tuple[str, int]] = []
        self.turn = 0
        if cluster.is_cluster_url(url):
            self.nodes, credentials = cluster.parse_cluster_url(url)
            self.options = dict(options, **credentials)

    def connect(self) -> redis.Redis:
        if not self.nodes:
            return redis.Redis.from_url(self.url, **self.options)
        host, port = self.nodes[self.turn % len(self.nodes)]
        self.turn += 1
        return redis.Redis(host=host, port=port, **self.options)


class LiveFeed:
    """The app's :class:`Hub`: ``init_app(app)`` builds it over the app's game store and
    registers the feed as ``app.extensions["live_feed"]``."""

    def __init__(self, app=None):
        self.hub: Hub | None = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app) -> None:
        config = app.config
        options = GameStore.client_options(config)
        # The subscription waits on its socket between messages: no read timeout (a
        # PING tells a silent node).  Nor does it reconnect by itself (the options'
        # Retry of none): a lost connection is the hub's to handle, on the next node.
        options["socket_timeout"] = None
        nodes = _Subscriber(config["REDIS_URL"], options)
        self.hub = Hub(app.extensions["game_store"], nodes.connect,
                       backlog=config["SSE_BACKLOG"], backlog_bytes=config["SSE_BACKLOG_BYTES"],
                       heartbeat=config["SSE_HEARTBEAT_SECONDS"],
                       confirm_timeout=config["REDIS_CONNECT_TIMEOUT"])
        app.extensions[EXTENSION] = self

    def close(self) -> None:
        if self.hub is not None:
            self.hub.stop()
