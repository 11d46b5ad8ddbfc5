"""The solver's worker process: ``python -m service.worker`` (``make run`` and
docker-compose start it next to gunicorn, with the same environment).

It does two things, in this order of priority (:mod:`service.solving` explains both):

1. the analyses that requests queued (``analysis:jobs``), each searched with the whole
   analysis budget and stored with its game;
2. the pools of proved-winnable seeds: while a variant's pool holds fewer seeds than
   ``WINNABLE_POOL`` asks, it solves random deals (a fresh CSPRNG seed each) and adds
   the ones it wins, one search of ``WINNABLE_DEAL_SECONDS`` at a time for each short
   pool in turn.

With nothing to do it looks at the job list and the pools again every half second.  It
runs at a lower CPU priority (``WORKER_NICE``) than the API, so that a search never
slows requests down.  Any number of workers may run against one Redis:
a job is taken by one of them, and a seed popped once.  A lost Redis is waited for; a
stop signal ends the process at once (an analysis cut short is queued again by the next
request once its claim lapses; a search cut short loses nothing).

It logs JSON lines on stderr and never a seed.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time

from service.engine import get_variant
from service.env import env_int
from service.solving import Analyses, find_winnable
from service.store import StorageUnavailable
from service.telemetry import configure_logging

#: Seconds between two looks at the job list when there is nothing to do.
IDLE_WAIT = 0.5

log = logging.getLogger("patience.worker")


class Worker:
    """One worker's loop over the analyses and the pools of :class:`Analyses`' stores."""

    def __init__(self, analyses: Analyses):
        self.analyses = analyses
        self.store = analyses.store
        self.settings = analyses.settings
        self.pools = {name: size for name, size in self.settings.pool.items() if size > 0}
        self._turn = 0  # where the next look for a short pool starts

    def step(self) -> str:
        """Do the most urgent thing there is: what it did, in a word."""
        job = self.store.next_analysis()
        if job is not None:
            return self._analyse(job)
        needy = self._neediest_pool()
        if needy is not None:
            return self._fill(needy)
        time.sleep(IDLE_WAIT)
        return "idle"

    def _analyse(self, game_id: str) -> str:
        started = time.monotonic()
        outcome = self.analyses.run(game_id)
        log.info("analysis", extra={"game_id": game_id, "outcome": outcome,
                                    "duration_ms": round((time.monotonic() - started) * 1000)})
        return "analysis"

    def _neediest_pool(self) -> str | None:
        """The next variant, in turn, whose pool is short (None: all full).  Each short
        pool gets its turn, so that a variant whose deals are seldom won (Four Corners)
        never keeps the others waiting."""
        names = list(self.pools)
        for shift in range(len(names)):
            name = names[(self._turn + shift) % len(names)]
            if self.store.pool_size(name) < self.pools[name]:
                self._turn = (self._turn + shift + 1) % len(names)
                return name
        return None

    def _fill(self, variant_id: str) -> str:
        started = time.monotonic()
        seed = find_winnable(get_variant(variant_id), seconds=self.settings.deal_seconds,
                             deal_seconds=self.settings.deal_seconds,
                             positions=self.settings.deal_positions)
        if seed is not None:
            self.store.add_seed(variant_id, seed)
        log.info("pool search", extra={
            "variant": variant_id, "found": seed is not None,
            "duration_ms": round((time.monotonic() - started) * 1000)})
        return "pool"

    def run(self) -> None:
        while True:
            try:
                self.step()
            except StorageUnavailable as error:
                log.warning("redis unavailable", extra={"error": str(error)})
                time.sleep(1.0)
            except Exception:  # a bug: say so, and keep the other jobs going
                log.exception("worker step failed")
                time.sleep(1.0)


def _stop(_signum, _frame):
    raise SystemExit(0)


def main() -> int:
    configure_logging("INFO")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    try:
        # The app's own configuration and stores: the same settings, the same Redis.
        # (Imported here: a bad setting raises ValueError while the config is read.)
        from service.app import close_app, create_app

        app = create_app()
        nice = env_int("WORKER_NICE", 10)
    except ValueError as error:
        log.error("bad configuration", extra={"error": str(error)})
        return 2
    configure_logging(app.config["LOG_LEVEL"])
    if nice:
        os.nice(nice)
    analyses = app.extensions["analyses"]
    log.info("worker started", extra={"pool": analyses.settings.pool, "pid": os.getpid()})
    try:
        Worker(analyses).run()
    except (KeyboardInterrupt, SystemExit):
        log.info("worker stopped")
    finally:
        close_app(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
