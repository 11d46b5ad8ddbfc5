"""The command: ``python -m bench follow [OPTIONS]`` (see :mod:`bench.follow`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from bench import follow
from bench.follow.client import create_games
from bench.follow.followers import Followers, deliveries
from bench.follow.phases import measured, percentile
from bench.follow.players import closed_loop, paced
from bench.follow.report import IDLE_WORKER_POOL, TARGET_FOLLOWERS, report
from bench.sections import write_section
from bench.walks import VARIANT_IDS, long_walks
from devtools.launch import DevServer
from devtools.processes import cpu_seconds, memory_kib

RESULTS = Path(__file__).resolve().parent.parent / "RESULTS.md"
BEGIN, END = "<!-- bench follow: begin -->", "<!-- bench follow: end -->"
VARIANTS = list(VARIANT_IDS)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench follow", description=follow.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--followers", type=int, default=TARGET_FOLLOWERS)
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--rate", type=float, default=50.0, help="paced moves per second")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--throughput-seconds", type=float, default=10.0,
                        help="length of each phase of the closed-loop player")
    parser.add_argument("--processes", type=int, default=4, help="follower processes")
    parser.add_argument("--open-rate", type=float, default=300.0,
                        help="streams opened per second, in all")
    parser.add_argument("--connections", type=int, default=16,
                        help="connections of the closed-loop player")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true",
                        help="keep the instance's directory (its log) and say where")
    args = parser.parse_args(argv)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    workdir = Path(tempfile.mkdtemp(prefix="bench-follow-"))
    command = "python -m bench follow " + " ".join(argv)
    try:
        return run(args, workdir, command.strip())
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def run(args, workdir: Path, command: str) -> int:
    """One run: the instance started in ``workdir``, the phases, the report."""
    paced_moves = int(args.rate * args.seconds * 3) // args.games + 8
    followed_walks = long_walks(VARIANTS, args.games, paced_moves)
    # four sets of unfollowed games, one per closed-loop phase, long enough for it
    busy_walks = long_walks(VARIANTS, 8 * args.connections, 800, first_seed=10_000)
    load_before = os.getloadavg()
    # The solver's worker runs, as in make run, but idle: no pools to fill (it only looks
    # for analyses to compute, and none are asked for).
    with DevServer(workdir, RATELIMIT_ENABLED="false",
                   WINNABLE_POOL=IDLE_WORKER_POOL) as instance:
        port = instance.port
        found = instance.parts()
        events, requests = found["events group"], found["request group"]
        followed = asyncio.run(create_games(port, followed_walks))
        busy = asyncio.run(create_games(port, busy_walks))
        quarter = len(busy) // 4
        sets = [busy[index * quarter:(index + 1) * quarter] for index in range(4)]
        idle_rss = memory_kib(events)
        print(f"instance up on port {port}: events group {events}, request group {requests}",
              flush=True)
        parts = {"request group": requests, "events group": events,
                 "redis": found["redis-server"], "solver worker": found.get("worker", [])}

        def loop(games):
            return lambda: closed_loop(port, games, args.connections, args.throughput_seconds)

        # 1. moves alone
        phases = [measured("moves alone, before", parts, loop(sets[0]))]

        # 2. followers
        ids = [followed[number % len(followed)].id for number in range(args.followers)]
        followers = Followers(port, ids, args.processes, args.open_rate).open()
        parts["followers (load generator)"] = followers.pids
        time.sleep(2)  # idle
        rss, pss = memory_kib(events)
        all_rss, _all_pss = memory_kib(events + requests)
        print(f"followers open: {followers.holding:,} in {followers.open_seconds:.1f} s "
              f"({followers.refused} refused); events group RSS {rss / 1024:,.1f} MiB (was "
              f"{idle_rss[0] / 1024:,.1f}), PSS {pss / 1024:,.1f} MiB", flush=True)

        # 3. moves with idle followers (heartbeats only)
        phases.append(measured("moves with idle followers", parts, loop(sets[1])))

        # 4. live: the paced player alone on the followed games
        done: dict[tuple[str, int], float] = {}
        events_cpu = cpu_seconds(events)
        started = time.monotonic()
        late = asyncio.run(paced(port, followed, args.rate, args.seconds, done))
        live_seconds = time.monotonic() - started
        events_cpu = cpu_seconds(events) - events_cpu
        time.sleep(1.5)  # the last events reach their followers

        # 5. moves while the paced player keeps playing the followed games
        async def both():
            """Both players: every move answered counts (the paced ones too)."""
            answered: dict = {}
            pacing = asyncio.ensure_future(
                paced(port, followed, args.rate, args.throughput_seconds, answered))
            moves, seconds, latencies = await closed_loop(port, sets[2], args.connections,
                                                          args.throughput_seconds)
            await pacing
            return moves + len(answered), seconds, latencies

        phases.append(measured("moves with followers following 50 moves/s", parts, both))
        time.sleep(1.5)
        tallies = followers.close()
        del parts["followers (load generator)"]
        final_rss = memory_kib(events)[0]

        # 6. moves alone again: the machine's other work changes as the run goes on, so
        # the rate without followers is the mean of before and after
        time.sleep(1)
        phases.append(measured("moves alone, after", parts, loop(sets[3])))

    received = deliveries(tallies, done)
    delays = received["delays"]
    figures = {
        "followers": followers.holding, "refused": followers.refused,
        "open_seconds": followers.open_seconds,
        "moves_live": len(done), "live_seconds": live_seconds, "late": late,
        "incomplete": received["incomplete"], "missing": received["missing"],
        "out_of_order": sum(t["out_of_order"] for t in tallies),
        "errors": sum(t["error_count"] for t in tallies),
        "p50": percentile(delays, 0.5), "p99": percentile(delays, 0.99),
        "max": max(delays) if delays else float("nan"),
        "rss": rss, "pss": pss, "idle_rss": idle_rss[0], "all_rss": all_rss,
        "final_rss": final_rss, "phases": phases, "events_cpu": events_cpu,
        "load_before": load_before, "load_after": os.getloadavg(),
        "sample_errors": sum((t["errors"] for t in tallies), [])[:5],
    }
    text = report(args, figures, command)
    print(text)
    write_section(args.output, BEGIN, END, text.rstrip("\n"))
    return 0
