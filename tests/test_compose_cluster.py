"""docker-compose.cluster.yml: valid against the Compose Specification; nine Redis nodes
that persist every write, a one-shot service that forms the cluster of three masters with
two replicas each (run here for real, on nine local redis-server processes with the same
node configuration), three API replicas of the one gunicorn command on the cluster, the
events group, HAProxy in front checking /readyz and sending the events path to the
events group.  (tests/deploy runs the whole file on a Docker Engine.)"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import redis
import yaml

from devtools.launch import EVENTS_COMMAND, GUNICORN_COMMAND, WORKER_COMMAND
from devtools.redis_server import find_redis_cli, find_redis_server, free_cluster_port
from tests.test_compose import _check_compose_schema

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.cluster.yml"
NODES = [f"redis-{number}" for number in range(1, 10)]
NETWORK = "${REDIS_NETWORK:-172.28.0}"
APIS = ["api-1", "api-2", "api-3"]


def _compose():
    return yaml.safe_load(COMPOSE_FILE.read_text())


def test_the_cluster_compose_file_matches_the_compose_spec():
    result = _check_compose_schema(COMPOSE_FILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_nine_nodes_persist_every_write_on_fixed_addresses():
    compose = _compose()
    services = compose["services"]
    config = (ROOT / "deploy" / "redis-node.conf").read_text()
    for option in ("cluster-enabled yes", "appendonly yes", "appendfsync always",
                   "cluster-require-full-coverage no"):
        assert re.search(rf"^{option}$", config, re.MULTILINE), option
    addresses, volumes = [], set()
    for number, name in enumerate(NODES, 1):
        node = services[name]
        assert node["image"] == "${REDIS_IMAGE:-redis:7-alpine}"
        address = node["networks"]["redis"]["ipv4_address"]
        assert address == f"{NETWORK}.1{number}"
        assert node["command"] == ["redis-server", "/usr/local/etc/redis/node.conf",
                                   "--cluster-announce-ip", address, "--cluster-node-timeout",
                                   "${REDIS_CLUSTER_NODE_TIMEOUT:-5000}"]
        assert "./deploy/redis-node.conf:/usr/local/etc/redis/node.conf:ro" in node["volumes"]
        volumes |= {volume for volume in node["volumes"] if volume.endswith(":/data")}
        addresses.append(address)
        assert node["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]
        assert node["restart"] == "unless-stopped"
    assert len(set(addresses)) == len(volumes) == 9
    assert compose["networks"]["redis"]["ipam"]["config"] == [{"subnet": f"{NETWORK}.0/24"}]


def test_apis_wait_for_the_cluster_and_run_the_one_gunicorn_command():
    services = _compose()["services"]
    for name in APIS:
        api = services[name]
        assert tuple(api["command"]) == GUNICORN_COMMAND
        assert api["depends_on"]["cluster-init"]["condition"] == \
            "service_completed_successfully"
        environment = api["environment"]
        # Every node is a startup node: the client finds the cluster whichever is down.
        assert environment["REDIS_URL"] == \
            "redis+cluster://" + ",".join(f"{node}:6379" for node in NODES)
        assert environment["REDIS_WAIT_REPLICAS"] == "${REDIS_WAIT_REPLICAS:-1}"
        assert environment["TRUST_PROXY"] == "true"
        assert environment["SECRET_KEY"].startswith("${SECRET_KEY:?")  # one for all
        assert "/readyz" in " ".join(api["healthcheck"]["test"])
        assert api["networks"] == ["redis", "front"]
    assert services["cluster-init"]["restart"] == "no"


def test_api_events_and_worker_share_one_image_built_on_the_chosen_base():
    services = _compose()["services"]
    for name in (*APIS, "events", "worker"):
        assert services[name]["image"] == "${APP_IMAGE:-patience-server:latest}", name
        assert services[name]["build"] == {
            "context": ".", "args": {"PYTHON_IMAGE": "${PYTHON_IMAGE:-python:3.11-slim}"}}


def test_the_events_group_serves_streams_on_the_cluster_with_a_variable_open_file_limit():
    services = _compose()["services"]
    events, api = services["events"], services["api-1"]
    assert tuple(events["command"]) == EVENTS_COMMAND
    environment = events["environment"]
    assert environment["EVENTS_BIND"] == "0.0.0.0:8001"
    assert "EVENTS_HANDOFF_SOCKET" not in environment  # HAProxy routes streams to it
    for name in ("REDIS_URL", "SECRET_KEY", "REDIS_WAIT_REPLICAS"):
        assert environment[name] == api["environment"][name], name
    assert events["depends_on"] == api["depends_on"]
    assert events["networks"] == ["redis", "front"]
    assert events["ulimits"]["nofile"] == {"soft": "${EVENTS_NOFILE:-16384}",
                                           "hard": "${EVENTS_NOFILE:-16384}"}
    assert "8001/readyz" in " ".join(events["healthcheck"]["test"])
    lb = services["lb"]
    assert lb["depends_on"]["events"] == {"condition": "service_started"}
    assert lb["ulimits"]["nofile"] == {"soft": "${LB_NOFILE:-16384}",
                                       "hard": "${LB_NOFILE:-16384}"}


def test_haproxy_balances_the_three_apis_and_the_events_group_on_readyz():
    lb = _compose()["services"]["lb"]
    assert lb["image"] == "${HAPROXY_IMAGE:-haproxy:2.9-alpine}"
    assert "./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in lb["volumes"]
    assert lb["ports"] == ["${PORT:-8000}:8000"]
    config = (ROOT / "deploy" / "haproxy.cfg").read_text()
    backends = re.split(r"^backend ", config, flags=re.MULTILINE)[1:]
    assert [backend.split()[0] for backend in backends] == ["api", "events"]
    for backend in backends:
        assert "option httpchk GET /readyz" in backend
        assert "http-check expect status 200" in backend
    assert re.findall(r"^\s*server (api-\d) \1:8000$", backends[0], re.MULTILINE) == APIS
    assert re.findall(r"^\s*server (\S+) (\S+)$", backends[1], re.MULTILINE) == \
        [("events", "events:8001")]
    # The events path, and only it, goes to the events group.
    pattern = re.search(r"acl events_path path_reg (\S+)$", config, re.MULTILINE).group(1)
    assert "use_backend events if METH_GET events_path" in config
    assert "default_backend api" in config
    assert re.search(pattern, "/v1/games/Vx3kQ9rT2mLpW8nB4yZc1A/events")
    for path in ("/v1/games/Vx3kQ9rT2mLpW8nB4yZc1A", "/v1/games/x/events/more",
                 "/v1/games/Vx3kQ9rT2mLpW8nB4yZc1A/history", "/v1/games"):
        assert not re.search(pattern, path), path
    # Only reads and keyed writes are sent again once a server had them.
    assert "http-request disable-l7-retry if !METH_GET !{ req.hdr(idempotency-key) -m found }" \
        in config
    haproxy = shutil.which("haproxy")
    if haproxy:  # Debian's haproxy, when installed, checks the whole file
        result = subprocess.run([haproxy, "-c", "-f", str(ROOT / "deploy" / "haproxy.cfg")],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.timeout(90)
def test_cluster_init_forms_three_masters_with_two_replicas_once_then_only_waits(tmp_path):
    """The init script, run with sh against nine local nodes started with the compose
    file's node configuration, on the loopback addresses 127.0.0.11 to .19 (the
    network's numbers) and a free port of their own."""
    hosts = [f"127.0.0.1{number}" for number in range(1, 10)]
    port = free_cluster_port(hosts[0], also_on=hosts[1:])  # free on every one of them
    # What compose does to the script: its variables, then $$ -> $.
    script = _compose()["services"]["cluster-init"]["command"][-1]
    script = script.replace(NETWORK, "127.0.0").replace("$$", "$")
    script = script.replace(":6379", f":{port}").replace("redis-cli -h", f"redis-cli -p {port} -h")
    assert "${" not in script.replace("${master", "").replace("${address", "")
    binary = find_redis_server()
    processes = []
    try:
        for host in hosts:
            folder = tmp_path / host
            folder.mkdir()
            processes.append(subprocess.Popen(
                [binary, str(ROOT / "deploy" / "redis-node.conf"), "--port", str(port),
                 "--dir", str(folder), "--bind", host, "--daemonize", "no",
                 "--cluster-node-timeout", "2000", "--logfile", str(folder / "redis.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        environment = dict(os.environ, PATH=f"{Path(find_redis_cli(binary)).parent}:"
                                            f"{os.environ['PATH']}")
        outputs = []
        for _run in range(2):  # the second run finds the cluster formed
            result = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                                    timeout=60, env=environment)
            assert result.returncode == 0, result.stdout + result.stderr
            assert "cluster_state:ok" in result.stdout
            assert "cluster_slots_ok:16384" in result.stdout
            assert "cluster_known_nodes:9" in result.stdout
            outputs.append(result.stdout)
        assert "[OK] All 16384 slots covered" in outputs[0]
        assert "slots covered" not in outputs[1]  # formed once only
        masters = {}
        for host in hosts:
            with redis.Redis(host=host, port=port) as client:
                role = client.execute_command("ROLE")
                if role[0] == b"master":
                    # The first run waited until both replicas were attached.
                    masters[host] = len(role[2])
        assert masters == {"127.0.0.11": 2, "127.0.0.12": 2, "127.0.0.13": 2}
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_the_solver_worker_runs_the_worker_command_on_the_cluster():
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    worker, api = services["worker"], services["api-1"]
    assert tuple(worker["command"]) == WORKER_COMMAND
    assert worker["environment"]["REDIS_URL"] == api["environment"]["REDIS_URL"]
    assert worker["environment"]["REDIS_URL"].startswith("redis+cluster://")
    assert "SECRET_KEY" not in worker["environment"]  # no Flask app: it needs none
    assert worker["depends_on"] == api["depends_on"]
    assert worker["healthcheck"] == {"disable": True}
