"""docker-compose.cluster.yml: valid against the Compose Specification; nine Redis nodes
that persist every write, a one-shot service that forms the cluster of three masters with
two replicas each (run here for real, on nine local redis-server processes with the same
node configuration), three API replicas of the one gunicorn command on the cluster, the
events group (two containers), HAProxy in front checking /readyz and sending the events
path to the events containers.  (tests/deploy runs the whole file on a Docker Engine.)"""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis
import yaml

from devtools.launch import EVENTS_COMMAND, GUNICORN_COMMAND, WORKER_COMMAND
from devtools.redis_server import find_redis_cli, find_redis_server, free_cluster_port
from tests.test_compose import (
    _check_compose_schema,
    limited_and_rotated,
    published_on_loopback_only,
    secrets_are_files_never_variables,
    settings_the_worker_lacks,
    worker_checks_its_heartbeat,
)

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.cluster.yml"
NODES = [f"redis-{number}" for number in range(1, 10)]
NETWORK = "${REDIS_NETWORK:-172.28.0}"
APIS = ["api-1", "api-2", "api-3"]
EVENTS = ["events-1", "events-2"]


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
                   "cluster-require-full-coverage no", "maxmemory-policy noeviction"):
        assert re.search(rf"^{option}$", config, re.MULTILINE), option
    addresses, volumes = [], set()
    for number, name in enumerate(NODES, 1):
        node = services[name]
        assert node["image"] == "${REDIS_IMAGE:-redis:7-alpine}"
        address = node["networks"]["redis"]["ipv4_address"]
        assert address == f"{NETWORK}.1{number}"
        assert node["command"] == ["sh", "/usr/local/bin/redis-start.sh",
                                   "/usr/local/etc/redis/node.conf",
                                   "--include", "/usr/local/etc/redis/tls.conf",
                                   "--cluster-announce-ip", address, "--cluster-node-timeout",
                                   "${REDIS_CLUSTER_NODE_TIMEOUT:-5000}",
                                   "--maxmemory", "${REDIS_MAXMEMORY:-1gb}"]
        assert "./deploy/redis-node.conf:/usr/local/etc/redis/node.conf:ro" in node["volumes"]
        assert "./deploy/redis-tls.conf:/usr/local/etc/redis/tls.conf:ro" in node["volumes"]
        volumes |= {volume for volume in node["volumes"] if volume.endswith(":/data")}
        addresses.append(address)
        # Healthy while the cluster serves every slot (a node that answers PING may not).
        assert node["healthcheck"]["test"] == [
            "CMD-SHELL", 'REDISCLI_AUTH="$$(cat /run/secrets/redis_password)" '
                         "redis-cli cluster info | grep -q '^cluster_state:ok'"]
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
        assert environment["SECRET_KEY_FILE"] == "/run/secrets/secret_key"  # one for all
        assert "/readyz" in " ".join(api["healthcheck"]["test"])
        assert api["networks"] == ["redis", "front"]
    assert services["cluster-init"]["restart"] == "no"


def test_api_events_and_worker_share_one_image_built_on_the_chosen_base():
    services = _compose()["services"]
    for name in (*APIS, *EVENTS, "worker"):
        assert services[name]["image"] == "${APP_IMAGE:-patience-server:latest}", name
        assert services[name]["build"] == {
            "context": ".", "args": {"PYTHON_IMAGE": "${PYTHON_IMAGE:-python:3.11-slim}"}}


def test_two_events_containers_serve_streams_on_the_cluster_with_a_variable_open_file_limit():
    services = _compose()["services"]
    assert sorted(name for name in services if name.startswith("events")) == EVENTS
    assert services["events-1"] == services["events-2"]  # one anchor
    events, api = services["events-1"], services["api-1"]
    assert tuple(events["command"]) == EVENTS_COMMAND
    environment = events["environment"]
    assert environment["EVENTS_BIND"] == "0.0.0.0:8001"
    assert "EVENTS_HANDOFF_SOCKET" not in environment  # HAProxy routes streams to it
    for name in ("REDIS_URL", "SECRET_KEY_FILE", "REDIS_USERNAME", "REDIS_PASSWORD_FILE",
                 "REDIS_WAIT_REPLICAS"):
        assert environment[name] == api["environment"][name], name
    assert events["depends_on"] == api["depends_on"]
    assert events["networks"] == ["redis", "front"]
    assert events["ulimits"]["nofile"] == {"soft": "${EVENTS_NOFILE:-16384}",
                                           "hard": "${EVENTS_NOFILE:-16384}"}
    assert "8001/readyz" in " ".join(events["healthcheck"]["test"])
    lb = services["lb"]
    for name in EVENTS:
        assert lb["depends_on"][name] == {"condition": "service_started"}
    assert lb["ulimits"]["nofile"] == {"soft": "${LB_NOFILE:-16384}",
                                       "hard": "${LB_NOFILE:-16384}"}


def test_only_the_load_balancer_is_published_on_loopback_its_stats_behind_a_password():
    compose = _compose()
    lb = compose["services"]["lb"]
    assert published_on_loopback_only(compose) == {"lb": ["8000:8000", "8404:8404"]}
    assert lb["ports"] == ["${PORT:-127.0.0.1:8000}:8000",
                           "${STATS_PORT:-127.0.0.1:8404}:8404"]
    config = (ROOT / "deploy" / "haproxy.cfg").read_text()
    frontends = dict(re.findall(r"^frontend (\S+)\n((?:[ \t]+.*\n|\n)*)", config, re.MULTILINE))
    # The stats page is on a port of its own, behind the user admin and the password
    # that deploy/haproxy-start.sh reads from the secret into HAProxy's environment.
    assert "bind :8404" in frontends["stats"]
    assert 'stats auth "admin:${HAPROXY_STATS_PASSWORD}"' in frontends["stats"]
    assert "stats" not in frontends["http"]
    assert lb["command"] == ["sh", "/usr/local/bin/haproxy-start.sh"]
    assert "./deploy/haproxy-start.sh:/usr/local/bin/haproxy-start.sh:ro" in lb["volumes"]
    start = (ROOT / "deploy" / "haproxy-start.sh").read_text()
    assert "/run/secrets/stats_password" in start
    assert "export HAPROXY_STATS_PASSWORD" in start
    assert "exec haproxy -W -db -f /usr/local/etc/haproxy/haproxy.cfg" in start


def test_haproxy_balances_the_three_apis_and_the_two_events_containers_on_readyz():
    lb = _compose()["services"]["lb"]
    assert "./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in lb["volumes"]
    config = (ROOT / "deploy" / "haproxy.cfg").read_text()
    backends = re.split(r"^backend ", config, flags=re.MULTILINE)[1:]
    assert [backend.split()[0] for backend in backends] == ["api", "events"]
    for backend in backends:
        assert "option httpchk GET /readyz" in backend
        assert "http-check expect status 200" in backend
    assert re.findall(r"^\s*server (api-\d) \1:8000$", backends[0], re.MULTILINE) == APIS
    assert re.findall(r"^\s*server (\S+) (\S+)$", backends[1], re.MULTILINE) == \
        [("events-1", "events-1:8001"), ("events-2", "events-2:8001")]
    # The events path, and only it, goes to the events containers.
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
    if haproxy:  # Debian's haproxy (2.6), when installed, checks the whole file
        result = subprocess.run([haproxy, "-c", "-f", str(ROOT / "deploy" / "haproxy.cfg")],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 0, result.stdout + result.stderr


class LocalNodes:
    """Cluster nodes started with the compose file's node configuration on the loopback
    addresses 127.0.0.11 to .19 (the network's numbers) and a free port of their own, and
    deploy/cluster-init.sh run against them as compose runs it."""

    HOSTS = [f"127.0.0.1{number}" for number in range(1, 10)]

    def __init__(self, folder: Path, password: str | None = None):
        self.folder = folder
        #: Redis' password (as deploy/redis-start.sh sets it), given to cluster-init in
        #: a file as compose gives it the secret.
        self.password = password
        self.port = free_cluster_port(self.HOSTS[0], also_on=self.HOSTS[1:])
        self.binary = find_redis_server()
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, host: str, empty: bool = False) -> None:
        folder = self.folder / host
        if empty:
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(exist_ok=True)
        self.processes[host] = subprocess.Popen(
            [self.binary, str(ROOT / "deploy" / "redis-node.conf"), "--port", str(self.port),
             "--dir", str(folder), "--bind", host, "--daemonize", "no",
             "--cluster-node-timeout", "2000", "--logfile", str(folder / "redis.log"),
             *(["--requirepass", self.password, "--masterauth", self.password]
               if self.password else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def kill(self, host: str) -> None:
        process = self.processes.pop(host)
        process.kill()
        process.wait()

    def stop_all(self) -> None:
        for host in list(self.processes):
            self.kill(host)

    def client(self, host: str) -> redis.Redis:
        return redis.Redis(host=host, port=self.port, socket_timeout=5, password=self.password)

    def init(self, wait_seconds: int = 30) -> subprocess.CompletedProcess:
        """deploy/cluster-init.sh with the environment compose gives it (the network's
        numbers here), redis-cli on the PATH."""
        environment = dict(os.environ, PATH=f"{Path(find_redis_cli(self.binary)).parent}:"
                                            f"{os.environ['PATH']}",
                           REDIS_NETWORK="127.0.0", REDIS_PORT=str(self.port),
                           INIT_WAIT_SECONDS=str(wait_seconds))
        if self.password:
            secret = self.folder / "redis_password"
            secret.write_text(self.password + "\n")
            environment["REDIS_PASSWORD_FILE"] = str(secret)
        return subprocess.run(["sh", str(ROOT / "deploy" / "cluster-init.sh")],
                              capture_output=True, text=True, timeout=150, env=environment)

    def roles(self) -> dict[str, tuple]:
        """{host: ("master", replicas attached) or ("slave", its master's host, link)}"""
        found = {}
        for host in self.processes:
            with self.client(host) as client:
                role = client.execute_command("ROLE")
            if role[0] == b"master":
                found[host] = ("master", len(role[2]))
            else:
                found[host] = ("slave", role[1].decode(), role[3].decode())
        return found


@pytest.fixture
def local_nodes(tmp_path, request):
    nodes = LocalNodes(tmp_path, getattr(request, "param", None))
    try:
        yield nodes
    finally:
        nodes.stop_all()


def test_cluster_init_is_a_script_of_its_own_on_the_node_network():
    init = _compose()["services"]["cluster-init"]
    assert init["image"] == "${REDIS_IMAGE:-redis:7-alpine}"
    assert init["command"] == ["sh", "/usr/local/bin/cluster-init.sh"]
    assert "./deploy/cluster-init.sh:/usr/local/bin/cluster-init.sh:ro" in init["volumes"]
    assert init["environment"]["REDIS_NETWORK"] == NETWORK
    assert init["restart"] == "no"
    # It needs the nodes started, not healthy: a node lost for good never is.
    assert set(init["depends_on"]) == set(NODES)
    assert {d["condition"] for d in init["depends_on"].values()} == {"service_started"}
    script = (ROOT / "deploy" / "cluster-init.sh").read_text()
    # Every command to a node is bounded, every loop has a deadline.
    assert "timeout 3 redis-cli" in script
    loops = re.findall(r"^\s*(?:until|while) (.*?); do$", script, re.MULTILINE | re.DOTALL)
    assert loops
    assert all("deadline" in condition or condition == ":" for condition in loops)
    assert script.count("while :; do") == 1  # left by `break` at its deadline


@pytest.mark.timeout(90)
@pytest.mark.parametrize("local_nodes", [None, "s3cret-pass"], indirect=True,
                         ids=["no password", "a password"])
def test_cluster_init_forms_three_masters_with_two_replicas_once_then_only_waits(local_nodes):
    for host in local_nodes.HOSTS:
        local_nodes.start(host)
    outputs = []
    for _run in range(2):  # the second run finds the cluster formed
        result = local_nodes.init()
        assert result.returncode == 0, result.stdout + result.stderr
        assert "cluster_state:ok" in result.stdout
        assert "cluster_slots_ok:16384" in result.stdout
        assert "cluster_known_nodes:9" in result.stdout
        outputs.append(result.stdout)
    assert "[OK] All 16384 slots covered" in outputs[0]
    assert "slots covered" not in outputs[1]  # formed once only
    assert "joining" not in outputs[1]
    masters = {host: role[1] for host, role in local_nodes.roles().items()
               if role[0] == "master"}
    # The first run waited until both replicas were attached.
    assert masters == {"127.0.0.11": 2, "127.0.0.12": 2, "127.0.0.13": 2}


@pytest.mark.timeout(90)
def test_cluster_init_forms_the_cluster_without_the_first_node_in_bounded_time(local_nodes):
    """The first node never answers: the cluster is formed from the eight others (three
    masters, one replica each, the two left over join as replicas), within the wait."""
    for host in local_nodes.HOSTS[1:]:
        local_nodes.start(host)
    started = time.monotonic()
    result = local_nodes.init(wait_seconds=3)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    assert "not answering after 3 s: 127.0.0.11" in result.stdout
    assert "cluster_state:ok" in result.stdout
    assert "cluster_known_nodes:8" in result.stdout
    assert took < 60, took
    roles = local_nodes.roles()
    masters = sorted(host for host, role in roles.items() if role[0] == "master")
    assert len(masters) == 3
    replicas = [role[1] for role in roles.values() if role[0] == "slave"]
    # The two left over went to two different masters (each the one with the fewest
    # when it joined: one each after the creation)...
    chosen = re.findall(r"^\S+ replicates ([0-9a-f]{40})$", result.stdout, re.MULTILINE)
    assert len(chosen) == 2, result.stdout
    assert chosen[0] != chosen[1], result.stdout
    # ...and every master has a replica (Redis may move one to a master it sees left
    # without any for a moment: its own replica migration, on a loaded machine).
    assert len(replicas) == 5
    assert all(replicas.count(master) >= 1 for master in masters), roles


@pytest.mark.timeout(120)
def test_cluster_init_brings_a_replaced_first_node_back_as_a_replica(local_nodes):
    """The first node (a master) is lost for good, its replica promoted; a new empty node
    at its address is made a replica of the master left with one replica, and the others
    forget the lost one."""
    for host in local_nodes.HOSTS:
        local_nodes.start(host)
    assert local_nodes.init().returncode == 0
    lost = local_nodes.HOSTS[0]
    with local_nodes.client(lost) as client:
        lost_id = client.execute_command("CLUSTER MYID").decode()
    local_nodes.kill(lost)

    def promoted() -> bool:  # three masters again among the nodes left
        return sum(role[0] == "master" for role in local_nodes.roles().values()) == 3

    deadline = time.monotonic() + 30
    while not promoted():
        assert time.monotonic() < deadline, "no failover"
        time.sleep(0.2)
    local_nodes.start(lost, empty=True)
    result = local_nodes.init()
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"joining {lost}" in result.stdout
    assert "cluster_state:ok" in result.stdout
    assert "cluster_known_nodes:9" in result.stdout
    roles = local_nodes.roles()
    assert roles[lost][0] == "slave", roles[lost]
    assert roles[lost][2] == "connected", roles[lost]
    masters = {host: role[1] for host, role in roles.items() if role[0] == "master"}
    assert len(masters) == 3, roles
    assert set(masters.values()) == {2}, roles
    for host in local_nodes.HOSTS[1:]:
        with local_nodes.client(host) as client:
            assert lost_id not in str(client.execute_command("CLUSTER NODES")), host


#: Connections HAProxy keeps for the API's requests when every events container is full.
API_ROOM = 2000


def _default(value: str) -> int:
    """The default of a ``${VARIABLE:-default}`` of the compose file."""
    found = re.fullmatch(r"\$\{[A-Z_]+:-([0-9]+)\}", value)
    assert found, value
    return int(found[1])


def test_the_events_containers_leave_haproxy_room_for_the_api():
    """HAProxy derives its connection limit from its open-file limit (two descriptors a
    connection, and a few of its own: 8,178 at 16,384), and once full leaves new
    connections, moves too, unanswered: the events containers' streams at their default
    limit must leave it room for the API's."""
    services = _compose()["services"]
    lb_connections = _default(services["lb"]["ulimits"]["nofile"]["soft"]) // 2 - 14
    streams = sum(_default(services[name]["environment"]["EVENTS_MAX_STREAMS"])
                  * int(services[name]["environment"].get("EVENTS_WORKERS", 1))
                  for name in EVENTS)
    assert streams + API_ROOM <= lb_connections, (streams, lb_connections)


def test_the_worker_is_given_every_setting_of_the_api_it_reads_too():
    assert settings_the_worker_lacks(_compose()["services"], "api-1") == []


def test_the_solver_worker_runs_the_worker_command_on_the_cluster():
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    worker, api = services["worker"], services["api-1"]
    assert tuple(worker["command"]) == WORKER_COMMAND
    assert worker["environment"]["REDIS_URL"] == api["environment"]["REDIS_URL"]
    assert worker["environment"]["REDIS_URL"].startswith("redis+cluster://")
    assert "SECRET_KEY" not in worker["environment"]  # no Flask app: it needs none
    assert worker["depends_on"] == api["depends_on"]
    assert worker_checks_its_heartbeat(worker)


def test_every_service_has_memory_and_cpu_limits_a_rotated_log_and_a_health_check():
    compose = _compose()
    limits = limited_and_rotated(compose)
    assert set(limits) == {*NODES, "cluster-init", *APIS, *EVENTS, "worker", "lb"}
    for name, service in compose["services"].items():
        if name != "cluster-init":  # a one-shot
            assert "test" in service["healthcheck"], name


def test_the_load_balancer_is_an_lts_haproxy_checked_on_its_own_uri():
    lb = _compose()["services"]["lb"]
    # A long-term-support line (2.6 and 2.8 are too; Debian's 2.6 is the tests' stand-in).
    assert lb["image"] == "${HAPROXY_IMAGE:-haproxy:3.2-alpine}"
    check = " ".join(lb["healthcheck"]["test"])
    assert check.count("http://127.0.0.1:8404/healthz") == 2  # wget, else python3
    config = (ROOT / "deploy" / "haproxy.cfg").read_text()
    assert "monitor-uri /healthz" in config


def test_a_server_enters_haproxys_rotation_only_after_its_checks_pass():
    config = (ROOT / "deploy" / "haproxy.cfg").read_text()
    backends = re.split(r"^backend ", config, flags=re.MULTILINE)[1:]
    for backend in backends:
        # init-state from HAProxy 3.1 on (Debian's 2.6 parses the file without it).
        assert ".if version_atleast(3.1)\n    default-server init-state down\n.endif" \
            in backend
        assert re.search(r"default-server check inter 2s .*fall 2 rise 2 ", backend)
    # A connection refused is tried on another server (twice), never a keyless write
    # once a server had it.
    assert "retries 2" in config
    assert "option redispatch 1" in config
    assert "retry-on conn-failure empty-response response-timeout" in config


def test_the_secrets_are_files_and_every_node_asks_for_a_password():
    compose = _compose()
    service = {"secret_key", "redis_service_password"}
    tls = ("redis_tls_ca", "redis_tls_cert", "redis_tls_key")
    secrets_are_files_never_variables(compose, {
        **{node: {"redis_password", "redis_service_password", *tls} for node in NODES},
        "cluster-init": {"redis_password"},
        **dict.fromkeys([*APIS, *EVENTS], service), "worker": {"redis_service_password"},
        "lb": {"stats_password"}}, others=("stats_password", *tls))
    init = compose["services"]["cluster-init"]["environment"]
    assert init["REDIS_PASSWORD_FILE"] == "/run/secrets/redis_password"
    for node in NODES:
        assert "./deploy/redis-start.sh:/usr/local/bin/redis-start.sh:ro" in \
            compose["services"][node]["volumes"]


def test_the_bus_and_replication_go_over_tls_with_certificates_of_the_operators_ca():
    """deploy/redis-tls.conf: the bus and replication over TLS, every peer asked for a
    certificate of the CA of the secrets; the bus where CLUSTER MEET <ip> 6379 finds it;
    `make secrets` makes the CA (its key never mounted) and the nodes' pair with openssl."""
    config = (ROOT / "deploy" / "redis-tls.conf").read_text()
    lines = {line for line in config.splitlines() if line and not line.startswith("#")}
    assert lines == {
        "tls-port 6380", "cluster-port 16379", "tls-cluster yes", "tls-replication yes",
        "tls-auth-clients yes", "tls-cert-file /run/secrets/redis_tls_cert",
        "tls-key-file /run/secrets/redis_tls_key",
        "tls-ca-cert-file /run/secrets/redis_tls_ca"}
    # The nodes' plain port is unchanged: clients, health checks and cluster-init use it.
    assert re.search(r"^port 6379$", (ROOT / "deploy" / "redis-node.conf").read_text(),
                     re.MULTILINE)
    makefile = (ROOT / "Makefile").read_text()
    assert "secrets/redis_tls_ca secrets/redis_tls_cert secrets/redis_tls_key\n" in makefile
    assert "-CA secrets/redis_tls_ca" in makefile
    assert "-CAkey secrets/redis_tls_ca_key" in makefile
    assert not any("ca_key" in secret["file"] for secret in _compose()["secrets"].values())
