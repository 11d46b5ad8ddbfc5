"""docker-compose.cluster.yml operated over weeks, on a real Docker Engine: a Redis node
lost for good (its container and its volume removed) and replaced by `docker compose up`,
which recreates it empty; cluster-init brings it back as a replica of the master that
lacks one, and every shard serves throughout.  The node lost is redis-1, the node the
cluster was first formed from.  Then an events container lost for good while followers
stream games being played: those it served reconnect with Last-Event-ID, HAProxy sends
them to the other events container, and every follower gets every event once, in order.

The cluster's node timeout is 2000 ms here (REDIS_CLUSTER_NODE_TIMEOUT; 5000 by default).
"""

from __future__ import annotations

import datetime
import json
import secrets
import statistics
import threading
import time

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from redis.crc import key_slot

from tests.deploy.clients import ResumingFollower, auth
from tests.deploy.compose import DeployError, Deployment, docker, up_on_a_free_network
from tests.deploy.conftest import deployment_env, project_name
from tests.deploy.figures import at_least, at_most, equal, record

pytestmark = pytest.mark.timeout(300)
SECTION = "operations (docker-compose.cluster.yml)"
NODES = [f"redis-{number}" for number in range(1, 10)]
EVENTS = ["events-1", "events-2"]
NODE_TIMEOUT_MS = 2000
#: `docker compose up -d` after the loss, cluster-init included, within this many seconds.
UP_WITHIN = 60.0
#: The new node a replica in sync within this many seconds of that `up`.
IN_SYNC_WITHIN = 30.0


def _cluster_nodes(deployment: Deployment, via: str) -> list[dict]:
    """``CLUSTER NODES`` as a node sees it: id, address, flags, master id, slot ranges."""
    nodes = []
    for line in _as_the_service(deployment, via, "cluster", "nodes").splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        ranges = []
        for text in fields[8:]:
            if not text.startswith("["):
                low, _, high = text.partition("-")
                ranges.append((int(low), int(high or low)))
        nodes.append({"id": fields[0], "ip": fields[1].split(":")[0],
                      "flags": set(fields[2].split(",")), "master": fields[3],
                      "slots": ranges})
    return nodes


def _serving_masters(nodes: list[dict]) -> list[dict]:
    return [node for node in nodes
            if "master" in node["flags"] and "fail" not in node["flags"] and node["slots"]]


def _replication(deployment: Deployment, service: str) -> dict[str, str]:
    text = _as_the_service(deployment, service, "info", "replication")
    return dict(line.split(":", 1) for line in text.replace("\r", "").splitlines()
                if ":" in line)


def _as_the_service(deployment: Deployment, service: str, *command: str) -> str:
    """``redis-cli`` as the default user, in the container of ``service`` (its password
    read there from its secret, never passed from here)."""
    script = 'REDISCLI_AUTH="$(cat /run/secrets/redis_password)" redis-cli "$@"'
    return docker("exec", deployment.container(service), "sh", "-c", script, "sh",
                  *command).stdout


def _as_patience(deployment: Deployment, node: str, *command: str) -> str:
    """``redis-cli`` as the service's user ``patience``, in the container of ``node``
    (with the password of its secret, read there): the reply, an error's included."""
    script = ('REDISCLI_AUTH="$(cat /run/secrets/redis_service_password)" '
              'redis-cli --no-auth-warning --user patience "$@"')
    answer = docker("exec", deployment.container(node), "sh", "-c", script, "sh", *command,
                    check=False)
    return answer.stdout + answer.stderr


def _refused_to_patience(deployment: Deployment) -> dict[str, list[str]]:
    """What each node's ``ACL LOG`` holds of the service's user: ``{node: [what it was
    refused, ...]}`` (redis-cli prints the entries' fields and values a line each)."""
    found = {}
    for node in NODES:
        lines = _as_the_service(deployment, node, "acl", "log", "128").splitlines()
        entries = []
        for index, line in enumerate(lines[:-1]):
            if line == "username" and lines[index + 1] == "patience":
                entry = lines[max(0, index - 8):index]
                entries.append(entry[entry.index("object") + 1] if "object" in entry
                               else " ".join(entry))
        found[node] = entries
    return found


def _service_of(ip: str, prefix: str) -> str:
    return f"redis-{int(ip.removeprefix(prefix + '.')) - 10}"


def _certificate(name: str, issuer: tuple | None = None) -> tuple:
    """``(certificate, key)``: a CA of its own (``issuer`` None) or a certificate that
    ``issuer`` (a CA's pair) signs, EC P-256, a day long."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    signer_certificate, signer_key = issuer or (None, key)
    certificate = (
        x509.CertificateBuilder().subject_name(subject)
        .issuer_name(signer_certificate.subject if signer_certificate else subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None),
                       critical=True)
        .sign(signer_key, hashes.SHA256()))
    return certificate, key


def _pem(pair: tuple) -> dict[str, str]:
    certificate, key = pair
    return {"cert": certificate.public_bytes(serialization.Encoding.PEM).decode(),
            "key": key.private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()).decode()}


@pytest.fixture(scope="module")
def secret_files(tmp_path_factory) -> dict[str, str]:
    """The deployment's secrets, files of this run (as `make secrets` makes them): their
    values by name, and the variables that name the files; the nodes' certificate and
    key (PEM, ``node_tls``) signed by a CA of this run, and a certificate of another CA
    (``stranger_tls``)."""
    folder = tmp_path_factory.mktemp("secrets")
    found = {}
    for name in ("secret_key", "redis_password", "redis_service_password", "stats_password"):
        found[name] = secrets.token_urlsafe(32)
        (folder / name).write_text(found[name] + "\n")
        (folder / name).chmod(0o644)  # the containers' users read it
    ca = _certificate("Patience Server Redis CA (test)")
    found["node_tls"] = _pem(_certificate("Patience Server Redis node (test)", ca))
    found["stranger_tls"] = _pem(_certificate("stranger", _certificate("another CA")))
    tls = {"redis_tls_ca": _pem(ca)["cert"], "redis_tls_cert": found["node_tls"]["cert"],
           "redis_tls_key": found["node_tls"]["key"]}
    for name, text in tls.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o644)
        found[f"{name.upper()}_FILE"] = str(folder / name)
    found["SECRET_KEY_FILE"] = str(folder / "secret_key")
    found["REDIS_PASSWORD_FILE"] = str(folder / "redis_password")
    found["REDIS_SERVICE_PASSWORD_FILE"] = str(folder / "redis_service_password")
    found["STATS_PASSWORD_FILE"] = str(folder / "stats_password")
    return found


@pytest.fixture(scope="module")
def cluster(base_images, app_image, secret_files):
    """The deployment up, creates taken by every shard: ``(deployment, base URL,
    the Redis network's first three numbers)``."""
    started = time.monotonic()
    deployment, prefix = up_on_a_free_network(
        "docker-compose.cluster.yml", project_name("ops"),
        lambda prefix: deployment_env(base_images, app_image, WEB_CONCURRENCY="1",
                                      REDIS_NETWORK=prefix,
                                      REDIS_CLUSTER_NODE_TIMEOUT=str(NODE_TIMEOUT_MS),
                                      SECRET_KEY_FILE=secret_files["SECRET_KEY_FILE"],
                                      REDIS_PASSWORD_FILE=secret_files["REDIS_PASSWORD_FILE"],
                                      REDIS_SERVICE_PASSWORD_FILE=secret_files[
                                          "REDIS_SERVICE_PASSWORD_FILE"],
                                      **{variable: secret_files[variable] for variable in (
                                          "REDIS_TLS_CA_FILE", "REDIS_TLS_CERT_FILE",
                                          "REDIS_TLS_KEY_FILE")},
                                      STATS_PASSWORD_FILE=secret_files["STATS_PASSWORD_FILE"]))
    try:
        base = f"http://{deployment.published('lb', 8000)}"
        answers = _creates_right_after_readyz(deployment, base)
        # Created, HAProxy's own 503 (its stand-in's version counts a server up at its
        # start) or the service's 503 with Retry-After: nothing else, never a 5xx of ours.
        record(SECTION, detail=answers,
               right_after_readyz_created=(answers.count("201"), at_least(1)),
               right_after_readyz_other=(
                   sum(kind not in ("201", "haproxy", "503") for kind in answers), equal(0)))
        deployment.wait_for(lambda: _creates_on_every_shard(deployment, base, prefix), 90,
                            "creates taken by every shard", pause=0.5)
        record(SECTION, up_to_writes_taken_s=(round(time.monotonic() - started, 1),
                                              at_most(180)))
        yield deployment, base, prefix
    finally:
        deployment.save_logs("deploy-operations.log")
        deployment.remove()


def _creates_right_after_readyz(deployment: Deployment, base: str, creates: int = 20
                                ) -> list[str]:
    """What creates answer right after /readyz first answers 200 through the load
    balancer: HAProxy's own 503 (text) means it sent them to replicas that could not
    answer (HAProxy before 3.1 counts a server up at its start, until a check fails);
    the service's own 503 (JSON) a shard not ready for writes yet."""
    deployment.wait_ready(base, 90, pause=0.05)
    answers = []
    with requests.Session() as session:
        for _ in range(creates):
            answer = session.post(f"{base}/v1/games", json={"variant": "clock"}, timeout=10)
            answers.append("haproxy" if answer.status_code == 503 and
                           answer.headers.get("Content-Type", "").startswith("text/plain")
                           else str(answer.status_code))
    return answers


def _creates_on_every_shard(deployment: Deployment, base: str, prefix: str,
                            via: str = "redis-5") -> dict[str, list[tuple[str, str]]] | None:
    """Games created until each serving master has one (40 at most), every create
    answered 201: ``{master's service: [(id, token), ...]}``, or None at the first
    create answered otherwise (503 with Retry-After, the only other answer allowed)."""
    try:
        masters = _serving_masters(_cluster_nodes(deployment, via))
    except DeployError:
        return None
    if len(masters) != 3:
        return None
    found: dict[str, list] = {_service_of(master["ip"], prefix): [] for master in masters}
    with requests.Session() as session:
        for _ in range(40):
            answer = session.post(f"{base}/v1/games", json={"variant": "salic-law",
                                                             "undo": "full"}, timeout=10)
            if answer.status_code != 201:
                assert answer.status_code == 503, answer.text
                assert answer.headers.get("Retry-After"), answer.headers
                return None
            body = answer.json()
            slot = key_slot(f"game:{{{body['game']['id']}}}".encode())
            owner = next(master for master in masters
                         if any(low <= slot <= high for low, high in master["slots"]))
            found[_service_of(owner["ip"], prefix)].append(
                (body["game"]["id"], body["player_token"]))
            if all(found.values()):
                return found
    return None


def _play(base: str, games: list[tuple[str, str]]) -> dict[str, int]:
    """A deal, then its undo, on each game: its version."""
    versions = {}
    with requests.Session() as session:
        for game_id, token in games:
            for path, body in ((f"/v1/games/{game_id}/moves", {"type": "deal"}),
                               (f"/v1/games/{game_id}/undo", None)):
                answer = session.post(f"{base}{path}", json=body, headers=auth(token),
                                      timeout=10)
                assert answer.status_code == 200, answer.text
                versions[game_id] = answer.json()["game"]["version"]
    return versions


def test_redis_1_lost_for_good_and_replaced_by_an_empty_node(cluster):
    deployment, base, prefix = cluster
    games = [game for found in
             deployment.wait_for(lambda: _creates_on_every_shard(deployment, base, prefix),
                                 30, "creates taken by every shard").values()
             for game in found]
    played = _play(base, games)
    nodes = _cluster_nodes(deployment, "redis-5")
    lost = next(node for node in nodes if node["ip"] == f"{prefix}.11")
    assert "master" in lost["flags"], nodes  # the node the cluster was formed from
    volume = next(mount["Name"] for mount in deployment.inspect("redis-1")["Mounts"]
                  if mount["Destination"] == "/data")

    # Lost for good: killed, the container and its volume removed.
    killed = deployment.kill_for_good("redis-1")
    docker("rm", "-f", deployment.container("redis-1"))
    docker("volume", "rm", volume)

    def failed_over() -> dict[str, int] | None:
        """Each serving master's replicas alive, once three masters serve and redis-1
        is none of them."""
        nodes = _cluster_nodes(deployment, "redis-5")
        masters = _serving_masters(nodes)
        if len(masters) != 3 or any(node["ip"] == f"{prefix}.11" for node in masters):
            return None
        alive = [node for node in nodes if "fail" not in node["flags"]]
        return {master["id"]: sum(node["master"] == master["id"] for node in alive)
                for master in masters}

    replicas = deployment.wait_for(failed_over, 30, "a replica of redis-1 promoted",
                                   pause=0.2)
    promoted = time.monotonic() - killed.reported  # from the death the engine reported
    lacking = [master for master, count in replicas.items() if count < 2]
    assert len(lacking) == 1, replicas

    # `up` again: redis-1 recreated with an empty volume, cluster-init run again.
    started = time.monotonic()
    deployment.compose("up", "-d", "--no-build", timeout=UP_WITHIN + 60)
    deployment.wait_for(lambda: deployment.inspect("cluster-init")["State"]["Status"]
                        == "exited", UP_WITHIN, "cluster-init finished", pause=0.2)
    up_took = time.monotonic() - started
    assert up_took < UP_WITHIN, up_took
    init = deployment.inspect("cluster-init")["State"]
    assert init["Status"] == "exited", init
    assert init["ExitCode"] == 0, deployment.logs("cluster-init")
    assert "joining" in deployment.logs("cluster-init"), deployment.logs("cluster-init")
    # Recreated, cluster-init holds no volume that `down -v` would leave behind.
    assert [mount for mount in deployment.inspect("cluster-init")["Mounts"]
            if mount["Type"] == "volume"] == []

    def rejoined() -> bool:
        try:
            return _replication(deployment, "redis-1").get("role") == "slave"
        except DeployError:
            return False

    deployment._containers.clear()  # redis-1 is a new container
    deployment.wait_for(rejoined, IN_SYNC_WITHIN, "redis-1 a replica")
    rejoin_took = time.monotonic() - started
    new_id = _as_the_service(deployment, "redis-1", "cluster", "myid").strip()
    nodes = _cluster_nodes(deployment, "redis-5")
    new = next(node for node in nodes if node["id"] == new_id)
    assert new["master"] == lacking[0], (new, replicas)
    assert lost["id"] not in {node["id"] for node in nodes}  # forgotten
    master = _service_of(next(node["ip"] for node in nodes if node["id"] == new["master"]),
                         prefix)

    def in_sync() -> bool:
        """The link up, and the replica at the master's offset of a moment before (the
        solver's worker may be writing to that master meanwhile)."""
        primary = int(_replication(deployment, master).get("master_repl_offset", -1))
        replica = _replication(deployment, "redis-1")
        return (replica.get("master_link_status") == "up"
                and int(replica.get("slave_repl_offset", -1)) >= primary > 0)

    deployment.wait_for(in_sync, IN_SYNC_WITHIN, "redis-1 in sync with its master",
                        pause=0.2)
    sync_took = time.monotonic() - started
    assert sync_took < IN_SYNC_WITHIN, sync_took

    # Every shard serves: creates land on all three masters, the games played before
    # read back with their versions.
    assert deployment.wait_for(lambda: _creates_on_every_shard(deployment, base, prefix),
                               30, "creates taken by every shard after the replacement")
    with requests.Session() as session:
        for game_id, version in played.items():
            answer = session.get(f"{base}/v1/games/{game_id}", timeout=10)
            assert answer.status_code == 200, answer.text
            assert answer.json()["version"] == version
    record(SECTION,
           redis_1_lost_kill_to_promotion_s=(round(promoted, 1), at_most(30)),
           redis_1_replaced_up_s=(round(up_took, 1), at_most(UP_WITHIN)),
           redis_1_replaced_replica_after_up_s=(round(rejoin_took, 1), at_most(UP_WITHIN)),
           redis_1_replaced_in_sync_after_up_s=(round(sync_took, 1), at_most(IN_SYNC_WITHIN)))



def test_every_container_is_limited_rotated_and_healthy(cluster):
    """The engine applies what the file asks (docker-compose 1.29 included): memory and
    CPU limits, a rotated log; the long-running services' health checks pass (the
    worker's once its heartbeat is fresh); nothing but the load balancer is published,
    and on 127.0.0.1."""
    deployment, _base, _prefix = cluster
    deployment._containers.clear()
    services = [*NODES, "cluster-init", "api-1", "api-2", "api-3", *EVENTS, "worker", "lb"]
    for service in services:
        state = deployment.inspect(service)
        host = state["HostConfig"]
        assert host["Memory"] > 0, service
        assert host["NanoCpus"] > 0, service
        assert host["LogConfig"] == {"Type": "json-file",
                                     "Config": {"max-file": "5", "max-size": "10m"}}, service
        bindings = host["PortBindings"] or {}
        if service == "lb":
            assert set(bindings) == {"8000/tcp", "8404/tcp"}, bindings
            assert [b["HostIp"] for b in bindings["8000/tcp"]] == ["127.0.0.1"]
            assert [b["HostIp"] for b in bindings["8404/tcp"]] == ["127.0.0.1"]
        else:
            assert not bindings, service
    config = _as_the_service(deployment, "redis-2", "config", "get", "maxmemory-policy")
    assert "noeviction" in config

    def healthy() -> bool:
        return all(deployment.inspect(service)["State"].get("Health", {}).get("Status")
                   == "healthy" for service in services if service != "cluster-init")

    deployment.wait_for(healthy, 45, "every long-running container healthy", pause=1)


def test_no_container_shows_a_secret_and_redis_refuses_strangers(cluster, secret_files):
    """`docker inspect` of every container (its environment, command, labels: all of it)
    holds no secret, nor does any log; Redis answers nothing without a password; the
    service's user `patience` (the service working as it, /metrics' memory figures
    included) is refused dangerous commands with NOPERM, and Redis logs those refusals."""
    deployment, base, prefix = cluster
    deployment._containers.clear()
    values = (secret_files["secret_key"], secret_files["redis_password"],
              secret_files["redis_service_password"], secret_files["stats_password"],
              *secret_files["node_tls"]["key"].splitlines()[1:-1])
    containers = deployment.compose("ps", "-a", "-q").stdout.split()
    assert len(containers) == 17, containers
    for container in containers:
        inspected = docker("inspect", container).stdout
        for value in values:
            assert value not in inspected, json.loads(inspected)[0]["Name"]
    logs = deployment.compose("logs", "--no-color").stdout
    assert "redis+cluster://" not in logs
    for value in values:
        assert value not in logs
    for command in (("set", "x", "1"), ("keys", "*"), ("cluster", "nodes"), ("ping",)):
        refused = docker("exec", deployment.container("redis-3"), "redis-cli", *command,
                         check=False)
        assert "NOAUTH" in refused.stdout + refused.stderr, (command, refused)
    assert "cluster_state:ok" in _as_the_service(deployment, "redis-3", "cluster", "info")
    assert _as_the_service(deployment, "redis-3", "dbsize").strip().isdigit()
    # The service logs in as `patience` (the API's /metrics reads INFO of each master).
    metrics = requests.get(f"{base}/metrics", timeout=10)
    assert metrics.status_code == 200
    # Each master the client knows (one replaced lately may still be among them).
    assert metrics.text.count("patience_redis_maxmemory_bytes{") >= 3, metrics.text[-2000:]
    # A master's connections from the service are its user's.
    master = _service_of(_serving_masters(_cluster_nodes(deployment, "redis-4"))[0]["ip"],
                         prefix)
    clients = _as_the_service(deployment, master, "client", "list")
    assert " user=patience " in clients, clients
    assert "cluster_state:ok" in _as_patience(deployment, "redis-3", "cluster", "info")
    assert _as_patience(deployment, "redis-3", "dbsize").strip().isdigit()
    refused = {}
    for command in (("flushall",), ("keys", "*"), ("config", "get", "maxmemory"),
                    ("replicaof", "no", "one"), ("cluster", "failover"), ("acl", "list")):
        refused[command[0]] = _as_patience(deployment, "redis-3", *command)
        assert refused[command[0]].startswith("NOPERM"), (command, refused)
    logged = _refused_to_patience(deployment)["redis-3"]
    assert {"flushall", "keys", "config|get", "replicaof", "cluster|failover", "acl|list"} \
        <= set(logged), logged
    assert _as_patience(deployment, "redis-3", "dbsize").strip() != "0"  # nothing flushed
    wrong = _as_patience(deployment, "redis-3", "--pass", "not-the-password", "ping")
    assert "WRONGPASS" in wrong or "invalid username-password" in wrong, wrong


def test_the_stats_page_asks_for_the_password_of_its_secret(cluster, secret_files):
    """HAProxy's stats page, published on 127.0.0.1: 401 without credentials or with a
    wrong password (and no server's state in the answer), 200 with the password of the
    secret stats_password; its admin actions too.  Its monitor URI needs none."""
    deployment, _base, _prefix = cluster
    deployment._containers.clear()
    password = secret_files["stats_password"]
    assert deployment.stats_password() == password
    answers = {
        "none": deployment.stats(password=""),
        "wrong": deployment.stats(password=password[:-1] + ("x" if password[-1] != "x" else "y")),
        "right": deployment.stats(password=password),
        "admin_action_none": deployment.stats(
            "/stats", password="", data=b"s=api-1&action=drain&b=api"),
        "healthz_none": deployment.stats("/healthz", password=""),
    }
    record(SECTION, **{f"stats_page_{name}_status": (status, equal(expected))
                       for (name, (status, _body)), expected
                       in zip(answers.items(), (401, 401, 200, 401, 200), strict=True)})
    for name in ("none", "wrong", "admin_action_none"):
        assert "api-1" not in answers[name][1], name
    assert "api/api-1" in {f"{row.split(',')[0]}/{row.split(',')[1]}"
                           for row in answers["right"][1].splitlines()}
    # The refused action did nothing: api-1 still takes requests at its full weight.
    assert deployment.haproxy_states()["api/api-1"] == "UP"


#: Followers of the events test, and the games they follow (two followers a game).
FOLLOWERS, GAMES = 20, 10
#: Seconds from an events container's reported death to the first event each of its
#: followers gets on its new stream: the reconnect's wait, HAProxy's connect timeout
#: (1 s) before the retry on the other container, and the catch-up from the journal.
RESUMED_WITHIN, RESUMED_MEDIAN_WITHIN = 10.0, 5.0


def _streams_held(deployment: Deployment, service: str) -> float:
    """The streams the events container holds (its ``patience_event_streams`` gauge)."""
    text = deployment.execute(service, "python", "-c",
                              "import urllib.request; print(urllib.request.urlopen("
                              "'http://127.0.0.1:8001/metrics', timeout=5).read().decode())")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(("patience_event_streams ", "patience_event_streams{")))


#: Run by python in an API container (on the Redis network, without the nodes'
#: certificate): TLS handshakes with each node and port of the JSON on its standard
#: input, with no client certificate, one of another CA, the nodes' own; a plain TCP
#: connection to the bus.  Prints what each met, as JSON.
_TLS_PROBE = """
import json, os, socket, ssl, sys, tempfile
given = json.load(sys.stdin)
folder = tempfile.mkdtemp()

def context(name):
    made = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    made.check_hostname = False
    made.verify_mode = ssl.CERT_NONE
    if name != "none":
        paths = [os.path.join(folder, name + "." + part) for part in ("cert", "key")]
        for path, part in zip(paths, ("cert", "key")):
            with open(path, "w") as out:
                out.write(given[name][part])
        made.load_cert_chain(*paths)
    return made

def probe(host, port, name):
    try:
        with socket.create_connection((host, port), timeout=5) as raw:
            if name == "plain":
                raw.sendall(b"RCmb" + bytes(2252))
                return "answered" if raw.recv(64) else "closed"
            with context(name).wrap_socket(raw) as tls:
                # A refused certificate: TLS 1.3 tells the client at its first read.
                tls.settimeout(1.5)
                try:
                    data = tls.recv(64)
                except TimeoutError:
                    if port == given["bus"]:
                        return "open"
                    tls.settimeout(5)
                    tls.sendall(b"PING\\r\\n")
                    data = tls.recv(64)
                return "answered " + data.decode(errors="replace").strip() if data else "closed"
    except ssl.SSLError as error:
        return "refused " + (error.reason or type(error).__name__)
    except OSError as error:
        return type(error).__name__

found = {}
for host in given["hosts"]:
    for port in (given["bus"], given["tls"]):
        for name in ("none", "stranger", "node") + (("plain",) if port == given["bus"] else ()):
            found[f"{host}:{port} {name}"] = probe(host, port, name)
print(json.dumps(found))
"""


def test_the_bus_and_replication_take_only_peers_with_a_certificate_of_the_ca(
        cluster, secret_files):
    """deploy/redis-tls.conf: every replica replicates over TLS (its master's TLS port,
    link up); a peer on the Redis network without a certificate, or with one of another
    CA, is refused at the handshake on each node's bus port and TLS port, and a plain
    connection to the bus is closed; the nodes' certificate is let in (the probe tells
    them apart).  Plain clients are told plain ports."""
    deployment, _base, _prefix = cluster
    deployment._containers.clear()
    replicas = {}
    for node in NODES:
        replication = _replication(deployment, node)
        if replication.get("role") == "slave":
            replicas[node] = (replication["master_port"], replication["master_link_status"])
    assert len(replicas) == 6, replicas
    assert set(replicas.values()) == {("6380", "up")}, replicas
    addresses = {node["ip"] for node in _cluster_nodes(deployment, "redis-4")}
    assert len(addresses) == 9
    listed = _as_the_service(deployment, "redis-4", "cluster", "nodes")
    assert listed.count(":6379@16379") == 9, listed

    hosts = ["redis-2", "redis-6"]
    given = {"hosts": hosts, "bus": 16379, "tls": 6380, "node": secret_files["node_tls"],
             "stranger": secret_files["stranger_tls"]}
    answer = docker("exec", "-i", deployment.container("api-1"), "python", "-c", _TLS_PROBE,
                    input=json.dumps(given), timeout=120)
    met = json.loads(answer.stdout)
    expected = {}
    for host in hosts:
        for port in (16379, 6380):
            expected[f"{host}:{port} none"] = "refused TLSV13_ALERT_CERTIFICATE_REQUIRED"
            expected[f"{host}:{port} stranger"] = "refused TLSV1_ALERT_UNKNOWN_CA"
        expected[f"{host}:16379 node"] = "open"
        expected[f"{host}:6380 node"] = "answered -NOAUTH Authentication required."
    assert {key: met[key] for key in expected} == expected, met
    for host in hosts:
        assert met[f"{host}:16379 plain"] in ("closed", "ConnectionResetError"), met
    refused = sum(value.startswith("refused") for value in met.values())
    record(SECTION, detail=met,
           tls_replicas_over_tls_port_link_up=(len(replicas), equal(6)),
           tls_handshakes_refused_without_a_certificate_of_the_ca=(refused, equal(8)))


def test_an_events_container_lost_for_good_its_followers_resume_on_the_other(cluster):
    """Twenty followers on ten games being played, the streams spread over both events
    containers; events-1 killed for good (left down): the streams it held end, their
    followers reconnect with Last-Event-ID and HAProxy sends them to events-2, which
    replays what they missed.  Every follower ends with its game's feed (the journal's,
    read as JSON), every event once and in order."""
    deployment, base, _prefix = cluster
    started = time.monotonic()
    deployment._containers.clear()

    def both_up() -> bool:
        try:
            states = deployment.haproxy_states()
        except DeployError:
            return False
        return all(states.get(f"events/{name}") == "UP" for name in EVENTS)

    deployment.wait_for(both_up, 30, "both events containers in HAProxy's rotation",
                        pause=0.2)
    session = requests.Session()
    games = []
    for _ in range(GAMES):
        answer = session.post(f"{base}/v1/games", json={"variant": "salic-law",
                                                        "undo": "full"}, timeout=10)
        assert answer.status_code == 201, answer.text
        games.append((answer.json()["game"]["id"], answer.json()["player_token"]))
    followers = [ResumingFollower(base, games[number % GAMES][0])
                 for number in range(FOLLOWERS)]
    for follower in followers:
        follower.start()
    for follower in followers:
        assert follower.opened.wait(15), "a stream did not open"
    assert [f.error for f in followers if f.error] == []
    held = {name: _streams_held(deployment, name) for name in EVENTS}
    assert sum(held.values()) == FOLLOWERS, held
    assert all(held.values()), held  # both containers hold streams

    # A player keeps playing every game (a deal, then its undo, again and again).
    stop, refused = threading.Event(), []

    def play():
        with requests.Session() as player:
            turn = 0
            while not stop.is_set():
                move = ("moves", {"type": "deal"}) if turn % 2 == 0 else ("undo", None)
                for game_id, token in games:
                    answer = player.post(f"{base}/v1/games/{game_id}/{move[0]}",
                                         json=move[1], headers=auth(token), timeout=10)
                    if answer.status_code != 200:
                        refused.append((game_id, answer.status_code, answer.text))
                turn += 1
                time.sleep(0.05)

    player = threading.Thread(target=play, daemon=True)
    player.start()
    try:
        time.sleep(2)
        death = deployment.kill_for_good("events-1")

        def resumed() -> bool:
            return all(f.resumed() is not None for f in followers if f.failures) and \
                any(f.failures for f in followers)

        deployment.wait_for(resumed, 30, "the followers of events-1 resumed", pause=0.1)
        time.sleep(1)
    finally:
        stop.set()
        player.join(15)
    assert refused == []

    # Every follower catches up with its game's feed, then the games are deleted (their
    # streams end with the `deleted` event).
    feeds = {}
    for game_id, _token in games:
        answer = session.get(f"{base}/v1/games/{game_id}/events",
                             headers={"Accept": "application/json"}, timeout=10)
        assert answer.status_code == 200, answer.text
        feeds[game_id] = answer.json()["events"]
    deployment.wait_for(lambda: all(len(f.events) >= len(feeds[f.game_id])
                                    for f in followers), 15, "every follower caught up")
    for game_id, token in games:
        answer = session.delete(f"{base}/v1/games/{game_id}", headers=auth(token),
                                timeout=10)
        assert answer.status_code in (200, 204), answer.text
    for follower in followers:
        follower.join(15)
        assert not follower.is_alive(), follower.game_id
    assert [f.error for f in followers if f.error] == []

    missed = duplicates = 0
    for follower in followers:
        got = [int(message.id) for message in follower.events]
        expected = [entry["version"] for entry in feeds[follower.game_id]]
        missed += len(set(expected) - set(got))
        duplicates += len(got) - len(set(got))
    reconnected = [f for f in followers if f.failures]
    delays = [f.resumed() - death.reported for f in reconnected]
    record(SECTION,
           detail=[(f.game_id, f.failures) for f in reconnected],
           events_1_lost_followers_reconnected=(len(reconnected), at_least(1)),
           events_1_lost_events_missed=(missed, equal(0)),
           events_1_lost_events_twice=(duplicates, equal(0)),
           events_1_lost_kill_to_resumed_max_s=(round(max(delays), 2),
                                                at_most(RESUMED_WITHIN)),
           events_1_lost_kill_to_resumed_median_s=(round(statistics.median(delays), 2),
                                                   at_most(RESUMED_MEDIAN_WITHIN)),
           events_1_lost_test_s=(round(time.monotonic() - started, 1), at_most(45)))
    for follower in followers:
        feed = feeds[follower.game_id]
        assert [message.id for message in follower.events] == \
            [str(entry["version"]) for entry in feed], follower.game_id
        assert [message.json() for message in follower.events] == feed, follower.game_id
        assert [message.event for message in follower.events] == \
            ["undo" if entry["move"]["type"] == "undo" else "move" for entry in feed]
    # Every stream events-1 held was resumed.
    assert len(reconnected) >= held["events-1"], (len(reconnected), held)
    # The whole module's work (creates, moves and undos on every shard, streams, a node
    # replaced, the worker's turns, /metrics) asked Redis nothing that the service's user
    # may not do: no node logged a refusal of `patience` but the dangerous commands and
    # the wrong password (AUTH) that the test of the secrets sent on purpose (to redis-3).
    refusals = _refused_to_patience(deployment)
    on_purpose = {"flushall", "keys", "config|get", "replicaof", "cluster|failover",
                  "acl|list", "AUTH"}
    unexpected = {node: [entry for entry in entries if entry not in on_purpose]
                  for node, entries in refusals.items()}
    record(SECTION, patience_refusals_not_sent_on_purpose=(
        sum(map(len, unexpected.values())), equal(0)), detail=unexpected)
