"""The solver's worker process: ``python -m service.worker`` (``make run`` and
docker-compose start it next to gunicorn, with the same environment).

It does two things, in this order of priority (:mod:`service.solving` explains both):

1. the analyses that requests queued (``analysis:jobs``), each searched with the whole
   analysis budget and stored with its game;
2. the pools of proved-winnable seeds: while a variant's pool holds fewer seeds than
   ``WINNABLE_POOL`` asks, it solves random deals (a fresh CSPRNG seed each) and adds
   the ones it wins, one deal at a time, always for the pool that is emptiest for its
   size.

With nothing to do it waits on the job list (a second at a time, then looks at the
pools again).  It runs at a lower CPU priority (``WORKER_NICE``) than the API, so that
a search never slows requests down.  Any number of workers may run against one Redis:
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

import orjson
import redis

from service.config import Config, env_int
from service.engine import get_variant
from service.solver_store import SolverStore
from service.solving import Analyses, SolverSettings, find_winnable, finished_of
from service.store import GameStore, StorageUnavailable
from service.telemetry import json_formatter

#: Seconds the worker waits for a job when it has nothing else to do.
IDLE_WAIT = 1.0

log = logging.getLogger("patience.worker")


class Worker:
    def __init__(self, client: redis.Redis, settings: SolverSettings):
        self.store = SolverStore(client)
        self.settings = settings
        self.client = client
        self.analyses = Analyses(self.store, settings, self._deal_of)
        self.pools = {name: size for name, size in settings.pool.items() if size > 0}

    def _deal_of(self, game_id: str):
        found = self.client.hmget(f"game:{{{game_id}}}", "v", "d")
        if found[0] is None or found[1] is None:
            return None
        return finished_of(orjson.loads(found[1]))

    def step(self, *, wait: float = IDLE_WAIT) -> str:
        """Do the most urgent thing there is (waiting up to ``wait`` seconds for a job
        when there is nothing): what it did, in a word."""
        job = self.store.next_analysis(0)
        if job is not None:
            return self._analyse(job)
        needy = self._neediest_pool()
        if needy is not None:
            return self._fill(needy)
        job = self.store.next_analysis(wait)
        if job is not None:
            return self._analyse(job)
        return "idle"

    def _analyse(self, game_id: str) -> str:
        started = time.monotonic()
        outcome = self.analyses.run(game_id)
        log.info("analysis", extra={"game_id": game_id, "outcome": outcome,
                                    "duration_ms": round((time.monotonic() - started) * 1000)})
        return "analysis"

    def _neediest_pool(self) -> str | None:
        if not self.pools:
            return None
        sizes = self.store.pool_sizes(list(self.pools))
        short = [(sizes[name] / size, name) for name, size in self.pools.items()
                 if sizes[name] < size]
        return min(short)[1] if short else None

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


def _client(config: Config) -> redis.Redis:
    options = GameStore.client_options(vars_of(config))
    # A blocking wait for a job must not look like a hung Redis.
    options["socket_timeout"] = max(float(options["socket_timeout"]), IDLE_WAIT + 2.0)
    return redis.Redis.from_url(config.REDIS_URL, **options)


def vars_of(config) -> dict:
    return {name: getattr(config, name) for name in dir(config) if name.isupper()}


def _stop(signum, _frame):
    raise SystemExit(0)


def main() -> int:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(json_formatter())
    root = logging.getLogger("patience")
    root.addHandler(handler)
    root.setLevel(Config.LOG_LEVEL)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    try:
        settings = SolverSettings.from_config(vars_of(Config))
        nice = env_int("WORKER_NICE", 10)
    except ValueError as error:
        log.error("bad configuration", extra={"error": str(error)})
        return 2
    if nice:
        os.nice(nice)
    worker = Worker(_client(Config), settings)
    log.info("worker started", extra={"pool": settings.pool, "pid": os.getpid()})
    try:
        worker.run()
    except (KeyboardInterrupt, SystemExit):
        log.info("worker stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
