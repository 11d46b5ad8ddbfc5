"""One persistence setting measured: games created and played, every endpoint loaded in
rounds, event streams held open, memory and the log looked at; and the profile."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

from bench.http.client import Client, Game, create, moves_file_writer, parallel, play, write_lines
from bench.http.constants import MEMORY_MOVES, ROOT, VARIANTS, VERSUS_TOY
from bench.http.memory import Memory, memory_of
from bench.http.report import Outcome, summary
from bench.http.service import Service
from bench.http.streams import Streams, has_events_feed
from bench.http.wrk import Bench, Run, combined
from bench.walks import Walk


def measure(bench: Bench, service: Service, walks: list[Walk], args, *,
            memory: bool, streams: int, toy: Service | None = None) -> Outcome:
    """Everything measured against one Redis persistence setting."""
    outcome = Outcome(service.persistence, service.settings)
    with contextlib.closing(service.redis_client()) as client:
        outcome.redis_version = client.info("server")["redis_version"]
    port = service.port

    # Games: the walked ones (seeded, to replay them), and read-only ones of each variant.
    walked = parallel(port, walks, lambda c, w: create(c, w.variant, w.seed))
    for game, walk in zip(walked, walks, strict=True):
        game.walk = walk
    fresh = parallel(port, [v for v in VARIANTS for _ in range(args.memory_games)],
                     lambda c, v: create(c, v))
    if memory:
        outcome.memory = measure_memory(service, walks, fresh, args.memory_played)

    work = bench.workdir / service.persistence
    work.mkdir(exist_ok=True)
    every = walked + fresh
    games_file = write_lines(work / "games.txt", [g.path for g in every])
    moves_file = work / "moves.txt"
    # Each wrk thread plays the games of its lane.
    prepare_moves = moves_file_writer(service, walked, args.threads, moves_file)
    plan = [
        (service, "healthz", "`GET /healthz` (floor)", "paths",
         write_lines(work / "healthz.txt", ["/healthz"]), 200, None),
        (service, "get_game", "`GET /v1/games/<id>`", "paths", games_file, 200, None),
        (service, "get_moves", "`GET /v1/games/<id>/moves`", "paths",
         write_lines(work / "moves-lists.txt", [f"{g.path}/moves" for g in every]), 200, None),
        (service, "post_moves", "`POST /v1/games/<id>/moves`", "moves", moves_file, 200,
         prepare_moves),
        (service, "create", "`POST /v1/games`", "create",
         write_lines(work / "create.txt", [json.dumps({"variant": v}) for v in VARIANTS]),
         201, None),
    ]
    if toy is not None:
        plan += toy_plan(toy, work)
    run_rounds(bench, service.persistence, plan, outcome)

    if streams:
        outcome.streams = {"count": streams, "available": has_events_feed(port, walked[0])}
        if outcome.streams["available"]:
            measure_with_streams(bench, service, outcome, walked, streams, games_file,
                                 moves_file, prepare_moves)
    outcome.log_problems = log_problems(service.log())
    return outcome


def measure_memory(service: Service, walks: list[Walk], fresh: list[Game],
                   played_per_variant: int) -> list[Memory]:
    """Redis memory of the games just created (``fresh``) and of games played
    ``MEMORY_MOVES`` moves of a walk, per variant."""

    def play_hundred(client: Client, walk: Walk) -> Game:
        game = create(client, walk.variant, walk.seed)
        play(client, game, walk.moves[:MEMORY_MOVES])
        return game

    picked = [w for v in VARIANTS
              for w in [x for x in walks if x.variant == v][:played_per_variant]]
    played = parallel(service.port, picked, play_hundred)
    found = []
    with contextlib.closing(service.redis_client()) as client:
        for moves, games in ((0, fresh), (MEMORY_MOVES, played)):
            for variant in VARIANTS:
                found.append(memory_of(client, [g for g in games if g.variant == variant],
                                       moves))
    return found


def toy_plan(toy: Service, work: Path) -> list[tuple]:
    """The reference endpoints (bench/toy.py) to load in each round."""
    from bench.toy import KEYS

    return [
        (toy, "toy_json", "`GET /toy/json` (bare Flask JSON)", "paths",
         write_lines(work / "toy-json.txt", ["/toy/json"]), 200, None),
        (toy, "toy_read", "`GET /toy/read/<n>` (1 KiB value from Redis)", "paths",
         write_lines(work / "toy-read.txt", [f"/toy/read/{n}" for n in range(KEYS)]),
         200, None),
        (toy, "toy_write", "`POST /toy/write/<n>` (read, then Lua compare-and-set)",
         "posts",
         write_lines(work / "toy-write.txt", [f"/toy/write/{n}" for n in range(KEYS)]),
         200, None),
    ]


def run_rounds(bench: Bench, persistence: str, plan: list[tuple], outcome: Outcome) -> None:
    """Every endpoint of ``plan`` in each round, in turn (a slower or faster spell of the
    machine falls on all of them, and each ratio compares rates measured minutes apart at
    most); the rounds combined into ``outcome``'s runs and ratios."""
    rounds: dict[str, list[Run]] = {}
    for number in range(1, bench.rounds + 1):
        for target, key, label, mode, data, expected, prepare in plan:
            print(f"  {persistence}, round {number}/{bench.rounds}: {label} ...",
                  end="", flush=True)
            run = bench.run(target, key, label, mode, data, expected, prepare=prepare)
            print(summary(run), flush=True)
            rounds.setdefault(key, []).append(run)
    for key, runs in rounds.items():
        floor = rounds["toy_json" if key.startswith("toy_") else "healthz"]
        outcome.ratios[key] = [run.rps / base.rps if base.rps else 0.0
                               for run, base in zip(runs, floor, strict=True)]
        reference = rounds.get(VERSUS_TOY.get(key, ""))
        if reference is not None:  # the same work without the service, same rounds
            outcome.versus_toy[key] = [run.rps / base.rps if base.rps else 0.0
                                       for run, base in zip(runs, reference, strict=True)]
        (outcome.toy_runs if key.startswith("toy_") else outcome.runs).append(combined(runs))
    outcome.floor = next(r.rps for r in outcome.runs if r.key == "healthz")


def measure_with_streams(bench: Bench, service: Service, outcome: Outcome, walked: list[Game],
                         count: int, games_file: Path, moves_file: Path, prepare_moves) -> None:
    open_timeout = 10.0
    paths = [f"{walked[i % len(walked)].path}/events" for i in range(count)]
    streams = Streams(service.port, paths)
    try:
        streams.wait_open(open_timeout)
        before = streams.events
        for key, label, mode, data, prepare in (
                ("get_game", "`GET /v1/games/<id>`", "paths", games_file, None),
                ("post_moves", "`POST /v1/games/<id>/moves`", "moves", moves_file,
                 prepare_moves)):
            print(f"  {service.persistence} + {count} streams: {label} ...", end="", flush=True)
            run = bench.run(service, key, label, mode, data, 200, prepare=prepare,
                            seconds=bench.duration * bench.rounds)
            print(summary(run), flush=True)
            outcome.stream_runs.append(run)
        outcome.streams.update(opened=streams.opened, refused=streams.refused,
                               ended=streams.ended, events=streams.events - before,
                               open_timeout=open_timeout)
    finally:
        streams.close()


def log_problems(text: str) -> str:
    problems = []
    if "Traceback" in text:
        problems.append(f"{text.count('Traceback')} tracebacks")
    for needle, what in (('"status": 500', "answers 500"), ("WORKER TIMEOUT", "worker timeouts"),
                         ('"status": 503', "answers 503")):
        if needle in text:
            problems.append(f"{text.count(needle)} {what}")
    return ", ".join(problems)


def run_profile(redis_url: str | None, requests: int, redis_kind: str) -> str:
    """bench/profile.py in a child process (it must set up metrics before importing)."""
    command = [sys.executable, "-m", "bench.profile", "--requests", str(requests),
               "--markdown", "--redis-kind", redis_kind]
    if redis_url:
        command += ["--redis-url", redis_url]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=600)
    if done.returncode != 0:
        return f"The profile failed:\n\n```\n{done.stderr[-3000:]}\n```"
    return done.stdout
