"""Shared fixtures. Redis here is always our own redis-server, never another one.

A test marked ``cluster`` runs twice: on the session's Redis and on the session's Redis
Cluster (3 masters, 3 replicas, started once); its ``backend`` parameter says which.
"""

import contextlib
import os
import sys

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from xdist.scheduler import LoadScopeScheduling

from devtools.redis_server import LocalCluster, RedisServer
from service.config import SETTINGS, variable
from service.engine.search.solver import MAX_DEPTH

BACKENDS = ("redis", "cluster")

# The deploy tests' figures, summed up where the terminal is (see the module).
pytest_plugins = ("tests.deploy.figures",)


def pytest_configure(config):
    # The solver raises the recursion limit on its first search in a process, as the
    # service's processes do. Hypothesis fails a test during which the limit changes, so
    # each test process raises it at the start, whichever test searches first.
    sys.setrecursionlimit(max(sys.getrecursionlimit(), MAX_DEPTH + 1000))


class _DeployTestsTogether(LoadScopeScheduling):
    """pytest-xdist's load scheduling, test by test, but the deploy tests are one unit
    of work: they share one Docker Engine and run one after another on one worker.  As
    the largest unit, it is handed out first, so they run beside the rest."""

    def _split_scope(self, nodeid: str) -> str:
        return "tests/deploy" if nodeid.startswith("tests/deploy/") else nodeid


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent with -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "load":
        return _DeployTestsTogether(config, log)
    return None


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("cluster"):
        metafunc.parametrize("backend", BACKENDS)


#: The environment variables the service reads its settings from.
SETTING_VARIABLES = sorted({variable(name) for name in SETTINGS})


@pytest.fixture(autouse=True)
def _settings_left_as_found():
    """Every test leaves the service's settings in this process's environment as it found
    them: an app made later in the process (a module's app, made again on an xdist worker
    for each run of its tests) reads every setting its test does not give from there.
    One left changed is put back and the test that changed it errors, naming it (never
    its value): a setting for a child process goes in the child's environment, one for a
    test through ``monkeypatch``."""
    before = {name: os.environ.get(name) for name in SETTING_VARIABLES}
    yield
    changed = [name for name in SETTING_VARIABLES if os.environ.get(name) != before[name]]
    for name in changed:
        if before[name] is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before[name]
    if changed:
        pytest.fail(f"the test left the service's settings {', '.join(changed)} changed in "
                    "this process's environment (put back now)", pytrace=False)


@pytest.fixture
def backend():
    """Where the test's Redis is: ``redis`` (one server) unless marked ``cluster``."""
    return "redis"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real Redis for the whole session: append-only (fsync every second), on a free
    port, files in a temporary directory. ``.kill()`` crashes it (SIGKILL) and
    ``.start()`` brings it back on the same port and files."""
    server = RedisServer(tmp_path_factory.mktemp("redis"), appendonly=True, appendfsync="everysec")
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory):
    """A real Redis Cluster for the whole session: 3 masters with a replica each, every
    node a redis-server process on free ports with its files in a temporary directory.
    Tests must leave it whole (a test that kills nodes starts a cluster of its own)."""
    nodes = LocalCluster(tmp_path_factory.mktemp("cluster"), node_timeout_ms=2000)
    nodes.start()
    yield nodes
    nodes.stop()


class WholeClusterClient(RedisCluster):
    """A RedisCluster whose KEYS and DBSIZE ask every master (redis-py asks one), so a
    test sees the keys of the whole cluster."""

    def keys(self, pattern="*", **kwargs):
        return self.execute_command("KEYS", pattern, target_nodes=self.PRIMARIES, **kwargs)

    def dbsize(self, **kwargs):
        return self.execute_command("DBSIZE", target_nodes=self.PRIMARIES, **kwargs)


def cluster_client(nodes: LocalCluster) -> RedisCluster:
    """A client of ``nodes`` that sees the whole cluster (the caller closes it)."""
    return WholeClusterClient(startup_nodes=[ClusterNode(node.host, node.port)
                                             for node in nodes.nodes if node.running])


def _ensure_running(server):
    if not server.running:  # an earlier test crashed it and did not bring it back
        server.start()
    return server


@pytest.fixture
def redis_url(request, backend):
    if backend == "cluster":
        return request.getfixturevalue("redis_cluster").url
    return _ensure_running(request.getfixturevalue("redis_server")).url


@pytest.fixture
def clean_redis(request, backend):
    """A client of the session's Redis (or Redis Cluster), emptied (FLUSHALL) before the
    test; restarts the server first if an earlier test left it down."""
    if backend == "cluster":
        nodes = request.getfixturevalue("redis_cluster")
        nodes.flushall()
        client = cluster_client(nodes)
    else:
        client = redis.Redis.from_url(_ensure_running(request.getfixturevalue("redis_server")).url)
        client.flushall()
    yield client
    client.close()


@pytest.fixture
def fsync_always(redis_server, clean_redis):
    """The session's Redis writing and fsyncing every write before it answers
    (``appendfsync always``) for one test that SIGKILLs it and wants every
    acknowledged write back.  With ``everysec``, Redis answers a write and may write it
    to its file up to two seconds later while an fsync is slow (a busy disk), and a
    SIGKILL then loses it.  The server comes back with ``everysec``, its setting."""
    clean_redis.config_set("appendfsync", "always")
    yield
    with contextlib.suppress(redis.ConnectionError):
        clean_redis.config_set("appendfsync", "everysec")
