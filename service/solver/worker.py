"""The solver's worker process: ``python -m service.solver.worker`` (``make run`` and
docker-compose start it next to gunicorn, with the same Redis and solver settings).  It
builds only the storage backend, the stores and the analyses (:func:`analyses_of`): no
Flask app, so it needs no ``SECRET_KEY``.

It does two things, in this order of priority (:mod:`service.solver.features` explains both):

1. the analyses that requests queued (``analysis:jobs``), each searched with the whole
   analysis budget and stored with its game;
2. the pools of proved-winnable seeds: while a variant's pool holds fewer seeds than
   ``WINNABLE_POOL`` asks, it solves random deals (a fresh CSPRNG seed each) and adds
   the ones it wins, one deal at a time, each searched once within
   ``WINNABLE_DEAL_POSITIONS`` positions (``WINNABLE_DEAL_SECONDS`` of CPU at most).  Of
   the short pools, the next search goes to the one whose seeds have cost the least CPU
   so far (:meth:`Worker.cost`): the share buys the most seeds that way.  A pool whose
   deals are mostly won (the Clock, Salic Law) refills first, in a few searches; one
   whose searches keep missing (Four Corners) gets the searches left once the others are
   full, and never keeps them waiting.

**Its CPU share** (``WORKER_CPU_SHARE``, a fraction of one core, 0.02 by default). The
worker reads its own CPU time (:func:`time.process_time`: the searches, the Redis round
trips and the logging, all of it) and, after each search for a pool, rests until its
average is back within the share (:class:`CpuShare`): a search that took 4 s of CPU is
followed by 200 s of rest at the default.  A pool that keeps missing (Four Corners) is
so searched on and on, at the share and no more, and serves its winnable deals as the
searches find them; a service nobody calls uses its share at most.  The share holds over
any window as long as one search and its rest (over a longer window T, the worker uses
at most share × T plus one search: over 10 minutes at the defaults, 12 s plus at most
10 s); the window is that of a search because a search cannot be cut into pieces without
losing its table of positions.  An analysis never waits for the share: a user is waiting
for it (``GET .../analysis`` answers 202 meanwhile), so it starts as soon as it is
queued, the worker resting or not.  Its CPU counts all the same: the pools' next search
comes that much later, by one search's rest at most.

Every budget in seconds of the worker's searches (``WINNABLE_DEAL_SECONDS``,
``ANALYSIS_SECONDS``) is read on its CPU time, as the benchmarks read theirs: a search
gets its seconds of one core however busy the machine is (a busy machine makes it take
longer, not search less).

With nothing to do it looks at the job list (and, when it may search, the pools) again
every half second.  Its searches and analyses run on a thread of their own
(:class:`LowPriority`) at a lower CPU priority (``WORKER_NICE``) than the API, so that a
search never slows requests down; the rest of its work (the sweeps, the daily deal: a
day's close of every game still in play) runs at the API's, so that its deadlines do
not depend on the CPU the API leaves (on Linux, where a priority is a thread's;
elsewhere the whole process runs at the lower one).  One thing runs at a time: the loop
waits for the thread's search.  Any number of workers may run against one
Redis, each with its own share: a job is taken by one of them, and a seed popped once.
A lost Redis is waited for; a stop signal ends the process at once (an analysis cut
short is queued again by the next request once its claim lapses; a search cut short
loses nothing).

Every couple of seconds (:data:`SWEEP_EVERY`) it also sweeps the outboxes of owned
games: the events a request could not apply to their players' keys or to a day's board
(:mod:`service.players.projection`) are applied then, once.  And it looks after the
daily deal (:class:`service.daily.boards.Daily`): today's deals chosen from the pools,
the days past their end and ``DAILY_CLOSE_GRACE_SECONDS`` closed (their ranked games
still in play abandoned, onto their boards), the days past ``DAILY_KEEP_DAYS`` trimmed.

It logs JSON lines on stderr and never a seed.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from service.config import SOLVER_WORKER, process_settings, read_config
from service.daily.boards import Daily, daily_of
from service.engine import get_variant
from service.engine.search import CPU_CLOCK
from service.game.application import Games, open_store
from service.observability.telemetry import configure_logging
from service.players.projection import Projector, projector_of
from service.solver.features import Analyses, SolverSettings, try_deal
from service.storage.game_store import StorageUnavailable
from service.storage.solver import SolverStore

#: Seconds between two looks at the job list when there is nothing to do.
IDLE_WAIT = 0.5
#: Seconds between two sweeps of the owned games' outboxes.
SWEEP_EVERY = 2.0

log = logging.getLogger("patience.worker")
T = TypeVar("T")


class LowPriority:
    """Calls made one at a time on a thread of its own, whose CPU priority is ``nice``
    lower than the caller's (Linux sets a thread's own; elsewhere the process's).  The
    thread is a daemon: a stop signal ends the process at once, a search under way or
    not."""

    def __init__(self, nice: int):
        self.nice = nice
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="worker-searches",
                                       daemon=True)
        self.thread.start()
        self._started.wait()

    def _serve(self) -> None:
        if self.nice:
            os.nice(self.nice)
        self._started.set()
        while True:
            call, done, answer = self._calls.get()
            try:
                answer.append((True, call()))
            except BaseException as error:  # whatever it is, the caller raises it
                answer.append((False, error))
            done.set()

    def __call__(self, call: Callable[[], T]) -> T:
        """``call()``'s result (or its exception), computed on the thread."""
        done, answer = threading.Event(), []
        self._calls.put((call, done, answer))
        done.wait()
        ok, value = answer[0]
        if not ok:
            raise value
        return value


def _inline(call: Callable[[], T]) -> T:
    return call()


class CpuShare:
    """How long the worker rests to keep its CPU time within ``share`` of one core.

    :attr:`owed` is the CPU time used beyond the share: every CPU second the process
    uses adds to it, every second of the wall clock takes ``share`` CPU seconds off it,
    and it never goes below 0 (time spent idle saves nothing up, so that work after a
    long idle spell starts at once but never as a burst of more than one search).
    Background work may start when nothing is owed; :meth:`rest` says how long until
    then.  Both clocks are read when asked (:func:`time.process_time` of the whole
    process, :func:`time.monotonic`)."""

    def __init__(self, share: float):
        self.share = share
        self.owed = 0.0
        self._cpu = time.process_time()
        self._wall = time.monotonic()

    def update(self) -> float:
        """Bring :attr:`owed` up to now; its value."""
        cpu, wall = time.process_time(), time.monotonic()
        self.owed = max(0.0, self.owed + (cpu - self._cpu) - self.share * (wall - self._wall))
        self._cpu, self._wall = cpu, wall
        return self.owed

    def rest(self) -> float:
        """Seconds until background work may start again (0: now)."""
        return self.update() / self.share

    def cap(self, owed: float) -> None:
        """Owe at most ``owed`` CPU seconds (after work that must not delay the pools
        for longer)."""
        self.owed = min(self.update(), owed)


class Worker:
    """One worker's loop over the analyses and the pools of :class:`Analyses`' stores."""

    def __init__(self, analyses: Analyses, projector: Projector | None = None,
                 heartbeat: str | None = None, daily: Daily | None = None,
                 searches: Callable[[Callable[[], T]], T] = _inline):
        """``searches``: what runs the searches and analyses (a :class:`LowPriority`, or
        in this thread)."""
        self.analyses = analyses
        self.searches = searches
        self.projector = projector
        self.daily = daily
        self._swept = 0.0
        #: Touched after each step that reached Redis: a health check reads its age.
        self.heartbeat = Path(heartbeat) if heartbeat else None
        self.store = analyses.store
        self.settings = analyses.settings
        self.pools = {name: size for name, size in self.settings.pool.items() if size > 0}
        self.share = CpuShare(self.settings.cpu_share)
        #: CPU seconds each pool's searches have had, and the seeds they found.
        self.spent = dict.fromkeys(self.pools, 0.0)
        self.found = dict.fromkeys(self.pools, 0)

    def step(self) -> str:
        """Do the most urgent thing there is: what it did, in a word."""
        if self.projector is not None and time.monotonic() - self._swept >= SWEEP_EVERY:
            self._swept = time.monotonic()
            if self.daily is not None:
                self.daily.prepare()
                if self.daily.close_due():
                    return "close"
            if self.projector.sweep():
                return "sweep"
        job = self.store.next_analysis()
        if job is not None:
            return self._analyse(job)
        if self.pools and self.share.rest() == 0:
            needy = self._neediest_pool()
            if needy is not None:
                return self._fill(needy)
        time.sleep(IDLE_WAIT)
        return "idle"

    def _analyse(self, game_id: str) -> str:
        owed = self.share.update()
        started, cpu = time.monotonic(), time.process_time()
        outcome = self.searches(lambda: self.analyses.run(game_id, clock=CPU_CLOCK))
        # A user waited for it: it counts, but delays the pools by one search at most.
        self.share.cap(max(owed, self.settings.deal_seconds))
        log.info("analysis", extra={"game_id": game_id, "outcome": outcome,
                                    "duration_ms": round((time.monotonic() - started) * 1000),
                                    "cpu_ms": round((time.process_time() - cpu) * 1000)})
        return "analysis"

    def cost(self, variant_id: str) -> float:
        """What a seed of the pool has cost so far: the CPU seconds of its searches over
        the seeds they found, plus one (a pool not searched yet costs nothing)."""
        return self.spent[variant_id] / (self.found[variant_id] + 1)

    def _neediest_pool(self) -> str | None:
        """The short pool whose seeds have cost the least (None: all full): the share
        buys the most seeds so, and a pool whose searches keep missing (Four Corners)
        gets the searches left once the others are full."""
        short = [name for name in self.pools
                 if self.store.pool_size(name) < self.pools[name]]
        return min(short, key=self.cost, default=None)

    def _fill(self, variant_id: str) -> str:
        started, cpu = time.monotonic(), time.process_time()
        seed = self.searches(lambda: try_deal(
            get_variant(variant_id), seconds=self.settings.deal_seconds,
            positions=self.settings.deal_positions, clock=CPU_CLOCK))
        if seed is not None:
            self.store.add_seed(variant_id, seed)
            self.found[variant_id] += 1
        used = time.process_time() - cpu
        self.spent[variant_id] += used
        log.info("pool search", extra={
            "variant": variant_id, "found": seed is not None,
            "duration_ms": round((time.monotonic() - started) * 1000),
            "cpu_ms": round(used * 1000), "rest_s": round(self.share.rest(), 1)})
        return "pool"

    def run(self) -> None:
        while True:
            try:
                self.step()
                if self.heartbeat is not None:
                    self.heartbeat.touch()
            except StorageUnavailable as error:
                log.warning("redis unavailable", extra={"error": str(error)})
                time.sleep(1.0)
            except Exception:  # a bug: say so, and keep the other jobs going
                log.exception("worker step failed")
                time.sleep(1.0)


def analyses_of(config) -> Analyses:
    """The analyses, on the stores of the settings (Redis's and the solver's)."""
    games = open_store(config)
    return Analyses(games, SolverStore(games.backend), SolverSettings.from_config(config))


def daily_worker_parts(config, analyses: Analyses) -> tuple[Projector, Daily]:
    """The projection of owned games (the players' keys and the days' boards) and the
    daily deal, on the worker's stores.  Its game writes (a day's close) carry no
    Idempotency-Key: the key that seals first answers is not needed."""
    store = analyses.games
    projector = projector_of(store)
    games = Games(store, secret_key=config.get("SECRET_KEY") or "unused: no idempotent write",
                  retries=config["WRITE_RETRIES"], projection=projector)
    return projector, daily_of(config, games, projector, analyses.store)


def _stop(_signum, _frame):
    raise SystemExit(0)


def main() -> int:
    configure_logging("INFO")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    try:
        # The app's own settings and stores: the same Redis.  A bad setting raises
        # ValueError when the environment is read.
        config = read_config()
        analyses = analyses_of(config)
        own = process_settings(SOLVER_WORKER)
        nice = own["WORKER_NICE"]
    except ValueError as error:
        log.error("bad configuration", extra={"error": str(error)})
        return 2
    configure_logging(config["LOG_LEVEL"])
    searches = LowPriority(nice)
    log.info("worker started", extra={"pool": analyses.settings.pool, "pid": os.getpid(),
                                      "cpu_share": analyses.settings.cpu_share,
                                      "nice": nice})
    try:
        projector, daily = daily_worker_parts(config, analyses)
        Worker(analyses, projector, own["WORKER_HEARTBEAT_FILE"], daily, searches).run()
    except (KeyboardInterrupt, SystemExit):
        log.info("worker stopped")
    finally:
        analyses.store.backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
