"""The test and development harness: our own Redis, crash recovery, the dev server."""

import os
import re
import shutil
import signal
import socket
import time
from pathlib import Path

import pytest
import redis
import requests

from devtools.launch import DevServer
from devtools.processes import alive
from devtools.redis_server import (
    LocalCluster,
    PortTaken,
    RedisServer,
    RedisServerError,
    free_cluster_port,
    free_port,
)
from service.app import create_app


def test_session_redis_answers(redis_server, clean_redis):
    assert redis_server.running
    assert redis_server.url == f"redis://127.0.0.1:{redis_server.port}/0"
    assert clean_redis.ping() is True
    assert clean_redis.config_get("appendonly") == {"appendonly": "yes"}
    assert clean_redis.config_get("save") == {"save": ""}
    assert clean_redis.config_get("bind") == {"bind": "127.0.0.1"}
    assert clean_redis.dbsize() == 0


def test_clean_redis_flushes_between_tests(clean_redis):
    assert clean_redis.dbsize() == 0
    clean_redis.set("left-over", "1")


def test_kill_and_restart_keeps_appendonly_data(redis_server, clean_redis, fsync_always):
    clean_redis.set("game:1", "state-7")
    clean_redis.rpush("game:1:history", "a", "b")
    old_pid = redis_server.pid

    redis_server.kill()
    assert not redis_server.running
    assert redis_server.returncode == -signal.SIGKILL
    with pytest.raises(redis.ConnectionError):
        clean_redis.ping()

    redis_server.start()
    assert redis_server.pid != old_pid
    assert clean_redis.get("game:1") == b"state-7"
    assert clean_redis.lrange("game:1:history", 0, -1) == [b"a", b"b"]


def test_without_appendonly_a_crash_loses_data(tmp_path):
    server = RedisServer(tmp_path, appendonly=False).start()
    try:
        with server.client() as client:
            client.set("k", "v")
            server.kill()
            server.start()
            assert client.get("k") is None
    finally:
        server.stop()
    assert not server.running


def test_data_dir_is_locked_while_in_use(redis_server):
    other = RedisServer(redis_server.data_dir)
    with pytest.raises(RedisServerError, match="in use"):
        other.start()
    assert not other.running


def test_start_failure_reports_redis_output(tmp_path):
    server = RedisServer(tmp_path, extra_args=("--no-such-option", "1"))
    with pytest.raises(RedisServerError, match="(?i)no-such-option"):
        server.start()
    assert not server.running


def test_create_app_healthz_and_test_config():
    app = create_app({"TESTING": True, "GAME_TTL_SECONDS": 60})
    assert app.config["GAME_TTL_SECONDS"] == 60
    response = app.test_client().get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _healthz(server: DevServer) -> requests.Response | None:
    try:
        return requests.get(f"{server.base}/healthz", timeout=2)
    except (requests.ConnectionError, requests.Timeout):  # not up yet, or still booting
        return None


def _started(server: DevServer, parts: tuple[str, ...]) -> dict[str, int]:
    """Each part of ``make run`` that runs (a gunicorn group: its master) by its pid, as
    the development server's log names it and as /proc finds it."""
    server.wait_ready()
    found = {part: pids[0] for part, pids in server.parts().items()}
    assert sorted(found) == sorted(parts), found
    logged = {"redis-server": "redis-server", "worker": "worker",
              "events group": "gunicorn events group", "request group": "gunicorn"}
    for part, pid in found.items():
        assert f"devserver: {logged[part]} pid {pid} " in server.log(), server.log()
    return found


def _cleanup(server: DevServer, pids: dict[str, int]) -> None:
    if server.process.poll() is None:
        server.process.kill()  # its children get SIGTERM from the kernel (PDEATHSIG)
        server.process.wait()
    for pid in pids.values():
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(60)
def test_devserver_runs_redis_the_worker_and_gunicorn_then_stops_them(tmp_path):
    # The worker's share a whole core: a first search that misses is followed by the
    # next at once, not by its rest (tests/api/test_worker_share.py tests the share).
    server = DevServer(tmp_path, WEB_CONCURRENCY="1", WINNABLE_POOL="salic-law=1",
                       WINNABLE_DEAL_SECONDS="1", WORKER_CPU_SHARE="1").start()
    pids: dict[str, int] = {}
    try:
        pids = _started(server, ("redis-server", "worker", "events group", "request group"))
        response = _healthz(server)
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
        redis_url = re.search(r"at (redis://\S+)", server.log()).group(1)
        with redis.Redis.from_url(redis_url) as client:
            assert client.ping() is True
            # Every acknowledged write on disk, as in production.
            assert client.config_get("appendonly") == {"appendonly": "yes"}
            assert client.config_get("appendfsync") == {"appendfsync": "always"}
            # The solver's worker fills the pool of winnable deals of that Redis.
            _wait_for(lambda: client.scard("pool:{salic-law}") == 1, 20, "a winnable seed")
        assert (tmp_path / "redis" / "redis-server.log").exists()
        key_file = tmp_path / "secret-key"  # made on the first run, the owner's only
        assert key_file.stat().st_mode & 0o777 == 0o600
        assert len(key_file.read_text().strip()) >= 32
        assert f"SECRET_KEY from {key_file}" in server.log()

        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(20) == 0, server.log()
        assert not any(alive(pid) for pid in pids.values())
        assert _healthz(server) is None
        assert "redis-server stopped" in server.log()
    finally:
        _cleanup(server, pids)


@pytest.mark.timeout(60)
def test_devserver_uses_redis_url_and_leaves_no_orphan_when_killed(tmp_path, redis_url):
    server = DevServer(tmp_path, REDIS_URL=redis_url, WEB_CONCURRENCY="1",
                       WINNABLE_POOL="clock=0").start()
    pids: dict[str, int] = {}
    try:
        pids = _started(server, ("worker", "events group", "request group"))
        assert _healthz(server).json() == {"status": "ok"}
        assert "REDIS_URL is set" in server.log()
        assert "redis-server pid" not in server.log()
        assert not (tmp_path / "redis").exists()

        server.process.kill()
        server.process.wait(5)
        _wait_for(lambda: not any(alive(pid) for pid in pids.values()), 15, "no children")
        assert _healthz(server) is None
    finally:
        _cleanup(server, pids)
        # Killed outright, it could not remove its run directory (the sockets, the
        # metrics): the test does.
        for run_dir in re.findall(r"unix:(\S*/patience-run-[^/\s]+)/", server.log()):
            shutil.rmtree(run_dir, ignore_errors=True)


def _hold(port: int) -> socket.socket:
    """Listen on ``port`` of 127.0.0.1, as another program that took it would."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def test_a_port_taken_before_the_first_start_is_exchanged_for_another(tmp_path):
    server = RedisServer(tmp_path / "redis")
    chosen = server.port
    with _hold(chosen), server:
        assert server.port != chosen
        assert server.client().ping() is True
        server.stop()
        # Once started, its port is known: it is kept, and a taken one is an error.
        with _hold(server.port), pytest.raises(PortTaken, match="Address already in use"):
            server.start()


def test_a_port_given_is_never_exchanged(tmp_path):
    port = free_port()
    with _hold(port), pytest.raises(PortTaken):
        RedisServer(tmp_path / "redis", port).start()


def test_cluster_ports_leave_room_for_each_others_bus_ports():
    ports: list[int] = []
    for _ in range(30):
        port = free_cluster_port(avoid=ports)
        assert {port, port + 10000, port - 10000}.isdisjoint(ports)
        ports.append(port)
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    if low >= 21000:  # room below the ephemeral range: both ports lie there
        assert all(port + 10000 < low for port in ports)


@pytest.mark.timeout(90)
def test_a_cluster_node_whose_port_was_taken_before_forming_moves(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", masters=3, replicas=0)
    first = cluster.nodes[0].port
    with _hold(first), cluster:
        assert cluster.nodes[0].port != first
        assert str(cluster.nodes[0].port) in cluster.url
        info = cluster.nodes[0].client().execute_command("CLUSTER", "INFO")
        assert b"cluster_state:ok" in info
