"""``python -m bench daily batches``: how fast the solver's worker closes a day of the daily
deal, its ranked games still in play abandoned in batches (``Daily.close_due``), against
the same games abandoned one at a time through the write pipeline (``Games.abandon``,
what each game's close would cost without the batches): both in one run, on one Redis
or on a local Redis Cluster of three masters with a replica each (writes confirmed by
``WAIT`` there, as in production), AOF with ``appendfsync always`` (production's, and
``python -m bench daily``'s).

It starts its own Redis (``--cluster``: its own cluster), makes ``--games`` players and
their open ranked games of today's deal for each of two variants (through the app's
services: registration, then the attempt, as ``POST /v1/daily/...`` runs it), then
closes one variant's games one at a time and the other's in batches, timing each (wall
clock), and checks that every game is on its board once.  The table goes to standard
output and to ``bench/RESULTS.md``.

    python -m bench daily batches [--games 5000] [--cluster] [--output PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.http.constants import RESULTS
from bench.machine import cpu_model, load_average
from bench.sections import write_section
from bench.solver import source_commit
from devtools.redis_server import LocalCluster, RedisServer
from service.app import close_app, create_app

BEGIN, END = "<!-- bench daily batches: begin -->", "<!-- bench daily batches: end -->"
#: The variant closed one game at a time, and the one closed in batches.
ONE_BY_ONE, BATCHED = "clock", "salic-law"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench daily batches",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=5000,
                        help="open ranked games closed each way (default 5,000)")
    parser.add_argument("--cluster", action="store_true",
                        help="a local Redis Cluster (3 masters, 1 replica each) instead "
                             "of one Redis")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="the Markdown report whose section is written "
                             "(default bench/RESULTS.md)")
    args = parser.parse_args(argv)
    if args.games < 1:
        parser.error("--games must be at least 1")
    return args


def make_games(app, variant: str, count: int) -> list[tuple[str, str]]:
    """``count`` players and their open ranked games of today's ``variant`` deal:
    [(player id, game id)]."""
    services = app.services
    daily = services.daily
    day = daily.calendar.day_id(daily.today())
    made = []
    for number in range(count):
        profile, token = services.players.register(f"P{number}")
        reply = daily.attempt(variant, day, profile["id"], token)
        if reply.status != 201:
            raise RuntimeError(f"an attempt answered {reply.status}")
        made.append((profile["id"], daily.store.attempt(variant, day, profile["id"])))
    return made


def close_one_by_one(app, games: list[tuple[str, str]]) -> int:
    """Each game abandoned through the write pipeline, its events applied by the
    request's projection, as a close without batches would."""
    return sum(app.services.games.abandon(game_id, player) for player, game_id in games)


def run(args: argparse.Namespace, url: str) -> dict:
    app = create_app({"TESTING": True, "REDIS_URL": url, "RATELIMIT_ENABLED": False,
                      "DAILY_ACCOUNT_RULE": "any", "WINNABLE_SEARCH_SECONDS": 0,
                      "DAILY_CLOSE_GRACE_SECONDS": 0})
    try:
        services = app.services
        for variant, seed in ((ONE_BY_ONE, 42), (BATCHED, 7)):
            services.solver_store.add_seed(variant, seed)
        started = time.perf_counter()
        games = {variant: make_games(app, variant, args.games)
                 for variant in (ONE_BY_ONE, BATCHED)}
        setup = time.perf_counter() - started
        daily = services.daily
        day = daily.calendar.day_id(daily.today())
        started = time.perf_counter()
        single = close_one_by_one(app, games[ONE_BY_ONE])
        single_s = time.perf_counter() - started
        started = time.perf_counter()
        batched = daily.close_day(BATCHED, day)
        batched_s = time.perf_counter() - started
        left = services.projector.sweep()
        counts = {variant: daily.store.counts(variant, day)[1]
                  for variant in (ONE_BY_ONE, BATCHED)}
        if (single, batched, left) != (args.games, args.games, 0) \
                or counts != {ONE_BY_ONE: args.games, BATCHED: args.games}:
            raise RuntimeError(f"closed {single} and {batched}, swept {left}, boards "
                               f"{counts}: not every game once")
        return {"setup_s": setup, "single_s": single_s, "batched_s": batched_s,
                "load_after": load_average()}
    finally:
        close_app(app)


def section(args: argparse.Namespace, figures: dict) -> str:
    games = args.games
    single, batched = figures["single_s"], figures["batched_s"]
    backend = "a local Redis Cluster (3 masters, 1 replica each, WAIT 1, AOF with " \
        "`appendfsync always`)" if args.cluster \
        else "one Redis (no WAIT, AOF with `appendfsync always`)"
    return "\n".join([
        "## The close of a day of the daily deal (`python -m bench daily batches`)",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {source_commit('service')}, "
        f"{cpu_model()}, load average {figures['load_before']} before, "
        f"{figures['load_after']} after the closes; {backend}; "
        f"`python -m bench daily batches --games {games}{' --cluster' if args.cluster else ''}`.",
        "",
        "| close | games | seconds | games a second |",
        "|---|---:|---:|---:|",
        f"| one at a time (`Games.abandon`) | {games} | {single:.2f} | {games / single:,.0f} |",
        f"| in batches (`Daily.close_due`) | {games} | {batched:.2f} | "
        f"{games / batched:,.0f} |",
        "",
        f"In batches: {single / batched:.1f} times as fast as one at a time, in the same run. "
        f"Every game was on its board once after each close. (Making the "
        f"{2 * games} players and games took {figures['setup_s']:.1f} s.)",
    ])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="bench-daily-") as data:
        if args.cluster:
            with LocalCluster(Path(data) / "cluster", masters=3, replicas=1,
                              appendfsync="always") as cluster:
                figures = run(args, cluster.url)
        else:
            with RedisServer(Path(data) / "redis", appendonly=True,
                             appendfsync="always") as server:
                figures = run(args, server.url)
    figures["load_before"] = load_before
    text = section(args, figures)
    print(text)
    write_section(args.output, BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
