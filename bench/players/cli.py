"""``python -m bench players``: the options, the service, the player, the rounds, the
table printed and the section written."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import tempfile
from pathlib import Path

from bench.http.cli import (
    add_load_options,
    load_options_fit,
    unavailable,  # noqa: F401  (the bench registry asks each module)
)
from bench.http.constants import RESULTS
from bench.http.measure import log_problems
from bench.http.service import Service, describe_workers
from bench.http.wrk import Bench, Unavailable, find_wrk, round_seconds, wrk_version
from bench.machine import cpu_model, filesystem_of, load_average
from bench.players.fill import FILL_CONNECTIONS, check, make_player
from bench.players.load import list_paths, run_rounds
from bench.players.report import BEGIN, END, goals_table, section
from bench.procs import WorkerWatch
from bench.sections import write_section

DESCRIPTION = ("The players' reads (my games, the NDJSON export, statistics) against "
               "`GET /v1/games/<id>`: a real gunicorn, a real Redis with fsync always.")




def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench players", description=DESCRIPTION)
    parser.add_argument("--games", type=int, default=10_000,
                        help="games of the player, made through the API (default 10,000)")
    parser.add_argument("--resigned", type=float, default=0.25,
                        help="share of the games resigned through the API: one in every "
                             "round(1 / SHARE) (default 0.25, one in 4)")
    add_load_options(parser, "rounds: every endpoint in turn, then the exports (default 3)")
    parser.add_argument("--exports", type=int, default=1,
                        help="NDJSON exports in each round (default 1)")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="the Markdown report whose section is written "
                             "(default bench/RESULTS.md)")
    args = parser.parse_args(argv)
    if not load_options_fit(args) or args.games < 1 or args.exports < 0 \
            or not 0 <= args.resigned <= 1:
        parser.error("sizes, durations and connections must be positive, "
                     "--resigned between 0 and 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        wrk = find_wrk()
    except Unavailable as error:
        print(f"bench players: {error}", file=sys.stderr)
        return 1
    facts = {"command": shlex.join(["python", "-m", "bench", "players", *(argv or [])]),
             "cpu": cpu_model(), "cores": os.cpu_count(), "wrk": wrk_version(wrk),
             "load": load_average(), "round_seconds": round_seconds(args),
             "fill_connections": FILL_CONNECTIONS}
    print(f"Players benchmark: {facts['cpu']}, {facts['cores']} cores, "
          f"load {facts['load']}", flush=True)
    with WorkerWatch() as watch, tempfile.TemporaryDirectory(prefix="bench-players-") as tmp:
        work = Path(tmp)
        facts["filesystem"] = filesystem_of(work)
        bench = Bench(wrk, args.threads, args.connections, round_seconds(args),
                            args.warmup, work, rounds=args.rounds)
        with Service(work, "always") as service:
            facts["settings"] = service.settings
            with contextlib.closing(service.redis_client()) as client:
                facts["redis_version"] = client.info("server")["redis_version"]
            print(f"gunicorn: {describe_workers(service.settings)}; making a player with "
                  f"{args.games:,} games through the API ...", flush=True)
            player = make_player(service.port, args.games, args.resigned)
            check(service.port, player, list_paths(False) + list_paths(True))
            print(f"  {len(player.games):,} games ({player.resigned:,} resigned) in "
                  f"{player.fill_seconds:.1f} s", flush=True)
            outcome = run_rounds(bench, service, player, work, args.exports)
            facts["log_problems"] = log_problems(service.log())
    facts["worker"] = watch.summary()
    write_section(args.output, BEGIN, END, section(args, outcome, player, facts))
    print()
    print(goals_table(outcome, args.connections))
    print(f"\nwrote the section of {args.output}")
    return 0
