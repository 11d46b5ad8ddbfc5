"""service.storage.cluster: the URL; the one Connections interface of both modes; on the
session's Redis Cluster, a command that follows a slot moved since the client read the map."""

import inspect

import pytest

from service.storage.backend import client_options
from service.storage.cluster import ClusterConnections, is_cluster_url, parse_cluster_url
from service.storage.connections import Connections, PooledConnections, ThreadConnections


def _options():
    return client_options({"REDIS_SOCKET_TIMEOUT": 1.0, "REDIS_CONNECT_TIMEOUT": 1.0,
                           "REDIS_HEALTH_CHECK_INTERVAL": 30})


def test_cluster_urls_name_their_nodes_and_credentials():
    assert is_cluster_url("redis+cluster://a:1")
    assert not is_cluster_url("redis://a:1/0")
    assert parse_cluster_url("redis+cluster://a:7000,b:7001, c:7002") == (
        [("a", 7000), ("b", 7001), ("c", 7002)], {})
    assert parse_cluster_url("redis+cluster://u:p%40ss@a:1") == (
        [("a", 1)], {"username": "u", "password": "p@ss"})
    for wrong in ("redis://a:1", "redis+cluster://a", "redis+cluster://a:x,b:2"):
        with pytest.raises(ValueError, match="URL"):
            parse_cluster_url(wrong)


@pytest.mark.parametrize("connections",
                         [ThreadConnections, PooledConnections, ClusterConnections])
def test_every_mode_s_connections_take_the_calls_of_the_protocol(connections):
    """The store calls each mode's connections through Connections alone: each class has
    every method of it, with the same parameters (names and kinds)."""
    methods = [name for name, value in vars(Connections).items()
               if inspect.isfunction(value) and not name.startswith("_")]
    assert sorted(methods) == ["close", "execute", "run", "transaction"]
    def shape(function):
        return [(parameter.name, parameter.kind)
                for parameter in inspect.signature(function).parameters.values()]

    for name in methods:
        assert shape(getattr(connections, name)) == shape(getattr(Connections, name)), name


def test_a_command_follows_a_moved_slot(redis_cluster):
    """The slot map of the connections is stale on purpose: MOVED sets it right."""
    connections = ClusterConnections(redis_cluster.url, _options())
    try:
        key = "game:{moved}"
        connections.execute("SET", key, "1")
        manager = connections.client.nodes_manager
        slot = connections.client.keyslot(key)
        owner = manager.slots_cache[slot][0]
        other = next(node for node in manager.nodes_cache.values()
                     if node.name != owner.name and node.server_type == "primary")
        manager.slots_cache[slot] = [other]  # as if the slot had moved
        assert connections.execute("GET", key) == b"1"
        assert manager.slots_cache[slot][0].name == owner.name
        connections.execute("DEL", key)
    finally:
        connections.close()
