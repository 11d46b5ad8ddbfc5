"""``python -m bench limiter``: what the rate limiter costs a request, over the whole stack.

Two services side by side, each its own redis-server and gunicorn with the request
group's settings as they are (:class:`bench.http.service.Service`): one with the
limiter off, one with it on under a limit no client reaches (every request counted,
none refused).  Each round loads ``GET`` game and a move (``POST .../moves``, legal moves
of :mod:`bench.walks`) on each service in turn, the two services in alternating order,
with wrk (:mod:`bench.http.wrk`); the CPU time of gunicorn's processes and of Redis is
read from ``/proc`` before and after each run.  It prints, per endpoint, the CPU per
request off and on (the median of the rounds), what the limiter adds, and that as a
share of a move's CPU with the limiter off (docs/performance.md: at most 0.15).  With
``--control``, a third service with the limiter off is loaded like the others: what the
limiter seems to add to it is the noise of the method on that machine.  It writes
nothing: a run worth keeping goes into bench/RESULTS.md by hand."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

from bench.http.cli import unavailable  # noqa: F401  (the bench registry asks each module)
from bench.http.client import create, moves_file_writer, parallel, write_lines
from bench.http.constants import MAX_MOVE_RATE, VARIANTS
from bench.http.service import Service, describe_workers
from bench.http.wrk import Bench, Unavailable, find_wrk
from bench.machine import cpu_model, load_average
from bench.walks import long_walks

#: The limiter's cost per request over a move's CPU, at most (docs/performance.md).
TARGET_SHARE_OF_MOVE = 0.15
ENDPOINTS = (("get_game", "`GET /v1/games/<id>`"), ("post_moves", "`POST /v1/games/<id>/moves`"))




def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench limiter", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4, help="rounds (default 4)")
    parser.add_argument("--duration", type=int, default=5,
                        help="seconds of measurement per endpoint, service and round "
                             "(default 5)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="seconds of discarded load before each measurement (default 1)")
    parser.add_argument("--connections", type=int, default=32,
                        help="concurrent connections (default 32)")
    parser.add_argument("--games-per-connection", type=int, default=4,
                        help="games each connection plays in turn (default 4)")
    parser.add_argument("--persistence", choices=("always", "off"), default="off",
                        help="Redis persistence (default off: the fsync wait hides no CPU)")
    parser.add_argument("--control", action="store_true",
                        help="a third service, the limiter off too, loaded in each round "
                             "like the others: what it 'adds' is the noise of the method")
    args = parser.parse_args(argv)
    args.threads = min(args.connections, os.cpu_count() or 1)
    if min(args.rounds, args.duration, args.connections, args.games_per_connection) < 1 \
            or args.warmup < 0:
        parser.error("rounds, durations, connections and games must be positive")
    return args


class _Loaded:
    """One service with its games, and the data files of its two endpoints."""

    def __init__(self, service: Service, walks, threads: int, work: Path):
        self.service = service
        games = parallel(service.port, walks, lambda c, w: create(c, w.variant, w.seed))
        for game, walk in zip(games, walks, strict=True):
            game.walk = walk
        work.mkdir()
        self.plan = {
            "get_game": ("paths", write_lines(work / "games.txt", [g.path for g in games]),
                         None),
            "post_moves": ("moves", work / "moves.txt",
                           moves_file_writer(service, games, threads, work / "moves.txt")),
        }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        wrk = find_wrk()
    except Unavailable as error:
        print(f"bench limiter: {error}", file=sys.stderr)
        return 1
    command = shlex.join(["python", "-m", "bench", "limiter", *(argv or [])])
    count = args.connections * args.games_per_connection
    length = int(MAX_MOVE_RATE * (args.duration + args.warmup) * args.rounds * 1.2 / count) + 1
    print(f"limiter benchmark: {cpu_model()}, {os.cpu_count()} cores, load {load_average()}; "
          f"computing {count} walks of {length} legal moves ...", flush=True)
    walks = long_walks(list(VARIANTS), count, length)
    cpu: dict[tuple[str, str], list[float]] = {}
    failed = []
    with tempfile.TemporaryDirectory(prefix="bench-limiter-") as tmp:
        work = Path(tmp)
        bench = Bench(wrk, args.threads, args.connections, args.duration, args.warmup, work,
                      rounds=args.rounds)
        with contextlib.ExitStack() as stack:
            names = ("off", "on", "control") if args.control else ("off", "on")
            loaded = {}
            for name in names:
                service = stack.enter_context(Service(work, args.persistence, name=name,
                                                      rate_limit=name == "on"))
                loaded[name] = _Loaded(service, walks, args.threads, work / f"games-{name}")
            print(f"gunicorn: {describe_workers(service.settings)}", flush=True)
            for number in range(1, args.rounds + 1):
                order = names if number % 2 else names[::-1]
                for limiter in order:
                    target = loaded[limiter]
                    for key, label in ENDPOINTS:
                        mode, data, prepare = target.plan[key]
                        print(f"  round {number}/{args.rounds}, limiter {limiter}: {label} ...",
                              end="", flush=True)
                        run = bench.run(target.service, key, label, mode, data, 200,
                                        prepare=prepare)
                        used = run.worker_cpu_us + run.redis_cpu_us
                        print(f" {run.rps:,.0f} requests/s, {used:,.0f} µs CPU a request"
                              f"{', ' + run.detail if run.detail else ''}", flush=True)
                        cpu.setdefault((limiter, key), []).append(used)
                        if run.errors or run.detail:
                            failed.append(f"limiter {limiter}, {label}: {run.detail}")
    print()
    print(report(cpu, args, command))
    for failure in failed:  # an answer not as expected: the figures are not the limiter's
        print(f"bench limiter: {failure}", file=sys.stderr)
    return 1 if failed else 0


def report(cpu: dict[tuple[str, str], list[float]], args, command: str) -> str:
    """The Markdown table: per endpoint the CPU per request (gunicorn and Redis, median
    of the rounds) with the limiter off and on, and what it adds over a move's CPU."""
    move = statistics.median(cpu["off", "post_moves"])
    lines = [f"`{command}` ({args.rounds} rounds of {args.duration} s, {args.connections} "
             f"connections, Redis persistence {args.persistence}): CPU per request, "
             "gunicorn and Redis, the median of the rounds",
             "",
             "| endpoint | limiter off | limiter on | the limiter adds | over a move's CPU "
             f"(target ≤ {TARGET_SHARE_OF_MOVE:.2f}) |",
             "|---|---|---|---|---|"]
    versus = [("on", "")] + ([("control", " (control: the limiter off)")]
                             if args.control else [])
    for key, label in ENDPOINTS:
        off = statistics.median(cpu["off", key])
        for other, note in versus:
            on = statistics.median(cpu[other, key])
            # The rounds' own differences (each round measures both), their median.
            added = statistics.median(b - a for a, b in zip(cpu["off", key], cpu[other, key],
                                                            strict=True))
            lines.append(f"| {label}{note} | {off:,.0f} µs | {on:,.0f} µs | {added:,.0f} µs | "
                         f"{added / move:.2f} |")
    return "\n".join(lines)
