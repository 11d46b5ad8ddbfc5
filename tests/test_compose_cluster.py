"""docker-compose.cluster.yml: valid against the Compose Specification; six Redis nodes
that persist every write, a one-shot service that forms the cluster (run here for real,
on six local redis-server processes with the same node configuration), three API
replicas of the one gunicorn command on the cluster, HAProxy in front checking
/readyz."""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis
import yaml

from service.launch import GUNICORN_COMMAND, WORKER_COMMAND
from service.redis_server import find_redis_cli, find_redis_server, free_cluster_port
from tests.test_compose import _check_compose_schema

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.cluster.yml"
NODES = [f"redis-{number}" for number in range(1, 7)]
APIS = ["api-1", "api-2", "api-3"]


def _compose():
    return yaml.safe_load(COMPOSE_FILE.read_text())


def test_the_cluster_compose_file_matches_the_compose_spec():
    result = _check_compose_schema(COMPOSE_FILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_six_nodes_persist_every_write_on_fixed_addresses():
    services = _compose()["services"]
    config = (ROOT / "deploy" / "redis-node.conf").read_text()
    for option in ("cluster-enabled yes", "appendonly yes", "appendfsync always"):
        assert re.search(rf"^{option}$", config, re.MULTILINE), option
    addresses, volumes = set(), set()
    for name in NODES:
        node = services[name]
        assert node["image"] == "redis:7-alpine"
        address = node["networks"]["redis"]["ipv4_address"]
        assert node["command"] == ["redis-server", "/usr/local/etc/redis/node.conf",
                                   "--cluster-announce-ip", address]
        assert "./deploy/redis-node.conf:/usr/local/etc/redis/node.conf:ro" in node["volumes"]
        volumes |= {volume for volume in node["volumes"] if volume.endswith(":/data")}
        addresses.add(address)
        assert node["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]
    assert len(addresses) == len(volumes) == 6


def test_apis_wait_for_the_cluster_and_run_the_one_gunicorn_command():
    services = _compose()["services"]
    for name in APIS:
        api = services[name]
        assert tuple(api["command"]) == GUNICORN_COMMAND
        assert api["depends_on"]["cluster-init"]["condition"] == \
            "service_completed_successfully"
        environment = api["environment"]
        assert environment["REDIS_URL"].startswith("redis+cluster://redis-1:6379,")
        assert environment["TRUST_PROXY"] == "true"
        assert environment["SECRET_KEY"].startswith("${SECRET_KEY:?")  # one for all
        assert "/readyz" in " ".join(api["healthcheck"]["test"])
    assert services["cluster-init"]["restart"] == "no"


def test_haproxy_balances_the_three_apis_on_readyz():
    lb = _compose()["services"]["lb"]
    assert lb["image"].startswith("haproxy:")
    assert "./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in lb["volumes"]
    config = (ROOT / "deploy" / "haproxy.cfg").read_text()
    assert "option httpchk GET /readyz" in config
    assert "http-check expect status 200" in config
    assert re.findall(r"^\s*server (api-\d) \1:8000$", config, re.MULTILINE) == APIS
    haproxy = shutil.which("haproxy")
    if haproxy:  # Debian's haproxy, when installed, checks the whole file
        result = subprocess.run([haproxy, "-c", "-f", str(ROOT / "deploy" / "haproxy.cfg")],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(60)
def test_cluster_init_forms_the_cluster_once_then_only_waits(tmp_path):
    """The init script, run with sh against six local nodes started with the compose
    file's node configuration (the addresses replaced by local ones)."""
    script = _compose()["services"]["cluster-init"]["command"][-1].replace("$$", "$")
    ports = [free_cluster_port() for _ in NODES]
    for number, port in enumerate(ports, 1):
        script = script.replace(f"172.28.0.1{number}:6379", f"127.0.0.1:{port}")
    script = script.replace("-h 172.28.0.11", f"-h 127.0.0.1 -p {ports[0]}")
    assert "172.28" not in script
    binary = find_redis_server()
    processes = []
    try:
        for port in ports:
            folder = tmp_path / str(port)
            folder.mkdir()
            processes.append(subprocess.Popen(
                [binary, str(ROOT / "deploy" / "redis-node.conf"), "--port", str(port),
                 "--dir", str(folder), "--bind", "127.0.0.1", "--daemonize", "no",
                 "--logfile", str(folder / "redis.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for port in ports:
            _wait_for_ping(port)
        environment = dict(os.environ, PATH=f"{Path(find_redis_cli(binary)).parent}:"
                                            f"{os.environ['PATH']}")
        outputs = []
        for _run in range(2):  # the second run finds the cluster formed
            result = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                                    timeout=40, env=environment)
            assert result.returncode == 0, result.stdout + result.stderr
            assert "cluster_state:ok" in result.stdout
            assert "cluster_slots_ok:16384" in result.stdout
            outputs.append(result.stdout)
        assert "[OK] All 16384 slots covered" in outputs[0]
        assert "slots covered" not in outputs[1]  # formed once only
        roles = []
        for port in ports:
            with redis.Redis(port=port) as client:
                roles.append(client.execute_command("ROLE")[0])
        assert sorted(roles) == [b"master"] * 3 + [b"slave"] * 3
    finally:
        for process in processes:
            process.kill()
            process.wait()


def _wait_for_ping(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            with redis.Redis(port=port, socket_timeout=1) as client:
                if client.ping():
                    return
        except redis.ConnectionError:
            pass
        assert time.monotonic() < deadline, f"no redis-server on {port}"
        time.sleep(0.05)


def test_the_solver_worker_runs_the_worker_command_on_the_cluster():
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    worker, api = services["worker"], services["api-1"]
    assert tuple(worker["command"]) == WORKER_COMMAND
    assert worker["environment"]["REDIS_URL"] == api["environment"]["REDIS_URL"]
    assert worker["environment"]["REDIS_URL"].startswith("redis+cluster://")
    assert worker["depends_on"] == api["depends_on"]
    assert worker["healthcheck"] == {"disable": True}
