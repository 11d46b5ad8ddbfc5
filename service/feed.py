"""The live feed: each game's pub/sub channel (:func:`service.keys.channel`), on which
the write script of :mod:`service.store` publishes every change (the new version, or
``deleted``).  Events streams (:mod:`service.events`) subscribe here and wait on it.

On a Redis Cluster a ``PUBLISH`` reaches every node: a stream subscribes on the master
of its game's slot, through a pool of that node (made when first needed)."""

from __future__ import annotations

import contextlib
import threading

import redis

from service import cluster, keys
from service.store import GameStore, _storage_errors

EXTENSION = "live_feed"

#: What a delete publishes on the game's channel (a change publishes its version).
DELETED = b"deleted"


class Subscription:
    """The pub/sub channel of one game, for an events stream: :meth:`wait` returns what
    was published since (versions as ints, :data:`DELETED`), :meth:`close` gives the
    connection back."""

    def __init__(self, pubsub):
        self._pubsub = pubsub

    @_storage_errors
    def wait(self, seconds: float) -> list:
        """What the game's channel carried, waiting up to ``seconds`` for the first
        message (an empty list if none came)."""
        found = []
        message = self._pubsub.get_message(ignore_subscribe_messages=True,
                                           timeout=max(0.001, seconds))
        while message is not None:
            data = message.get("data")
            if message.get("type") == "message":
                found.append(DELETED if data == DELETED else int(data))
            message = self._pubsub.get_message(ignore_subscribe_messages=True, timeout=0)
        return found

    def close(self) -> None:
        with contextlib.suppress(redis.RedisError, OSError):
            self._pubsub.close()


class LiveFeed:
    """Subscriptions to games' channels.  ``init_app(app)`` builds the streams' pool from
    the app's config and registers the feed as ``app.extensions["live_feed"]``."""

    def __init__(self, app=None):
        self.stream_client: redis.Redis | None = None
        self._confirm_timeout = 1.0
        self._store: GameStore | None = None
        self._stream_options: dict = {}
        self._node_clients: dict[tuple[str, int], redis.Redis] = {}
        self._lock = threading.Lock()
        if app is not None:
            self.init_app(app)

    def init_app(self, app) -> None:
        config = app.config
        self._confirm_timeout = float(config["REDIS_SOCKET_TIMEOUT"])
        # Events streams wait on their game's channel, each holding a connection for as
        # long as it is open: a pool of their own, one connection per stream the process
        # admits (service.events caps them), with a socket timeout past the heartbeat.
        stream_options = GameStore.client_options(config)
        stream_options["socket_timeout"] = (float(config["SSE_HEARTBEAT_SECONDS"])
                                            + float(config["REDIS_SOCKET_TIMEOUT"]) + 1.0)
        stream_options["max_connections"] = max(1, int(config["SSE_MAX_STREAMS"]))
        stream_options["timeout"] = float(config["REDIS_CONNECT_TIMEOUT"])
        if cluster.is_cluster_url(config["REDIS_URL"]):
            self._store = app.extensions["game_store"]
            self._stream_options = dict(stream_options,
                                        **cluster.parse_cluster_url(config["REDIS_URL"])[1])
        else:
            pool = redis.BlockingConnectionPool.from_url(config["REDIS_URL"], **stream_options)
            self.stream_client = redis.Redis(connection_pool=pool)
        app.extensions[EXTENSION] = self

    def _client_for(self, game_id: str) -> redis.Redis:
        if self._store is None:
            return self.stream_client
        address = self._store.node_of(keys.channel(game_id))
        with self._lock:
            client = self._node_clients.get(address)
            if client is None:
                pool = redis.BlockingConnectionPool(host=address[0], port=address[1],
                                                    **self._stream_options)
                client = self._node_clients[address] = redis.Redis(connection_pool=pool)
        return client

    def close(self) -> None:
        with self._lock:
            clients = [self.stream_client, *self._node_clients.values()]
            self._node_clients = {}
        for client in clients:
            if client is not None:
                client.close()
                client.connection_pool.disconnect()

    @_storage_errors
    def subscribe(self, game_id: str) -> Subscription:
        """A subscription to the game's channel, on a connection of the streams' pool:
        subscribe first, then read the game, and no change can slip between the two."""
        pubsub = self._client_for(game_id).pubsub()
        try:
            pubsub.subscribe(keys.channel(game_id))
            # Redis confirms the subscription once it is in force: only then may the
            # game be read (a read on another connection could be served first).
            confirmed = pubsub.get_message(timeout=self._confirm_timeout)
            if confirmed is None or confirmed.get("type") != "subscribe":
                raise redis.TimeoutError(f"no confirmation of the subscription: {confirmed}")
        except BaseException:
            pubsub.close()
            raise
        return Subscription(pubsub)

