"""Shared fixtures. Redis here is always our own redis-server, never another one."""

import pytest
import redis

from service.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real Redis for the whole session: append-only (fsync every second), on a free
    port, files in a temporary directory. ``.kill()`` crashes it (SIGKILL) and
    ``.start()`` brings it back on the same port and files."""
    server = RedisServer(tmp_path_factory.mktemp("redis"), appendonly=True, appendfsync="everysec")
    server.start()
    yield server
    server.stop()


def _ensure_running(server):
    if not server.running:  # an earlier test crashed it and did not bring it back
        server.start()
    return server


@pytest.fixture
def redis_url(redis_server):
    return _ensure_running(redis_server).url


@pytest.fixture
def clean_redis(redis_server):
    """A client of the session's Redis, emptied (FLUSHALL) before the test; restarts the
    server first if an earlier test left it down."""
    client = redis.Redis.from_url(_ensure_running(redis_server).url)
    client.flushall()
    yield client
    client.close()
