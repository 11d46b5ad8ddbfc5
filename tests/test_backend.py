"""service.storage.backend: the backend the URL chooses, its ping, its statistics, its
subscription's connections, and the one way every script runs (a Redis that has not got
the script gets it); the solver's worker, built without Flask."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import redis

from service.storage import keys
from service.storage.backend import (
    ClusterRedis,
    Script,
    SingleRedis,
    client_options,
    open_backend,
)
from service.storage.game_store import OK, GameStore
from service.storage.scripts import COMMIT
from tests.solver_worker import WorkerProcess

OPTIONS = {"REDIS_SOCKET_TIMEOUT": 2.0, "REDIS_CONNECT_TIMEOUT": 2.0,
           "REDIS_HEALTH_CHECK_INTERVAL": 30}


@pytest.fixture
def opened(redis_url, clean_redis):
    backend = open_backend(redis_url, client_options(OPTIONS))
    yield backend
    backend.close()


def _store(backend, **kwargs) -> GameStore:
    return GameStore(backend, decode=lambda version, record: (version, record), game_ttl=60,
                     idempotency_ttl=60, **kwargs)


@pytest.fixture
def flush_scripts(request, backend, clean_redis):
    """SCRIPT FLUSH on every node of the test's Redis; then whether any has the script
    of ``sha`` still."""
    if backend == "cluster":
        nodes = [redis.Redis(host=node.host, port=node.port)
                 for node in request.getfixturevalue("redis_cluster").nodes if node.running]
    else:
        nodes = [clean_redis]

    def flush(sha: str) -> bool:
        for node in nodes:
            node.script_flush()
        return any(node.script_exists(sha)[0] for node in nodes)

    yield flush
    for node in nodes:
        if node is not clean_redis:
            node.close()


def test_the_url_chooses_the_backend_once():
    """Nothing connects yet: a backend of an unreachable Redis is made all the same."""
    options = client_options(OPTIONS)
    single = open_backend("redis://127.0.0.1:1/0", options)
    cluster = open_backend("redis+cluster://127.0.0.1:1,127.0.0.1:2", options)
    try:
        assert isinstance(single, SingleRedis)
        assert single.default_wait_replicas == 0
        assert isinstance(cluster, ClusterRedis)
        assert cluster.default_wait_replicas == 1
        assert single.stats_key(keys.STATS, keys.game("a")) == keys.STATS
        assert cluster.stats_key(keys.STATS, keys.game("a")).startswith(keys.STATS + ":{")
        assert _store(single).wait_replicas == 0
        assert _store(cluster).wait_replicas == 1
        assert _store(cluster, wait_replicas=0).wait_replicas == 0
        with pytest.raises(redis.ConnectionError):
            single.ping()
    finally:
        single.close()
        cluster.close()


@pytest.mark.cluster
def test_ping_and_the_statistics_of_every_slot(opened, backend):
    opened.ping()
    store = _store(opened)
    ids = [f"game-{number}" for number in range(12)]  # spread over the slots
    for game_id in ids:
        result = store.commit(game_id, expected=None, version=0, record={"n": 1},
                              stat=keys.stat("clock", "created"))
        assert result.outcome == OK
    store.commit(ids[0], expected=0, version=1, record={"n": 2},
                 stat=keys.stat("clock", "won"))
    if backend == "cluster":
        assert len({opened.stats_key(keys.STATS, keys.game(game_id)) for game_id in ids}) > 1
    assert opened.read_stats(keys.STATS) == {
        keys.stat("clock", "created").encode(): 12, keys.stat("clock", "won").encode(): 1}
    assert store.stats() == {keys.stat("clock", "created"): 12, keys.stat("clock", "won"): 1}
    assert store.load(ids[0]) == (1, {"n": 2})


@pytest.mark.cluster
def test_a_redis_without_the_scripts_gets_them(opened, flush_scripts):
    """SCRIPT FLUSH (as a new or restarted Redis): a write, alone or confirmed by WAIT,
    still runs once."""
    store = _store(opened)  # on the cluster: a WAIT for one replica
    assert store.commit("g", expected=None, version=0, record={"n": 0}).outcome == OK
    assert not flush_scripts(Script(COMMIT).sha)
    assert store.commit("g", expected=0, version=1, record={"n": 1}).outcome == OK
    assert store.load("g") == (1, {"n": 1})
    flush_scripts(Script(COMMIT).sha)
    alone = _store(opened, wait_replicas=0)
    assert alone.commit("g", expected=1, version=2, record={"n": 2}).outcome == OK
    assert alone.load("g") == (2, {"n": 2})
    echo = Script("return ARGV[1]")
    flush_scripts(echo.sha)
    reply, waited = echo.run_then(opened.connections, ["{k}a"], ["hi"], ("WAIT", 0, 100))
    assert reply == b"hi"
    assert waited >= 0
    assert echo.run(opened.connections, ["{k}a"], ["again"]) == b"again"


@pytest.mark.cluster
def test_the_subscription_connects_to_a_node_of_the_redis(opened, redis_url, backend):
    connect = opened.subscriber()
    first, second = connect(), connect()
    try:
        assert first.ping()
        assert second.ping()
        if backend == "cluster":  # the listed nodes in turn
            assert first.connection_pool.connection_kwargs["port"] != \
                second.connection_pool.connection_kwargs["port"]
    finally:
        first.close()
        second.close()


def test_the_worker_imports_no_flask():
    code = "import service.solver.worker, sys; assert 'flask' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_worker_starts_without_a_secret_key(redis_url, clean_redis, tmp_path, monkeypatch):
    monkeypatch.delenv("SECRET_KEY", raising=False)
    with WorkerProcess(redis_url, tmp_path / "worker.log", WINNABLE_POOL="") as worker:
        assert "SECRET_KEY" not in worker.env
        assert worker.process.poll() is None
    assert os.environ.get("SECRET_KEY") is None
