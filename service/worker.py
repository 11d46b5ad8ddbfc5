"""The solver's worker process: ``python -m service.worker`` (``make run`` and
docker-compose start it next to gunicorn, with the same environment).

It does two things, in this order of priority (:mod:`service.solving` explains both):

1. the analyses that requests queued (``analysis:jobs``), each searched with the whole
   analysis budget and stored with its game;
2. the pools of proved-winnable seeds: while a variant's pool holds fewer seeds than
   ``WINNABLE_POOL`` asks, it solves random deals (a fresh CSPRNG seed each) and adds
   the ones it wins, one search of ``WINNABLE_DEAL_SECONDS`` at a time for each short
   pool in turn.  A pool whose searches keep finding nothing (Four Corners, whose deals
   are seldom winnable) is searched less and less often (:class:`Backoff`), so that an
   idle server does not keep a core busy for ever.

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


class Backoff:
    """When a pool may be searched again: right away while its searches find seeds;
    after ``misses`` searches in a row that found nothing, ``2 ** (misses // 8) - 1``
    seconds later (0 for the first 8, then 1, 3, 7, ... s), never more than ``ceiling``.
    A variant winnable one deal in six (the Clock) seldom waits at all; one whose deals
    are almost never won backs off to a search every ``ceiling`` seconds after about 80
    misses."""

    STEP = 8

    def __init__(self, ceiling: float):
        self.ceiling = ceiling
        self.misses = 0
        self.due = 0.0

    def record(self, found: bool, now: float) -> float:
        """Count a search's outcome at ``now`` (monotonic seconds); the pause before the
        next one."""
        self.misses = 0 if found else self.misses + 1
        pause = min(self.ceiling, 2.0 ** (self.misses // self.STEP) - 1)
        self.due = now + pause
        return pause

    def ready(self, now: float) -> bool:
        return now >= self.due


class Worker:
    """One worker's loop over the analyses and the pools of :class:`Analyses`' stores."""

    def __init__(self, analyses: Analyses):
        self.analyses = analyses
        self.store = analyses.store
        self.settings = analyses.settings
        self.pools = {name: size for name, size in self.settings.pool.items() if size > 0}
        self.backoff = {name: Backoff(self.settings.backoff_seconds) for name in self.pools}
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
        never keeps the others waiting.  A pool backing off (:class:`Backoff`) is left
        out until it is due."""
        names = list(self.pools)
        now = time.monotonic()
        for shift in range(len(names)):
            name = names[(self._turn + shift) % len(names)]
            if self.backoff[name].ready(now) and \
                    self.store.pool_size(name) < self.pools[name]:
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
        now = time.monotonic()
        pause = self.backoff[variant_id].record(seed is not None, now)
        log.info("pool search", extra={
            "variant": variant_id, "found": seed is not None,
            "duration_ms": round((now - started) * 1000),
            "misses": self.backoff[variant_id].misses, "next_in_s": round(pause, 1)})
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
