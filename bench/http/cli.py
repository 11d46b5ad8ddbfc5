"""``python -m bench http``: the options, the walks, each persistence setting in turn,
the profile, and the report written."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shlex
import sys
import tempfile
from pathlib import Path

from bench.http.constants import (
    MAX_MOVE_RATE,
    MEMORY_MOVES,
    PERSISTENCE,
    RESULTS,
    TOY_APP,
    VARIANTS,
)
from bench.http.measure import measure, run_profile
from bench.http.report import other_sections, report, targets_table
from bench.http.service import Service, describe_workers
from bench.http.wrk import Bench, Unavailable, find_wrk, round_seconds, wrk_version
from bench.machine import cpu_model, filesystem_of, load_average
from bench.procs import WorkerWatch
from bench.walks import long_walks
from devtools.redis_server import RedisServerError, find_redis_server

DESCRIPTION = "HTTP benchmark: a real gunicorn with the production config against a real Redis."


def unavailable() -> str | None:
    """Why the benchmark cannot run here (no wrk, no redis-server), or None."""
    try:
        find_wrk()
        find_redis_server()
    except (Unavailable, RedisServerError) as error:
        return str(error)
    return None


def add_load_options(parser: argparse.ArgumentParser, rounds_help: str) -> None:
    """The options of the load every wrk benchmark gives: ``--duration`` (over all the
    rounds), ``--rounds``, ``--warmup``, ``--connections`` and ``--threads``."""
    parser.add_argument("--duration", type=int, default=12,
                        help="seconds of measurement per endpoint, over all rounds "
                             "(default 12)")
    parser.add_argument("--rounds", type=int, default=3, help=rounds_help)
    parser.add_argument("--warmup", type=int, default=1,
                        help="seconds of discarded load before each measurement (default 1)")
    parser.add_argument("--connections", type=int, default=32,
                        help="concurrent connections (default 32)")
    parser.add_argument("--threads", type=int, default=None,
                        help="wrk threads (default: one per core, at most --connections)")


def load_options_fit(args: argparse.Namespace) -> bool:
    """Whether the options of :func:`add_load_options` make sense (``--threads`` set to
    its default first, when not given)."""
    if args.threads is None:
        args.threads = min(args.connections, os.cpu_count() or 1)
    return (args.duration >= 1 and args.rounds >= 1 and args.warmup >= 0
            and 1 <= args.threads <= args.connections)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options of ``python -m bench http``, checked."""
    parser = argparse.ArgumentParser(prog="python -m bench http", description=DESCRIPTION)
    add_load_options(parser, "rounds: every endpoint in turn, each round (default 3)")
    parser.add_argument("--games-per-connection", type=int, default=4,
                        help="games each connection plays in turn (default 4)")
    parser.add_argument("--persistence", choices=("always", "off", "both"), default="both",
                        help="Redis persistence: AOF fsync always, off, or both (default)")
    parser.add_argument("--memory-games", type=int, default=100,
                        help="games of each variant created for the memory table and "
                             "the reads (default 100)")
    parser.add_argument("--memory-played", type=int, default=10,
                        help=f"games of each variant played {MEMORY_MOVES} moves (default 10)")
    parser.add_argument("--streams", type=int, default=64,
                        help="event streams held open while short requests are measured "
                             "(0: skip; default 64)")
    parser.add_argument("--profile-requests", type=int, default=2000,
                        help="requests of each kind profiled in-process (0: no profile)")
    parser.add_argument("--rate-limit", action="store_true",
                        help="the service with its rate limiter on (a limit no client "
                             "reaches: every request pays the limiter's work); "
                             "the reference endpoints have none either way")
    parser.add_argument("--no-toy", dest="toy", action="store_false",
                        help="skip the reference endpoints of bench/toy.py")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="the Markdown report (default bench/RESULTS.md)")
    args = parser.parse_args(argv)
    if not load_options_fit(args) \
            or args.games_per_connection < 1 or args.memory_games < 1 \
            or args.memory_played < 1:
        parser.error("durations, connections and game counts must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        wrk = find_wrk()
    except Unavailable as error:
        print(f"bench http: {error}", file=sys.stderr)
        return 1
    command = shlex.join(["python", "-m", "bench", "http", *(argv or [])])
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(),
               "python": f"{platform.python_implementation()} {platform.python_version()}",
               "wrk": wrk_version(wrk), "load": load_average()}
    persistences = ["always", "off"] if args.persistence == "both" else [args.persistence]
    phases = 2 if args.streams else 1
    walk_moves = max(MEMORY_MOVES, int(MAX_MOVE_RATE
                                       * (args.duration + args.warmup * args.rounds) * phases
                                       * 1.2 / (args.connections * args.games_per_connection)))
    count = max(args.connections * args.games_per_connection, args.memory_played * 3)
    print(f"HTTP benchmark: {machine['cpu']}, {machine['cores']} cores, load {machine['load']}; "
          f"computing {count} walks of {walk_moves} legal moves ...", flush=True)
    walks = long_walks(list(VARIANTS), count, walk_moves)

    outcomes = []
    profile = ""
    with WorkerWatch() as watch, tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        machine["filesystem"] = filesystem_of(Path(tmp))
        bench = Bench(wrk, args.threads, args.connections, round_seconds(args), args.warmup,
                      Path(tmp), rounds=args.rounds)
        for i, persistence in enumerate(persistences):
            with contextlib.ExitStack() as services:
                service = services.enter_context(Service(Path(tmp), persistence,
                                                         rate_limit=args.rate_limit))
                toy = None
                if args.toy:  # served alongside, idle while the service is loaded
                    toy = services.enter_context(Service(
                        Path(tmp), persistence, app=TOY_APP, ready_path="/toy/json",
                        name="toy"))
                if i == 0:
                    print(f"gunicorn: {describe_workers(service.settings)}", flush=True)
                outcome = measure(bench, service, walks, args, memory=i == 0,
                                  streams=args.streams if i == 0 else 0, toy=toy)
                outcomes.append(outcome)
                if i == len(persistences) - 1 and args.profile_requests:
                    # Against the last Redis: with persistence off when both are measured,
                    # so that the fsync wait does not hide where the CPU goes.
                    print("  profiling the request path in-process ...", flush=True)
                    profile = run_profile(service.redis.url, args.profile_requests,
                                          PERSISTENCE[persistence])
    machine["worker"] = watch.summary()
    text = report(args, outcomes, command, machine, profile)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    # The other benchmarks' sections (the solver's win-rate table, ...) stay.
    old = args.output.read_text() if args.output.exists() else ""
    args.output.write_text(text + other_sections(old))
    print()
    print(targets_table(outcomes, args.connections))
    print(f"\nwrote {args.output}")
    return 0
