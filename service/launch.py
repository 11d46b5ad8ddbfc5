"""The one way this project starts gunicorn: ``make run`` (:mod:`service.devserver`) calls
:func:`start_gunicorn`; the end-to-end tests and the benchmark use :class:`Gunicorn`,
which starts it the same way and waits until it answers.  The Dockerfile and
docker-compose.yml run the same command lines (tests/test_compose.py checks them): the
request group's (:data:`GUNICORN_COMMAND`) and the events group's
(:data:`EVENTS_COMMAND`, ``events=True``).  The solver's worker (:mod:`service.worker`)
is started the same way by :func:`start_worker`, and docker-compose.yml's ``worker``
service runs its command line (:data:`WORKER_COMMAND`)."""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from service.redis_server import die_with_parent

GUNICORN_COMMAND = ("gunicorn", "-c", "python:service.runtime.request_group",
                    "service.app:create_app()")
#: The events worker group: the same app, gevent workers that hold the events streams.
EVENTS_COMMAND = ("gunicorn", "-c", "python:service.runtime.events_group",
                  "service.app:create_app()")
#: The solver's worker (winnable deals, analyses).
WORKER_COMMAND = ("python", "-m", "service.worker")
ROOT = Path(__file__).resolve().parent.parent


def new_secret_key() -> str:
    """A random ``SECRET_KEY`` (256 bits)."""
    return secrets.token_urlsafe(32)


def start_gunicorn(env: dict[str, str], *, app: str = GUNICORN_COMMAND[-1],
                   output=None, events: bool = False) -> subprocess.Popen:
    """``python -m gunicorn -c python:service.runtime.request_group <app>``
    (``service.runtime.events_group`` with ``events``) in the repository with ``env`` as
    its whole environment (a fresh ``SECRET_KEY`` if it has none), its output to
    ``output`` (a file; None: this process's), in a session of its own (signals reach it
    only through the caller) that dies with the caller's thread."""
    command = EVENTS_COMMAND if events else GUNICORN_COMMAND
    env = dict(env)
    if not env.get("SECRET_KEY"):
        env["SECRET_KEY"] = new_secret_key()
    return subprocess.Popen(
        [sys.executable, "-m", *command[:-1], app], cwd=ROOT, env=env,
        stdin=subprocess.DEVNULL, stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        start_new_session=True, preexec_fn=die_with_parent())


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
    """``python -m service.worker`` in the repository with ``env`` as its whole
    environment (a fresh ``SECRET_KEY`` if it has none: the worker writes no idempotency
    record), its output to ``output`` as :func:`start_gunicorn` does; stop it with
    :func:`stop_gunicorn` (SIGTERM ends it at once)."""
    env = dict(env)
    if not env.get("SECRET_KEY"):
        env["SECRET_KEY"] = new_secret_key()
    return subprocess.Popen(
        [sys.executable, *WORKER_COMMAND[1:]], cwd=ROOT, env=env,
        stdin=subprocess.DEVNULL, stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        start_new_session=True, preexec_fn=die_with_parent())


class GunicornError(RuntimeError):
    """gunicorn exited, or did not answer, while it was being started."""


class Gunicorn:
    """A gunicorn of ``app`` (the service by default) under ``env``, started by
    :func:`start_gunicorn`, its output in the file ``output`` (None: this process's).

    :meth:`start` starts it; :meth:`wait_ready` waits until ``GET ready_path`` on
    ``$HOST:$PORT`` of ``env`` answers 200 and (with ``workers``) the master runs that
    many workers; :meth:`stop` ends it.  As a context manager it does all three.
    """

    def __init__(self, env: Mapping[str, str], *, app: str = GUNICORN_COMMAND[-1],
                 output: Path | None = None, ready_path: str = "/healthz",
                 workers: int | None = None):
        self.env = dict(env)
        self.app = app
        self.output = output
        self.ready_path = ready_path
        self.expected_workers = workers
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def start(self) -> Gunicorn:
        if self.output is None:
            self.process = start_gunicorn(self.env, app=self.app)
        else:
            with open(self.output, "wb") as sink:  # the child keeps its own copy
                self.process = start_gunicorn(self.env, app=self.app, output=sink)
        return self

    def log(self) -> str:
        """What gunicorn wrote so far to ``output`` ("" without one)."""
        if self.output is None or not self.output.exists():
            return ""
        return self.output.read_text(errors="replace")

    def workers(self) -> list[int]:
        """The pids of the master's worker processes (Linux /proc)."""
        return children(self.pid)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until gunicorn answers and runs its workers (see the class);
        :class:`GunicornError` if it exits or ``timeout`` passes first."""
        host, port = self.env.get("HOST") or "127.0.0.1", int(self.env["PORT"])
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise GunicornError(f"gunicorn exited with status {self.process.returncode}:"
                                    f"\n{self.log()[-3000:]}")
            if (self.expected_workers is None or len(self.workers()) == self.expected_workers) \
                    and _answers(host, port, self.ready_path):
                return
            if time.monotonic() > deadline:
                raise GunicornError(f"gunicorn did not answer GET {self.ready_path} within "
                                    f"{timeout:g} s:\n{self.log()[-3000:]}")
            time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> int | None:
        """:func:`stop_gunicorn`; the exit status (None if it was never started)."""
        return None if self.process is None else stop_gunicorn(self.process, timeout)

    def __enter__(self) -> Gunicorn:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc_info) -> None:
        self.stop()


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


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, sorted (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError), \
                    open(f"/proc/{entry}/stat") as stat:
                if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
    return sorted(found)
