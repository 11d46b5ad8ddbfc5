"""A compose project on the machine's Docker Engine, driven as an operator drives it:
``docker-compose`` (v1, or the ``docker compose`` plugin) and ``docker`` commands only.

Every project has a name of its own (``-p``), publishes its port on 127.0.0.1 only (a
port the engine chooses), and is taken down with its volumes (``down -v``) by
:meth:`Deployment.down`.
"""

from __future__ import annotations

import base64
import csv
import io
import ipaddress
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tests.deploy.figures import Bound, record

ROOT = Path(__file__).resolve().parent.parent.parent


class DeployError(RuntimeError):
    """A docker or compose command failed (the message has its output)."""


@dataclass(frozen=True)
class Death:
    """A container killed: when the kill was issued, and when the engine says the
    container died (monotonic; the engine's report comes tens to hundreds of
    milliseconds after the kill on a loaded machine)."""

    issued: float
    reported: float


def _wall_seconds(text: str) -> float | None:
    """``2026-12-04T17:11:07.123456789Z`` (the engine's times) in seconds since the epoch;
    None for the engine's zero time or anything else."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    try:
        moment = datetime.fromisoformat(whole).replace(tzinfo=UTC)
    except ValueError:
        return None
    if moment.year < 2000:
        return None
    return moment.timestamp() + float(f"0.{fraction or 0}")


def compose_command() -> list[str] | None:
    """``docker-compose`` (v1) or ``docker compose`` (the plugin), whichever works."""
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        result = subprocess.run(["docker", "compose", "version"], capture_output=True,
                                timeout=60)
        if result.returncode == 0:
            return ["docker", "compose"]
    return None


def engine_problem() -> str | None:
    """Why the deploy tests cannot run here (None: they can)."""
    if shutil.which("docker") is None:
        return "no docker command (.ci/run installs docker.io and starts dockerd)"
    try:
        result = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                                capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 60 s"
    if result.returncode != 0 or not result.stdout.strip():
        return f"no usable Docker Engine (`docker info`: {result.stderr.strip()[-300:]})"
    if compose_command() is None:
        return "no docker-compose and no `docker compose` plugin"
    return None


def docker(*args: str, check: bool = True, timeout: float = 120,
           input: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(["docker", *args], capture_output=True, text=True,
                            timeout=timeout, input=input)
    if check and result.returncode != 0:
        raise DeployError(f"docker {' '.join(args)} failed ({result.returncode}):\n"
                          f"{result.stdout[-3000:]}{result.stderr[-3000:]}")
    return result


def _attached(network: str) -> tuple[str, int] | None:
    """``network``'s name and how many containers the engine says are attached to it
    (None: no such network any more)."""
    found = docker("network", "inspect", "--format", "{{len .Containers}} {{.Name}}",
                   network, check=False)
    if found.returncode != 0:
        return None
    count, _, name = found.stdout.strip().partition(" ")
    return name, int(count)


def used_subnets() -> list[ipaddress.IPv4Network]:
    """The IPv4 subnets of the engine's networks."""
    names = docker("network", "ls", "-q").stdout.split()
    if not names:
        return []
    found = docker("network", "inspect", "--format",
                   "{{range .IPAM.Config}}{{.Subnet}} {{end}}", *names).stdout.split()
    subnets = []
    for text in found:
        try:
            network = ipaddress.ip_network(text, strict=False)
        except ValueError:
            continue
        if network.version == 4:
            subnets.append(network)
    return subnets


def free_prefix() -> str:
    """``172.28.N`` (or in 172.29 to 172.31) for a /24 that no network of the engine
    overlaps (the cluster file's REDIS_NETWORK): projects of other test runs may be up at
    the same time."""
    used = used_subnets()
    start = secrets.randbelow(256)
    for second in range(28, 32):
        for step in range(256):
            candidate = ipaddress.ip_network(f"172.{second}.{(start + step) % 256}.0/24")
            if not any(candidate.overlaps(network) for network in used):
                return str(candidate.network_address).rsplit(".", 1)[0]
    raise DeployError("no free /24 left in 172.28.0.0/14")


class Deployment:
    """One compose file under one project name with ``env`` (on top of this process's
    environment, less what would change the file's meaning)."""

    def __init__(self, file: str, project: str, env: dict[str, str]):
        self.file = ROOT / file
        self.project = project
        self.env = {key: value for key, value in os.environ.items()
                    if not key.startswith("COMPOSE_")}
        self.env.update(env)
        self.command = compose_command()
        self._containers: dict[str, str] = {}

    def compose(self, *args: str, check: bool = True,
                timeout: float = 600) -> subprocess.CompletedProcess:
        result = subprocess.run([*self.command, "-f", str(self.file), "-p", self.project,
                                 *args], capture_output=True, text=True, timeout=timeout,
                                env=self.env, cwd=ROOT)
        if check and result.returncode != 0:
            raise DeployError(f"compose {' '.join(args)} failed ({result.returncode}):\n"
                              f"{result.stdout[-4000:]}{result.stderr[-4000:]}")
        return result

    def up(self) -> None:
        self._containers.clear()
        self.compose("up", "-d", "--no-build")

    def down(self, volumes: bool = True) -> subprocess.CompletedProcess:
        """``down`` (graceful stops), with the volumes unless told otherwise; its result
        (not checked)."""
        self._containers.clear()
        return self.compose("down", *(["-v"] if volumes else []), "--remove-orphans",
                            "-t", "10", check=False)

    def remove(self) -> None:
        """Everything of the project gone, volumes included, at once (SIGKILL first: the
        tests are over, nothing is left to end gracefully; restart policies off first, so
        that no container the engine is restarting comes back while it is removed).  A
        ``down`` that fails (the engine busy with another project's containers) is tried
        again, and what it still leaves of the project (networks, volumes: compose labels
        them) is removed by ``docker`` itself; :class:`DeployError` if anything is left
        after that, but for a network no container is attached to that the engine still
        refuses to remove ("has active endpoints": Docker 20.10 loses count of a
        network's endpoints now and then, and only restarting the daemon sets the count
        right): such a network is recorded among the deploy figures, not an error of the
        project."""
        containers = self.leftovers()["container"]
        if containers:
            docker("update", "--restart=no", *containers, check=False)
            docker("kill", *containers, check=False)
        failures = []
        for _attempt in range(3):
            result = self.down()
            if result.returncode == 0 and not any(self.leftovers().values()):
                return
            failures.append(f"down ({result.returncode}): {result.stderr[-1000:]}")
            time.sleep(2)
        for kind, names in self.leftovers().items():
            for name in names:
                docker(kind, "rm", *([] if kind == "network" else ["-f"]), name,
                       check=False)
        left = self.leftovers()
        attached = dict(found for network in left["network"]
                        if (found := _attached(network)) is not None)
        if left["container"] or left["volume"] or any(attached.values()):
            raise DeployError(f"{self.project} left {left} after:\n" + "\n".join(failures))
        if attached:
            record("engine", detail=failures, **{
                f"networks_the_engine_would_not_remove_{self.project}": (
                    attached, Bound("no container attached (only restarting dockerd clears "
                                 "the count the engine lost)",
                                 lambda found: not any(found.values())))})

    def leftovers(self) -> dict[str, list[str]]:
        """The project's containers, networks and volumes the engine still holds."""
        label = f"label=com.docker.compose.project={self.project}"
        return {kind: docker(kind, "ls", *(["-a"] if kind == "container" else []), "-q",
                             "--filter", label, check=False).stdout.split()
                for kind in ("container", "network", "volume")}

    def container(self, service: str) -> str:
        """The id of the service's (first) container, running or not: found by the labels
        compose gives it, as ``compose ps -a -q`` finds it (one-off containers left out),
        but by the engine alone (a compose v1 command costs most of a second of CPU)."""
        if service not in self._containers:
            ids = docker("ps", "-a", "-q", "--filter",
                         f"label=com.docker.compose.project={self.project}", "--filter",
                         f"label=com.docker.compose.service={service}", "--filter",
                         "label=com.docker.compose.oneoff=False").stdout.split()
            if not ids:
                raise DeployError(f"no container of {service}")
            self._containers[service] = ids[0]
        return self._containers[service]

    def published(self, service: str, port: int) -> str:
        """``127.0.0.1:<port>``: where the service's ``port`` is published."""
        address = docker("port", self.container(service), f"{port}/tcp",
                         check=False).stdout.split()
        if not address:
            raise DeployError(f"{service}:{port} is not published")
        return address[0]

    def save_logs(self, name: str) -> None:
        """Every service's log (``compose logs``) into ``tests/artifacts/<name>``."""
        logs = self.compose("logs", "--no-color", check=False).stdout
        (ROOT / "tests" / "artifacts").mkdir(parents=True, exist_ok=True)
        (ROOT / "tests" / "artifacts" / name).write_text(logs)

    def logs(self, service: str) -> str:
        result = docker("logs", self.container(service), check=False, timeout=60)
        return result.stdout + result.stderr

    def inspect(self, service: str) -> dict:
        return json.loads(docker("inspect", self.container(service)).stdout)[0]

    def execute(self, service: str, *command: str, timeout: float = 30) -> str:
        return docker("exec", self.container(service), *command, timeout=timeout).stdout

    def _death(self, container: str, kill: Callable[[], object]) -> Death:
        """Runs ``kill``; when it was issued, and when the engine says the container
        died: the earlier of its ``die`` event (from ``docker events`` started before)
        and its ``State.FinishedAt`` (the exit as the engine recorded it)."""
        since = time.time()
        events = subprocess.Popen(
            ["docker", "events", "--since", f"{since:.6f}", "--filter",
             f"container={container}", "--filter", "event=die", "--format", "{{.TimeNano}}"],
            stdout=subprocess.PIPE, text=True)
        try:
            issued = time.monotonic()
            kill()
            ready, _, _ = select.select([events.stdout], [], [], 30)
            line = events.stdout.readline().strip() if ready else ""
        finally:
            events.kill()
            events.wait()
            events.stdout.close()
        if not line.isdigit():
            raise DeployError(f"{self.project}: no die event of {container} within 30 s")
        reported = int(line) / 1e9
        finished = _wall_seconds(docker("inspect", "--format", "{{.State.FinishedAt}}",
                                        container).stdout.strip())
        if finished is not None and since <= finished < reported:
            reported = finished
        return Death(issued, reported - time.time() + time.monotonic())

    def kill_for_good(self, service: str) -> Death:
        """SIGKILL the service's container and leave it dead, as a host that died: its
        restart policy is turned off first."""
        container = self.container(service)
        docker("update", "--restart=no", container)
        return self._death(container, lambda: docker("kill", "--signal", "KILL", container))

    def kill(self, service: str) -> Death:
        """``docker kill --signal KILL``: the engine counts it as stopped by the operator,
        so its restart policy leaves it down."""
        container = self.container(service)
        return self._death(container, lambda: docker("kill", "--signal", "KILL", container))

    def start(self, service: str) -> None:
        self.compose("start", service)

    def crash(self, service: str) -> Death:
        """SIGKILL the main process of the service's container from the host (it
        crashed): the engine did not stop it, so its restart policy brings it back."""
        pid = self.inspect(service)["State"]["Pid"]
        if not pid:
            raise DeployError(f"{service} is not running")
        return self._death(self.container(service), lambda: os.kill(pid, signal.SIGKILL))

    def restart_count(self, service: str) -> int:
        return self.inspect(service)["RestartCount"]

    def wait_for(self, condition: Callable[[], object], seconds: float, what: str,
                 pause: float = 0.1) -> object:
        """Polls ``condition`` until it returns something true; its value."""
        deadline = time.monotonic() + seconds
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise DeployError(f"{self.project}: {what} not within {seconds:g} s")
            time.sleep(pause)

    def wait_ready(self, base: str, seconds: float = 90, pause: float = 0.1) -> None:
        """Waits until ``GET <base>/readyz`` answers 200 (the published port, or the load
        balancer's)."""
        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=5) as answer:
                    return answer.status == 200
            except (OSError, urllib.error.URLError):  # HTTPError (a 503) included
                return False

        self.wait_for(ready, seconds, f"GET {base}/readyz answered 200", pause=pause)

    def stats_password(self) -> str:
        """The password of HAProxy's stats page (user ``admin``): the first line of the
        secret's file, ``STATS_PASSWORD_FILE`` or ``secrets/stats_password``."""
        path = Path(self.env.get("STATS_PASSWORD_FILE") or ROOT / "secrets" / "stats_password")
        return path.read_text().splitlines()[0].strip()

    def stats(self, path: str = "/stats;csv", password: str | None = None,
              data: bytes | None = None) -> tuple[int, str]:
        """A request to HAProxy's stats page where the ``lb`` container publishes it (on
        127.0.0.1), with the user ``admin`` and ``password`` (the secret's unless given;
        ``""``: no credentials): the status and the body."""
        address = docker("port", self.container("lb"), "8404/tcp").stdout.split()[0]
        password = self.stats_password() if password is None else password
        headers = {}
        if password:
            token = base64.b64encode(f"admin:{password}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        request = urllib.request.Request(f"http://{address}{path}", data=data,
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode(errors="replace")
        except OSError as error:
            raise DeployError(f"{self.project}: the stats page: {error}") from error

    def haproxy_states(self) -> dict[str, str]:
        """``{"api/api-1": "UP", ...}``: the load balancer's servers, read from its stats
        page (published on 127.0.0.1, behind the password of the secret)."""
        status, text = self.stats()
        if status != 200:
            raise DeployError(f"{self.project}: the stats page answered {status}")
        rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
        return {f"{row['pxname']}/{row['svname']}": row["status"] for row in rows
                if row["svname"] not in ("FRONTEND", "BACKEND")}


def up_on_a_free_network(compose_file: str, project: str,
                         environment: Callable[[str], dict]) -> tuple[Deployment, str]:
    """``compose_file`` up with its Redis network on a /24 no network uses
    (``environment(prefix)``: the deployment's variables for that network's first three
    numbers); another run may take the range between the choice and ``up``, so up to 3
    tries.  The deployment and the prefix."""
    for attempt in range(3):
        prefix = free_prefix()
        deployment = Deployment(compose_file, project, environment(prefix))
        try:
            deployment.up()
            return deployment, prefix
        except DeployError as error:
            deployment.remove()
            if "overlaps" not in str(error) or attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
