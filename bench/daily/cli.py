"""``python -m bench daily``: the options, the services, what is measured in turn, the
table printed and the section written."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shlex
import sys
import tempfile
from pathlib import Path

from bench.daily.cluster import ClusterService
from bench.daily.fill import BOARD_VARIANT, VARIANTS, fill_board, make_players, open_ranked_games
from bench.daily.load import (
    AROUND,
    TOP,
    measure_close,
    moves_plan,
    read_plan,
    run_rounds,
)
from bench.daily.report import (
    BEGIN,
    BOARD_BEGIN,
    BOARD_END,
    END,
    LAST_MOVE_BEGIN,
    LAST_MOVE_END,
    goals_table,
    last_move_section,
    section,
)
from bench.http.cli import add_load_options, load_options_fit
from bench.http.cli import unavailable as _unavailable
from bench.http.client import Client, create, parallel
from bench.http.constants import RESULTS
from bench.http.measure import log_problems
from bench.http.service import Service, describe_workers
from bench.http.wrk import Bench, Unavailable, find_wrk, round_seconds, wrk_version
from bench.machine import cpu_model, filesystem_of, load_average
from bench.procs import WorkerWatch
from bench.sections import write_section
from service.config import read_config
from service.game.record import now_ms
from service.services import build_services
from service.storage import keys

DESCRIPTION = ("The daily deal: a day's board of a million entries read (top 100, a "
               "player's rank ±25) on one Redis and on a Redis Cluster, a ranked game's "
               "last move, and the close of a day's open ranked games, against `GET "
               "/v1/games/<id>`: a real gunicorn, a real Redis with fsync always.")

#: The service's settings beyond its defaults: any account's ranked attempt is taken (the
#: players are made during the run).  Given to its processes alone, never set in this
#: process's environment, where an app made later would read them.
SERVICE_ENV = {"DAILY_ACCOUNT_RULE": "any"}


def unavailable() -> str | None:
    return _unavailable()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench daily", description=DESCRIPTION)
    parser.add_argument("--entries", type=int, default=1_000_000,
                        help="entries on the day's board (default 1,000,000)")
    parser.add_argument("--sample", type=int, default=1000,
                        help="players whose rank is read, in turn (default 1,000)")
    parser.add_argument("--reference-games", type=int, default=1000,
                        help="ordinary games that `GET` game reads (default 1,000)")
    parser.add_argument("--players", type=int, default=8000,
                        help="players made through the API for the last moves, each with "
                             "a ranked and an ordinary game of every variant (default "
                             "8,000: 24,000 games of each kind, for about 1,500 resigns a "
                             "second over three rounds)")
    parser.add_argument("--close-games", type=int, default=100_000,
                        help="ranked games in play when the day closes (default 100,000; "
                             "0: no close)")
    parser.add_argument("--close-before", type=int, default=10,
                        help="seconds `GET` game is measured just before the close "
                             "(default 10)")
    parser.add_argument("--no-cluster", dest="cluster", action="store_false",
                        help="skip the board's reads on the Redis Cluster")
    parser.add_argument("--only", choices=("board",), default=None,
                        help="board: only the board's reads against `GET` game (no "
                             "players, no last moves, no close), written to a section of "
                             "its own")
    parser.add_argument("--last-move-only", action="store_true",
                        help="measure only a ranked game's last move against an ordinary "
                             "game's (one Redis: no board reads, no cluster, no close), "
                             "into a section of its own")
    add_load_options(parser, "rounds: every kind in turn (default 3)")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="the Markdown report whose section is written "
                             "(default bench/RESULTS.md)")
    args = parser.parse_args(argv)
    if args.last_move_only and args.only:
        parser.error("--only board and --last-move-only: one or the other")
    if args.last_move_only:
        args.cluster, args.close_games = False, 0
    if not load_options_fit(args) or args.entries < 1 or args.sample < 1 \
            or args.reference_games < 1 or args.players < 1 or args.close_games < 0 \
            or args.close_before < 1:
        parser.error("sizes, durations and connections must be positive")
    return args


def in_process(redis_url: str):
    """The service's objects in this process, on ``redis_url`` (the fills, the close)."""
    config = read_config()
    config.update(REDIS_URL=redis_url, DAILY_ACCOUNT_RULE="any",
                  SECRET_KEY=config.get("SECRET_KEY") or secrets.token_hex(32))
    return build_services(config)


def reference_games(port: int, count: int) -> list[str]:
    return [game.id for game in parallel(
        port, [VARIANTS[number % len(VARIANTS)] for number in range(count)],
        lambda client, variant: create(client, variant), threads=8)]


def check_reads(port: int, day: str, entries: int, player: str) -> None:
    """The board answers its top page and a player's rank, with every entry."""
    with Client(port) as client:
        base = f"/v1/daily/{BOARD_VARIANT}/{day}/board"
        status, _headers, body = client.request("GET", f"{base}?limit={TOP}")
        page = json.loads(body)
        if status != 200 or page["count"] != entries \
                or len(page["entries"]) != min(TOP, entries):
            raise RuntimeError(f"the board's top answered {status}: {body[:300]!r}")
        status, _headers, body = client.request(
            "GET", f"{base}/players/{player}?around={AROUND}")
        found = json.loads(body)
        if status != 200 or found["count"] != entries or not found["entries"]:
            raise RuntimeError(f"a player's rank answered {status}: {body[:300]!r}")


def _problems(log: str) -> str:
    """The log's problems (bench/http's), and why storage was unavailable (by count)."""
    reasons: dict[str, int] = {}
    for found in re.findall(r"storage unavailable: ([^\"]{0,120})", log):
        reasons[found] = reasons.get(found, 0) + 1
    text = log_problems(log)
    if reasons:
        text += "; 503 because: " + "; ".join(f"{count} × `{reason}`"
                                              for reason, count in reasons.items())
    return text


def main(argv: list[str] | None = None) -> int:
    if argv and argv[0] == "batches":  # the close in batches against one game at a time
        from bench.daily import batches

        return batches.main(argv[1:])
    args = parse_args(argv)
    try:
        wrk = find_wrk()
    except Unavailable as error:
        print(f"bench daily: {error}", file=sys.stderr)
        return 1
    facts = {"command": shlex.join(["python", "-m", "bench", "daily", *(argv or [])]),
             "cpu": cpu_model(), "cores": os.cpu_count(), "wrk": wrk_version(wrk),
             "load": load_average(), "round_seconds": round_seconds(args),
             "reference_games": args.reference_games, "players": args.players,
             "log_problems": {}}
    print(f"Daily benchmark: {facts['cpu']}, {facts['cores']} cores, "
          f"load {facts['load']}", flush=True)
    outcome: dict = {"reads": {}}
    with WorkerWatch() as watch, tempfile.TemporaryDirectory(prefix="bench-daily-") as tmp:
        work = Path(tmp)
        facts["filesystem"] = filesystem_of(work)
        bench = Bench(wrk, args.threads, args.connections, round_seconds(args),
                      args.warmup, work, rounds=args.rounds)
        with Service(work, "always", env=SERVICE_ENV) as service:
            facts["settings"] = service.settings
            print(f"gunicorn: {describe_workers(service.settings)}", flush=True)
            with contextlib.closing(service.redis_client()) as client:
                facts["redis_version"] = client.info("server")["redis_version"]
                services = in_process(service.redis.url)
                try:
                    outcome.update(_one_redis(args, bench, service, services, client, work))
                finally:
                    services.close()
            facts["log_problems"]["one Redis"] = _problems(service.log())
        if args.cluster:
            with ClusterService(work, env=SERVICE_ENV) as cluster:
                services = in_process(cluster.url)
                try:
                    _cluster(args, bench, cluster, services, work, outcome)
                finally:
                    services.close()
                facts["log_problems"]["the cluster"] = _problems(cluster.log())
    facts["worker"] = watch.summary()
    facts["load_after"] = load_average()
    if args.last_move_only:
        write_section(args.output, LAST_MOVE_BEGIN, LAST_MOVE_END,
                      last_move_section(args, outcome, facts))
    else:
        begin, end = (BOARD_BEGIN, BOARD_END) if args.only else (BEGIN, END)
        write_section(args.output, begin, end, section(args, outcome, facts))
    print()
    print(goals_table(outcome, args.connections))
    print(f"\nwrote the section of {args.output}")
    return 0


def _one_redis(args, bench: Bench, service: Service, services, client, work: Path) -> dict:
    daily = services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    # The day's deals chosen as the worker does at the day's start, from the pools.
    for variant in VARIANTS:
        services.solver_store.add_seed(variant, secrets.randbits(63))
    daily.prepare()
    print(f"one Redis: {args.entries:,} entries on the board of {day} ...", end="",
          flush=True)
    board = fill_board(daily, client, day, index, args.entries, args.sample)
    print(f" {board.seconds:.1f} s", flush=True)
    check_reads(service.port, day, args.entries, board.players[0])
    games = [] if args.last_move_only else reference_games(service.port,
                                                           args.reference_games)
    if args.only == "board":
        plan = read_plan(work / "one", "one", games, day, board.players, BOARD_VARIANT)
        rounds = run_rounds(bench, service, plan, {}, "one Redis")
        return {"board": {"entries": args.entries, "seconds": board.seconds,
                          "sample": len(board.players)},
                "reads": {"one Redis": rounds}}
    print(f"  {args.players:,} players, a ranked and an ordinary game of each variant each, "
          "through the API ...", end="", flush=True)
    players = make_players(service.port, args.players, day)
    print(" done", flush=True)
    ordinary = [(game, player.token) for player in players for game in player.ordinary]
    ranked = [(game, player.token) for player in players for game in player.ranked]
    (work / "one").mkdir(parents=True, exist_ok=True)
    plan = moves_plan(work / "one", client, ordinary, ranked, args.threads)
    if not args.last_move_only:
        plan = read_plan(work / "one", "one", games, day, board.players, BOARD_VARIANT) \
            + plan
    rounds = run_rounds(bench, service, plan, {"resign_ranked": "resign_ordinary",
                                               "resign_ordinary": "resign_ordinary"},
                        "one Redis")
    outcome = {"board": {"entries": args.entries, "seconds": board.seconds,
                         "sample": len(board.players)},
               "moves": rounds}
    outcome["reads"] = {} if args.last_move_only else {"one Redis": rounds}
    if args.close_games:
        yesterday = index - 1
        day_before = daily.calendar.day_id(yesterday)
        print(f"  {args.close_games:,} ranked games of {day_before} in play ...", end="",
              flush=True)
        opened = open_ranked_games(services, args.close_games, day_before, yesterday,
                                   daily.calendar.end_ms(yesterday))
        print(f" {opened.seconds:.1f} s; closing the day ...", end="", flush=True)
        at_ms = max(now_ms(), daily.calendar.end_ms(yesterday)
                    + daily.settings.close_grace_seconds * 1000 + 1)
        close = measure_close(bench, service, services, work / "one" / "one-games.txt",
                              day_before, args.close_games, opened.seconds, at_ms,
                              args.close_before)
        print(f" {close.seconds:.1f} s, {close.on_board:,} on the boards", flush=True)
        outcome["close"] = close
    return outcome


def _cluster(args, bench: Bench, cluster: ClusterService, services, work: Path,
             outcome: dict) -> None:
    daily = services.daily
    index = daily.today()
    day = daily.calendar.day_id(index)
    print(f"the cluster: {args.entries:,} entries on the board of {day} ...", end="",
          flush=True)
    with contextlib.closing(cluster.master_of(keys.daily(BOARD_VARIANT, "x"))) as client:
        board = fill_board(daily, client, day, index, args.entries, args.sample)
    print(f" {board.seconds:.1f} s", flush=True)
    outcome["board"]["cluster_seconds"] = board.seconds
    check_reads(cluster.port, day, args.entries, board.players[0])
    games = reference_games(cluster.port, args.reference_games)
    plan = read_plan(work / "cluster", "cluster", games, day, board.players, BOARD_VARIANT)
    outcome["reads"]["the Redis Cluster"] = run_rounds(bench, cluster, plan, {}, "cluster")
