"""docker-compose.yml and the Dockerfile agree with each other and with `make run`."""

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis as redis_client
import yaml

from devtools.launch import EVENTS_COMMAND, GUNICORN_COMMAND, WORKER_COMMAND
from devtools.redis_server import find_redis_server, free_port

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"


def _compose():
    return yaml.safe_load(COMPOSE_FILE.read_text())


def _check_compose_schema(path: Path) -> subprocess.CompletedProcess:
    # The compose-spec schema is vendored inside check-jsonschema: no network needed.
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
         str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _defaults(text: str) -> str:
    """``text`` as compose reads it with no variable set: each ``${NAME:-default}`` its
    default."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", text)


def published_on_loopback_only(compose: dict) -> dict[str, list[str]]:
    """Every service's published ports as compose reads them with no variable set,
    asserting each is on 127.0.0.1 (``address:host port:container port``)."""
    found = {}
    for name, service in compose["services"].items():
        for entry in service.get("ports", []):
            address, host_port, container_port = _defaults(str(entry)).split(":")
            assert address == "127.0.0.1", (name, entry)
            found.setdefault(name, []).append(f"{host_port}:{container_port}")
    return found


def worker_checks_its_heartbeat(worker: dict) -> bool:
    """The worker's health check reads the age of the file it touches each turn."""
    heartbeat = worker["environment"]["WORKER_HEARTBEAT_FILE"]
    test = " ".join(worker["healthcheck"]["test"])
    assert f"getmtime('{heartbeat}')" in test, test
    return True


def limited_and_rotated(compose: dict) -> dict[str, tuple[str, str]]:
    """Every service's memory and CPU limits (as compose reads them with no variable set),
    asserting each has both and a rotated log."""
    found = {}
    for name, service in compose["services"].items():
        logging = service.get("logging")
        assert logging is not None, name
        assert logging["driver"] == "json-file", name
        assert set(logging["options"]) == {"max-size", "max-file"}, name
        assert "mem_limit" in service, name
        assert "cpus" in service, name
        found[name] = (_defaults(str(service["mem_limit"])), _defaults(str(service["cpus"])))
        assert float(found[name][1]) <= 2, name  # starts on a 2-core machine
    return found


def _words(command) -> list[str]:
    return command.split() if isinstance(command, str) else list(command)


def _dockerfile_instruction(name: str) -> str:
    """The last NAME instruction of the Dockerfile, continuation lines joined."""
    found = None
    lines = iter(Path(ROOT / "Dockerfile").read_text().splitlines())
    for line in lines:
        if line.split(maxsplit=1)[:1] == [name]:
            text = line
            while text.endswith("\\"):
                text = text[:-1] + next(lines)
            found = text.split(maxsplit=1)[1].strip()
    assert found is not None, f"no {name} in the Dockerfile"
    return found


def test_compose_file_matches_the_compose_spec():
    result = _check_compose_schema(COMPOSE_FILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_schema_check_rejects_a_broken_compose_file(tmp_path):
    broken = tmp_path / "docker-compose.yml"
    broken.write_text("services:\n  api:\n    depends_on:\n      redis:\n        condition: soon\n")
    result = _check_compose_schema(broken)
    assert result.returncode == 1, result.stdout + result.stderr


def test_api_runs_the_devserver_gunicorn_command():
    assert GUNICORN_COMMAND[:3] == ("gunicorn", "-c", "python:service.runtime.request_group")
    assert GUNICORN_COMMAND[-1] == "service.app:create_app()"
    assert tuple(_words(_compose()["services"]["api"]["command"])) == GUNICORN_COMMAND
    assert tuple(json.loads(_dockerfile_instruction("CMD"))) == GUNICORN_COMMAND


#: What the API's container is given that the worker does not read: it serves no
#: request (no rate limits, no proxy, no events handed over, no request processes) and
#: runs no Flask app (no secret key).
REQUESTS_ONLY = {"SECRET_KEY_FILE", "WEB_CONCURRENCY", "RATELIMIT_DEFAULT", "TRUST_PROXY",
                 "EVENTS_HANDOFF_SOCKET"}


def settings_the_worker_lacks(services: dict, api: str) -> list[str]:
    """The variables of the ``api`` container that the worker reads too and is not
    given the same value of (the worker writes games, a day's close, and reads the same
    Redis: an operator's value must reach it as it reaches the API)."""
    given, worker = services[api]["environment"], services["worker"]["environment"]
    return [name for name, value in given.items()
            if name not in REQUESTS_ONLY and worker.get(name) != value]


def test_the_worker_is_given_every_setting_of_the_api_it_reads_too():
    assert settings_the_worker_lacks(_compose()["services"], "api") == []


def test_the_solver_worker_runs_the_devserver_worker_command_on_the_same_redis():
    services = _compose()["services"]
    worker = services["worker"]
    assert WORKER_COMMAND == ("python", "-m", "service.solver.worker")
    assert tuple(_words(worker["command"])) == WORKER_COMMAND
    assert worker["build"] == services["api"]["build"]  # the same image
    assert worker["environment"]["REDIS_URL"] == services["api"]["environment"]["REDIS_URL"]
    assert "SECRET_KEY" not in worker["environment"]  # no Flask app: it needs none
    assert worker["depends_on"]["redis"]["condition"] == "service_healthy"
    assert worker_checks_its_heartbeat(worker)
    assert worker["restart"] == "unless-stopped"


def test_events_runs_the_devserver_events_command_and_shares_the_handoff_socket():
    services = _compose()["services"]
    events, api = services["events"], services["api"]
    assert tuple(_words(events["command"])) == EVENTS_COMMAND
    assert events["depends_on"]["redis"]["condition"] == "service_healthy"
    socket_path = api["environment"]["EVENTS_HANDOFF_SOCKET"]
    assert events["environment"]["EVENTS_HANDOFF_SOCKET"] == socket_path
    directory = socket_path.rsplit("/", 1)[0]
    mounts = {volume.split(":")[0] for volume in api["volumes"]
              if volume.split(":")[1] == directory}
    assert mounts
    assert mounts == {volume.split(":")[0] for volume in events["volumes"]
                                 if volume.split(":")[1] == directory}
    assert "/healthz" in " ".join(_words(events["healthcheck"]["test"]))


def test_api_waits_for_a_healthy_redis_and_is_configured_for_it():
    api = _compose()["services"]["api"]
    assert api["depends_on"]["redis"]["condition"] == "service_healthy"
    environment = api["environment"]
    assert environment["REDIS_URL"] == "redis://redis:6379/0"
    assert {"WEB_CONCURRENCY", "GAME_TTL_SECONDS", "LOG_LEVEL"} <= set(environment)
    assert "/healthz" in " ".join(_words(api["healthcheck"]["test"]))


@pytest.mark.parametrize(
    ("option", "value"), [("--appendonly", "yes"), ("--appendfsync", "always")]
)
def test_redis_persists_every_write(option, value):
    redis = _compose()["services"]["redis"]
    assert redis["image"] == "${REDIS_IMAGE:-redis:7-alpine}"
    words = _words(redis["command"])
    assert words[:2] == ["sh", "/usr/local/bin/redis-start.sh"]  # then redis-server
    assert words[words.index(option) + 1] == value
    assert redis["healthcheck"]["test"] == [
        "CMD-SHELL",
        'REDISCLI_AUTH="$$(cat /run/secrets/redis_password)" redis-cli ping | grep -q PONG']
    # Games are never evicted: a full Redis refuses writes.
    assert words[words.index("--maxmemory-policy") + 1] == "noeviction"
    assert words[words.index("--maxmemory") + 1] == "${REDIS_MAXMEMORY:-1gb}"
    assert any(volume.endswith(":/data") for volume in redis["volumes"])


def test_dockerfile_runs_as_non_root_with_a_healthcheck():
    assert _dockerfile_instruction("ARG") == "PYTHON_IMAGE=python:3.11-slim"
    assert _dockerfile_instruction("FROM") == "${PYTHON_IMAGE}"
    assert _dockerfile_instruction("USER") not in ("root", "0")
    assert _dockerfile_instruction("EXPOSE") == "8000"
    assert "/healthz" in _dockerfile_instruction("HEALTHCHECK")


def test_api_events_and_worker_share_one_image_built_on_the_chosen_base():
    services = _compose()["services"]
    for name in ("api", "events", "worker"):
        assert services[name]["image"] == "${APP_IMAGE:-patience-server:latest}", name
        assert services[name]["build"] == {
            "context": ".", "args": {"PYTHON_IMAGE": "${PYTHON_IMAGE:-python:3.11-slim}"}}


def test_the_events_open_file_limit_is_a_variable():
    events = _compose()["services"]["events"]
    assert events["ulimits"]["nofile"] == {"soft": "${EVENTS_NOFILE:-16384}",
                                           "hard": "${EVENTS_NOFILE:-16384}"}
    # Unset by default: the events group takes what the limit allows.
    assert events["environment"]["EVENTS_MAX_STREAMS"] == "${EVENTS_MAX_STREAMS:-}"


def test_only_the_api_is_published_and_on_loopback_unless_the_operator_says_otherwise():
    compose = _compose()
    assert published_on_loopback_only(compose) == {"api": ["8000:8000"]}
    # The operator chooses the address (and port) in PORT: one variable, documented.
    assert compose["services"]["api"]["ports"] == ["${PORT:-127.0.0.1:8000}:8000"]
    assert "`PORT` | `127.0.0.1:8000`" in (ROOT / "docs" / "deployment.md").read_text()


def test_every_service_has_memory_and_cpu_limits_and_a_rotated_log():
    compose = _compose()
    limits = limited_and_rotated(compose)
    assert set(limits) == {"api", "events", "worker", "redis"}
    assert limits["redis"] == ("2g", "1")  # room above maxmemory for the rewrite's fork
    assert compose["services"]["redis"]["mem_limit"] == "${REDIS_MEMORY:-2g}"


def test_every_long_running_service_has_a_health_check_that_means_it():
    services = _compose()["services"]
    for name, service in services.items():
        assert not service["healthcheck"].get("disable"), name
    assert worker_checks_its_heartbeat(services["worker"])


def secrets_are_files_never_variables(compose: dict, readers: dict[str, set],
                                      others: tuple[str, ...] = ()) -> None:
    """The three secrets (and ``others``) are files (``SECRET_KEY_FILE``,
    ``REDIS_PASSWORD_FILE``, ``REDIS_SERVICE_PASSWORD_FILE``, ``<OTHER>_FILE`` name them
    on the host, ``./secrets`` by default), mounted in the services of ``readers`` only
    and named by their settings; no service's environment holds a secret.  Every service
    of the service's image logs in to Redis as ``patience`` with the service's password,
    and none of them holds the default user's."""
    assert compose["secrets"] == {
        "secret_key": {"file": "${SECRET_KEY_FILE:-./secrets/secret_key}"},
        "redis_password": {"file": "${REDIS_PASSWORD_FILE:-./secrets/redis_password}"},
        "redis_service_password": {
            "file": "${REDIS_SERVICE_PASSWORD_FILE:-./secrets/redis_service_password}"},
        **{name: {"file": f"${{{name.upper()}_FILE:-./secrets/{name}}}"} for name in others}}
    for name, service in compose["services"].items():
        environment = service.get("environment", {})
        assert "SECRET_KEY" not in environment, name
        assert not any("PASSWORD" in key and not key.endswith("_FILE") for key in environment)
        assert set(service.get("secrets", [])) == readers.get(name, set()), name
        if "secret_key" in service.get("secrets", []):
            assert environment["SECRET_KEY_FILE"] == "/run/secrets/secret_key", name
        if "REDIS_URL" in environment:
            assert environment["REDIS_USERNAME"] == "patience", name
            assert environment["REDIS_PASSWORD_FILE"] == \
                "/run/secrets/redis_service_password", name
            assert "redis_service_password" in service["secrets"], name
            assert "redis_password" not in service["secrets"], name


def test_the_secrets_are_files_and_redis_asks_for_a_password():
    compose = _compose()
    secrets_are_files_never_variables(compose, {
        "api": {"secret_key", "redis_service_password"},
        "events": {"secret_key", "redis_service_password"},
        "worker": {"redis_service_password"},
        "redis": {"redis_password", "redis_service_password"}})
    redis = compose["services"]["redis"]
    assert "./deploy/redis-start.sh:/usr/local/bin/redis-start.sh:ro" in redis["volumes"]
    script = (ROOT / "deploy" / "redis-start.sh").read_text()
    # Every permission (the append-only file is replayed as that user), with the password.
    assert "user default on >$password ~* &* +@all\n" in script
    # The service's user: no dangerous command but the state it reads.
    assert ("user patience on >$service_password ~* &* +@all -@dangerous +info "
            "+cluster|slots +cluster|shards +cluster|nodes +cluster|info +cluster|myid\n"
            ) in script
    assert "masterauth $password" in script
    # The password goes to a file of the container, never to the command line.
    assert 'redis-server "$@" --include "$auth/auth.conf"' in script
    makefile = (ROOT / "Makefile").read_text()
    assert ("secrets: secrets/secret_key secrets/redis_password "
            "secrets/redis_service_password \\\n\tsecrets/stats_password ") in makefile
    assert "secrets/" in (ROOT / ".gitignore").read_text().split()
    assert "secrets/" in (ROOT / ".dockerignore").read_text().split()


@pytest.mark.timeout(60)
def test_redis_start_answers_nothing_without_a_password_and_the_service_nothing_dangerous(
        tmp_path):
    """deploy/redis-start.sh run against a local redis-server: the default user with its
    password every command; the service's user `patience` with its own what the service
    sends (scripts, pub/sub, WAIT, INFO, the cluster state) and NOPERM for a dangerous
    command; without a password nothing, PING included; no password in an argument."""
    binary = find_redis_server()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "redis-server").symlink_to(binary)
    (tmp_path / "password").write_text("s3cret-pass\n")
    (tmp_path / "service-password").write_text("serv1ce-pass\n")
    port = free_port()
    environment = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}",
                       REDIS_PASSWORD_FILE=str(tmp_path / "password"),
                       REDIS_SERVICE_PASSWORD_FILE=str(tmp_path / "service-password"))
    script = (ROOT / "deploy" / "redis-start.sh").read_text().replace(
        "auth=/tmp/redis-auth", f"auth={tmp_path}/auth")
    (tmp_path / "start.sh").write_text(script)
    process = subprocess.Popen(["sh", str(tmp_path / "start.sh"), "--port", str(port),
                                "--bind", "127.0.0.1", "--save", ""], env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        admin = redis_client.Redis(port=port, password="s3cret-pass", socket_timeout=5)
        deadline = time.monotonic() + 20
        while True:
            try:
                assert admin.ping()
                break
            except redis_client.ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert admin.set("game:{x}", "1")
        assert admin.config_get("masterauth")["masterauth"] == "s3cret-pass"
        service = redis_client.Redis(port=port, username="patience", password="serv1ce-pass",
                                     socket_timeout=5)
        assert service.get("game:{x}") == b"1"
        assert service.eval("return redis.call('INCR', KEYS[1])", 1, "game:{x}") == 2
        sha = service.script_load("return redis.call('GET', KEYS[1])")
        assert service.evalsha(sha, 1, "game:{x}") == b"2"
        assert service.execute_command("WAIT", 0, 0) == 0
        assert service.publish("feed:{x}", "event") == 0
        assert "maxmemory" in service.info("memory")
        for command in (("FLUSHALL",), ("KEYS", "*"), ("CONFIG", "GET", "maxmemory"),
                        ("DEBUG", "SLEEP", "0"), ("SHUTDOWN",), ("REPLICAOF", "NO", "ONE"),
                        ("ACL", "LIST"), ("MONITOR",)):
            with pytest.raises(redis_client.exceptions.NoPermissionError):
                service.execute_command(*command)
        assert admin.dbsize() == 1  # nothing flushed
        with pytest.raises(redis_client.AuthenticationError):
            redis_client.Redis(port=port, username="patience", password="s3cret-pass",
                               socket_timeout=5).ping()
        # Without the password (inline commands on a bare connection): refused.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as anonymous:
            for command in (b"PING", b"GET game:{x}", b"SET game:{x} 2", b"CLUSTER INFO"):
                anonymous.sendall(command + b"\r\n")
                assert anonymous.recv(4096).startswith(b"-NOAUTH"), command
            anonymous.sendall(b"AUTH wrong\r\n")
            assert anonymous.recv(4096).startswith(b"-WRONGPASS")
        arguments = Path(f"/proc/{admin.info('server')['process_id']}/cmdline").read_bytes()
        assert b"s3cret-pass" not in arguments
        assert b"serv1ce-pass" not in arguments
    finally:
        process.kill()
        process.wait()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("missing", ["REDIS_PASSWORD_FILE", "REDIS_SERVICE_PASSWORD_FILE"])
@pytest.mark.parametrize("content", [None, "", "two words"])
def test_redis_start_refuses_a_missing_empty_or_blank_password(tmp_path, missing, content):
    """Without either secret (no file, an empty one, or one with a blank that would split
    its ACL line) deploy/redis-start.sh starts nothing and says which setting is wrong."""
    environment = dict(os.environ)
    for name in ("REDIS_PASSWORD_FILE", "REDIS_SERVICE_PASSWORD_FILE"):
        (tmp_path / name).write_text("a-password\n")
        environment[name] = str(tmp_path / name)
    if content is None:
        (tmp_path / missing).unlink()
    else:
        (tmp_path / missing).write_text(content + "\n")
    script = (ROOT / "deploy" / "redis-start.sh").read_text().replace(
        "auth=/tmp/redis-auth", f"auth={tmp_path}/auth")
    (tmp_path / "start.sh").write_text(script)
    finished = subprocess.run(["sh", str(tmp_path / "start.sh"), "--port", "0"],
                              env=environment, capture_output=True, text=True, timeout=20)
    assert finished.returncode == 1, finished
    assert finished.stderr.startswith(f"redis-start: {missing}: "), finished.stderr
    assert not (tmp_path / "auth").exists()
