"""The solver's worker as a real process for the tests: ``python -m service.solver.worker`` (the
command of ``make run`` and docker-compose, started by the same launcher), on the
tests' Redis, with small budgets."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import time
from pathlib import Path

from devtools.launch import start_worker, stop_gunicorn


class WorkerProcess:
    """The worker with ``env`` on top of this process's environment; its JSON log lines
    go to ``log``.  Leaving the ``with`` block stops it and checks that it logged no
    traceback.  Unless ``env`` says otherwise it runs at the API's CPU priority and with
    a whole core for its share (``WORKER_CPU_SHARE=1``: no rest between searches), so
    that it fills the tests' pools quickly."""

    def __init__(self, redis_url: str, log: Path, **env: str):
        self.log = log
        self.env = dict(os.environ, REDIS_URL=redis_url, LOG_LEVEL="INFO", WORKER_NICE="0",
                        WORKER_CPU_SHARE="1")
        self.env.update(env)
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> WorkerProcess:
        with open(self.log, "wb") as sink:
            self.process = start_worker(self.env, output=sink)
        deadline = time.monotonic() + 20
        while not any(line.get("message") == "worker started" for line in self.lines()):
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, "the worker did not start\n" + self.log.read_text()
            time.sleep(0.05)
        return self

    @property
    def pid(self) -> int:
        return self.process.pid

    def __exit__(self, *exc_info) -> None:
        stop_gunicorn(self.process, 10)
        text = self.log.read_text(errors="replace")
        assert "Traceback" not in text, text[-5000:]

    def lines(self) -> list[dict]:
        """The worker's log so far, one dict per JSON line."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                found.append(json.loads(line))
            except ValueError:
                found.append({"message": line})
        return found


def wait_for(predicate, *, seconds: float, what: str, step: float = 0.05):
    """Poll ``predicate`` until it answers something true; that answer."""
    deadline = time.monotonic() + seconds
    while True:
        found = predicate()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out after {seconds} s waiting for {what}"
        time.sleep(step)


@functools.cache
def quickly_won_seed(variant: str, *, seconds: float = 0.5, tries: int = 60) -> int:
    """The first deal number, counting from 0, that the solver wins within ``seconds``
    (found with the solver itself, never taken from a list)."""
    from service.engine.search import Outcome, solve

    for seed in range(tries):
        if solve(variant, seed, max_seconds=seconds).result == Outcome.WON:
            return seed
    raise AssertionError(f"no {variant} deal among the first {tries} won in {seconds} s")


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
