"""The one way a gunicorn of the service is started: ``make run`` (service/devserver.py),
the end-to-end tests and the HTTP benchmark all go through :class:`Gunicorn`.

It runs ``python -m gunicorn -c gunicorn.conf.py 'service.app:create_app()'`` (the
command of the Dockerfile and docker-compose.yml, :data:`GUNICORN_COMMAND`) from the
repository root, with the environment it is given (gunicorn.conf.py reads every setting
from there), in a session of its own (signals reach it only through its owner), and dies
with the process that started it.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from service.redis_server import die_with_parent

#: The one gunicorn command line; the Dockerfile and docker-compose.yml run the same one
#: (tests/test_compose.py checks it).
GUNICORN_COMMAND = ("gunicorn", "-c", "gunicorn.conf.py", "service.app:create_app()")

ROOT = Path(__file__).resolve().parent.parent


class GunicornError(RuntimeError):
    """gunicorn exited, or did not answer, while it was being started."""


class Gunicorn:
    """A gunicorn process of ``app`` (the service by default) under ``env``.

    ``output`` is the file that receives gunicorn's stdout and stderr (None: this
    process's own).  :meth:`start` starts it, :meth:`wait_ready` waits until it answers
    ``GET ready_path`` with 200 and (with ``workers``) runs that many workers,
    :meth:`stop` ends it; as a context manager it does all three.
    """

    def __init__(self, env: Mapping[str, str], *, app: str = GUNICORN_COMMAND[-1],
                 output: Path | None = None, ready_path: str = "/healthz",
                 workers: int | None = None):
        self.env = dict(env)
        self.command = [sys.executable, "-m", *GUNICORN_COMMAND[:-1], app]
        self.output = output
        self.ready_path = ready_path
        self.expected_workers = workers
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def start(self) -> Gunicorn:
        sink = open(self.output, "wb") if self.output is not None else None  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                self.command, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL,
                stdout=sink, stderr=subprocess.STDOUT if sink is not None else None,
                start_new_session=True, preexec_fn=die_with_parent())
        finally:
            if sink is not None:
                sink.close()  # the child holds its own copy
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
        """Wait until ``GET ready_path`` answers 200 on ``$HOST:$PORT`` of the
        environment and the master runs the expected workers; :class:`GunicornError`
        if gunicorn exits or ``timeout`` passes first."""
        host, port = self.env.get("HOST") or "127.0.0.1", int(self.env["PORT"])
        path, workers = self.ready_path, self.expected_workers
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise GunicornError(f"gunicorn exited with status {self.process.returncode}:"
                                    f"\n{self.log()[-3000:]}")
            if (workers is None or len(self.workers()) == workers) \
                    and _answers(host, port, path):
                return
            if time.monotonic() > deadline:
                raise GunicornError(f"gunicorn did not answer GET {path} within "
                                    f"{timeout:g} s:\n{self.log()[-3000:]}")
            time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (gunicorn's graceful stop), then SIGKILL after ``timeout`` seconds;
        the exit status (None if it was never started)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

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
