"""The one launcher of the service's processes for ``make run``, the tests and the
benchmarks: gunicorn (:func:`start_gunicorn`, or :class:`Gunicorn`, which waits until it
answers), the solver's worker (:func:`start_worker`) and ``make run`` itself
(:class:`DevServer`: ``python -m devtools.devserver`` as a child, with its parts found
by their command lines).  The Dockerfile and docker-compose.yml run the same command
lines (tests/test_compose.py checks them): the request group's
(:data:`GUNICORN_COMMAND`), the events group's (:data:`EVENTS_COMMAND`, ``events=True``)
and the worker's (:data:`WORKER_COMMAND`)."""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import signal
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path

from devtools.processes import children, cmdline, die_with_parent
from devtools.redis_server import free_port

GUNICORN_COMMAND = ("gunicorn", "-c", "python:service.runtime.request_group",
                    "service.app:create_app()")
#: The events worker group: the same app, gevent workers that hold the events streams.
EVENTS_COMMAND = ("gunicorn", "-c", "python:service.runtime.events_group",
                  "service.app:create_app()")
#: The solver's worker (winnable deals, analyses).
WORKER_COMMAND = ("python", "-m", "service.solver.worker")
ROOT = Path(__file__).resolve().parent.parent


def new_secret_key() -> str:
    """A random ``SECRET_KEY`` (256 bits)."""
    return secrets.token_urlsafe(32)


def _spawn(argv: list[str], env: Mapping[str, str], output, cwd: Path = ROOT
           ) -> subprocess.Popen:
    """``argv`` in ``cwd`` with ``env`` as its whole environment, its output to ``output``
    (a file; None: this process's), in a session of its own (signals reach it only
    through the caller) that dies with the caller's thread."""
    return subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        start_new_session=True, preexec_fn=die_with_parent())


def _with_secret_key(env: Mapping[str, str]) -> dict[str, str]:
    """``env``, with a fresh ``SECRET_KEY`` if it has none."""
    env = dict(env)
    if not env.get("SECRET_KEY"):
        env["SECRET_KEY"] = new_secret_key()
    return env


def start_gunicorn(env: dict[str, str], *, app: str = GUNICORN_COMMAND[-1],
                   output=None, events: bool = False, python: str = sys.executable,
                   cwd: Path = ROOT) -> subprocess.Popen:
    """``python -m gunicorn -c python:service.runtime.request_group <app>``
    (``service.runtime.events_group`` with ``events``) by ``python`` (this one by
    default; another venv's to run an installed package) in ``cwd`` (the repository by
    default) with ``env`` as its whole environment (a fresh ``SECRET_KEY`` if it has
    none), its output to ``output`` (a file; None: this process's), in a session of its
    own (signals reach it only through the caller) that dies with the caller's thread."""
    command = EVENTS_COMMAND if events else GUNICORN_COMMAND
    return _spawn([python, "-m", *command[:-1], app], _with_secret_key(env), output, cwd)


def stop_gunicorn(process: subprocess.Popen, timeout: float = 30.0) -> int:
    """SIGTERM (a graceful stop), SIGKILL after ``timeout``; the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def start_worker(env: dict[str, str], *, output=None) -> subprocess.Popen:
    """``python -m service.solver.worker`` in the repository with ``env`` as its whole
    environment (it needs no ``SECRET_KEY``: it runs no Flask app), its output to
    ``output`` as :func:`start_gunicorn` does; stop it with :func:`stop_gunicorn` (SIGTERM
    ends it at once)."""
    return _spawn([sys.executable, *WORKER_COMMAND[1:]], dict(env), output)


class StartError(RuntimeError):
    """A service exited, or did not answer, while it was being started."""


class GunicornError(StartError):
    """gunicorn exited, or did not answer, while it was being started."""


class _Service(ABC):
    """A service process that is ready once it answers ``GET ready_path`` with 200 on
    ``host:port`` (and :meth:`_running` says so).  Subclasses set :attr:`NAME`,
    :attr:`ERROR` and the default timeouts, and give :meth:`start`, :meth:`log` and
    :meth:`_address`.
    :meth:`wait_ready` waits for it, :meth:`stop` ends it (SIGTERM, SIGKILL after the
    timeout); as a context manager it does all three."""

    NAME = "the service"
    ERROR: type[StartError] = StartError
    READY_SECONDS = 30.0
    STOP_SECONDS = 30.0
    process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    @abstractmethod
    def start(self) -> _Service:
        """Start the process (without waiting for it)."""

    @abstractmethod
    def log(self) -> str:
        """What it wrote so far."""

    @abstractmethod
    def _address(self) -> tuple[str, int, str]:
        """``(host, port, ready_path)``."""

    def _running(self) -> bool:
        """Whether the processes it needs run (besides answering)."""
        return True

    def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until it answers (see the class); :attr:`ERROR` if it exits or
        ``timeout`` (:attr:`READY_SECONDS` by default) passes first."""
        timeout = self.READY_SECONDS if timeout is None else timeout
        host, port, path = self._address()
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise self.ERROR(f"{self.NAME} exited with status {self.process.returncode}:"
                                 f"\n{self.log()[-3000:]}")
            if self._running() and _answers(host, port, path):
                return
            if time.monotonic() > deadline:
                raise self.ERROR(f"{self.NAME} did not answer GET {path} within "
                                 f"{timeout:g} s:\n{self.log()[-3000:]}")
            time.sleep(0.1)

    def stop(self, timeout: float | None = None) -> int | None:
        """:func:`stop_gunicorn` (SIGTERM, SIGKILL after ``timeout``, :attr:`STOP_SECONDS`
        by default); the exit status (None if it was never started)."""
        if self.process is None:
            return None
        return stop_gunicorn(self.process, self.STOP_SECONDS if timeout is None else timeout)

    def __enter__(self):
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc_info) -> None:
        self.stop()


class Gunicorn(_Service):
    """A gunicorn of ``app`` (the service by default) under ``env``, started by
    :func:`start_gunicorn` (by ``python`` in ``cwd``; the events group's with ``events``,
    whose ``EVENTS_BIND`` must then be ``$HOST:$PORT``), its output in the file ``output``
    (None: this process's).

    :meth:`start` starts it; :meth:`wait_ready` waits until ``GET ready_path`` on
    ``$HOST:$PORT`` of ``env`` answers 200 and (with ``workers``) the master runs that
    many workers; :meth:`stop` ends it.  As a context manager it does all three.
    """

    NAME = "gunicorn"
    ERROR = GunicornError

    def __init__(self, env: Mapping[str, str], *, app: str = GUNICORN_COMMAND[-1],
                 output: Path | None = None, ready_path: str = "/healthz",
                 workers: int | None = None, python: str = sys.executable,
                 cwd: Path = ROOT, events: bool = False):
        self.env = dict(env)
        self.events = events
        self.app = app
        self.python = python
        self.cwd = cwd
        self.output = output
        self.ready_path = ready_path
        self.expected_workers = workers
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Gunicorn:
        options = {"app": self.app, "python": self.python, "cwd": self.cwd,
                   "events": self.events}
        if self.output is None:
            self.process = start_gunicorn(self.env, **options)
        else:
            with open(self.output, "wb") as sink:  # the child keeps its own copy
                self.process = start_gunicorn(self.env, output=sink, **options)
        return self

    def log(self) -> str:
        """What gunicorn wrote so far to ``output`` ("" without one)."""
        if self.output is None or not self.output.exists():
            return ""
        return self.output.read_text(errors="replace")

    def workers(self) -> list[int]:
        """The pids of the master's worker processes (Linux /proc)."""
        return children(self.pid)

    def _address(self) -> tuple[str, int, str]:
        return self.env.get("HOST") or "127.0.0.1", int(self.env["PORT"]), self.ready_path

    def _running(self) -> bool:
        return self.expected_workers is None or len(self.workers()) == self.expected_workers


def _answers(host: str, port: int, path: str) -> bool:
    with contextlib.suppress(OSError, http.client.HTTPException):
        connection = http.client.HTTPConnection(host, port, timeout=2)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            return response.status == 200
        finally:
            connection.close()
    return False



#: ``make run``: Redis (unless ``REDIS_URL``), the solver's worker and both gunicorn groups.
DEVSERVER_COMMAND = ("python", "-m", "devtools.devserver")


class DevServerError(StartError):
    """The development server exited, or did not answer, while it was being started."""


class DevServer(_Service):
    """``python -m devtools.devserver`` (what ``make run`` runs) on a free port of
    127.0.0.1, its output appended to ``workdir/devserver.log``.

    Its environment is this process's without what the development server sets up
    itself (``REDIS_URL``, ``REDIS_PORT``, ``SECRET_KEY`` and the groups' sockets and
    metrics directory), with ``PORT``, ``REDIS_DATA_DIR=workdir/redis`` and
    ``SECRET_KEY_FILE=workdir/secret-key``, then ``env`` on top (``REDIS_URL=...`` to
    use a Redis that runs already).  It runs in a session of its own and dies with the
    caller's thread.  :meth:`start` starts it, :meth:`wait_ready` waits until both
    gunicorn groups run workers and ``GET /healthz`` answers 200, :meth:`stop` ends it
    (SIGTERM, as Ctrl-C does); as a context manager it does all three.  :meth:`parts`
    finds its processes."""

    #: What the development server sets up itself unless the caller says otherwise.
    OWN_SETTINGS = ("REDIS_URL", "REDIS_PORT", "SECRET_KEY", "PROMETHEUS_MULTIPROC_DIR",
                    "EVENTS_BIND", "EVENTS_HANDOFF_SOCKET")
    HOST = "127.0.0.1"
    NAME = "the development server"
    ERROR = DevServerError
    READY_SECONDS = 60.0
    STOP_SECONDS = 60.0

    def __init__(self, workdir: Path, **env: str):
        self.workdir = Path(workdir)
        self.port = free_port(self.HOST)
        self.base = f"http://{self.HOST}:{self.port}"
        self.output = self.workdir / "devserver.log"
        self.env = {name: value for name, value in os.environ.items()
                    if name not in self.OWN_SETTINGS}
        self.env.update(PORT=str(self.port), REDIS_DATA_DIR=str(self.workdir / "redis"),
                        SECRET_KEY_FILE=str(self.workdir / "secret-key"))
        self.env.update(env)
        self.process: subprocess.Popen[bytes] | None = None
        self.log_offset = 0

    def start(self) -> DevServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with open(self.output, "ab") as sink:  # the child keeps its own copy
            self.log_offset = sink.tell()
            self.process = _spawn([sys.executable, *DEVSERVER_COMMAND[1:]], self.env, sink)
        return self

    def log(self) -> str:
        """What this run wrote so far."""
        with contextlib.suppress(OSError), open(self.output, "rb") as log:
            log.seek(self.log_offset)
            return log.read().decode(errors="replace")
        return ""

    def part_of(self, pid: int) -> str:
        """Which part of the development server its child ``pid`` is: ``redis-server``,
        ``worker`` (the solver's), ``events group`` or ``request group`` (a gunicorn
        master), by its command line; ``other`` if none."""
        argv = cmdline(pid)
        # redis-server writes its address over its command line: "<binary> <host:port>".
        if argv and os.path.basename(argv[0]).startswith("redis-server"):
            return "redis-server"
        if _runs(argv, WORKER_COMMAND[1:]):
            return "worker"
        if _runs(argv, EVENTS_COMMAND[1:3]):
            return "events group"
        if _runs(argv, GUNICORN_COMMAND[1:3]):
            return "request group"
        return "other"

    def parts(self) -> dict[str, list[int]]:
        """The pids of each part that runs (see :meth:`part_of`); a gunicorn group's
        master first, then its workers."""
        found: dict[str, list[int]] = {}
        for child in children(self.pid):
            part = self.part_of(child)
            found.setdefault(part, []).append(child)
            if part.endswith(" group"):
                found[part].extend(children(child))
        return found

    def _address(self) -> tuple[str, int, str]:
        return self.HOST, self.port, "/healthz"

    def _running(self) -> bool:
        """Both gunicorn groups run a worker at least."""
        parts = self.parts()
        return all(len(parts.get(group, ())) > 1 for group in ("events group", "request group"))


def _runs(argv: list[str], words: tuple[str, ...]) -> bool:
    """Whether ``words`` stand in ``argv`` one after the other."""
    return any(tuple(argv[index:index + len(words)]) == words for index in range(len(argv)))
