"""The benchmark's section of ``bench/RESULTS.md``: its figures next to their targets, and
the cores each part kept busy in each phase."""

from __future__ import annotations

import time

from bench.follow.phases import Phase

#: The pools of the instance's solver's worker: none, so that it stays idle.
IDLE_WORKER_POOL = "clock=0"
TARGET_FOLLOWERS = 10_000
TARGET_P99_MS = 250.0
TARGET_KIB = 20.0
TARGET_RATIO = 0.8


def report(args, f: dict, command: str) -> str:
    """The Markdown section of a run: ``args`` its options, ``f`` its figures."""
    followers = max(1, f["followers"])
    per_follower = f["rss"] / followers
    marginal = (f["rss"] - f["idle_rss"]) / followers
    before, idle, live, after = f["phases"]
    alone = (before.rate + after.rate) / 2
    ratio_idle = idle.rate / alone if alone else float("nan")
    ratio_live = live.rate / alone if alone else float("nan")

    def mark(ok: bool) -> str:
        return "met" if ok else "**not met**"

    def cpu_ratio(phase: Phase) -> float:
        """Without followers over with: the CPU per move, as a throughput ratio that the
        machine's other work does not move."""
        without = (before.cpu_per_move_us + after.cpu_per_move_us) / 2
        return without / phase.cpu_per_move_us

    every = f["incomplete"] == 0 and f["missing"] == 0 and f["out_of_order"] == 0 \
        and f["errors"] == 0
    lines = [
        "## Live follow (`python -m bench follow`)",
        "",
        f"Written by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        "one instance of `make run` (`python -m devtools.devserver`: its own Redis, the "
        "request group of 4 gthread workers and the events group of 1 gevent worker) on "
        "this machine, rate limits off; the load generator runs on the same cores "
        f"({args.processes} processes of asyncio followers, real TCP connections). Load "
        f"average before {f['load_before'][0]:.2f}, after {f['load_after'][0]:.2f} "
        "(other work shares these 2 cores).  The instance's solver's worker runs idle "
        f"(`WINNABLE_POOL={IDLE_WORKER_POOL}`: no pool to fill, no analysis asked for); its "
        "CPU in each phase is the column *solver worker* below.",
        "",
        "| figure | measured | target | |",
        "|---|---:|---:|---|",
        f"| concurrent followers over {args.games} games | {f['followers']:,} "
        f"({f['refused']} refused, {f['errors']} errors) | {TARGET_FOLLOWERS:,} | "
        f"{mark(f['followers'] >= TARGET_FOLLOWERS and f['errors'] == 0)} |",
        f"| every follower got every event, in order | {f['moves_live']:,} moves in "
        f"{f['live_seconds']:.1f} s: {f['incomplete']} not received by all, "
        f"{f['out_of_order']} gaps or reorders | all | {mark(every)} |",
        f"| delay from a move's 200 to its event at the last follower, p99 | "
        f"{f['p99']:.0f} ms (p50 {f['p50']:.0f}, max {f['max']:.0f}) | ≤ {TARGET_P99_MS:.0f} ms"
        f" | {mark(f['p99'] <= TARGET_P99_MS)} |",
        f"| memory per idle follower: events group RSS / followers | "
        f"{per_follower:.1f} KiB ({f['rss'] / 1024:,.0f} MiB; PSS "
        f"{f['pss'] / followers:.1f} KiB; added by the followers {marginal:.1f} KiB) | "
        f"≤ {TARGET_KIB:.0f} KiB | {mark(per_follower <= TARGET_KIB)} |",
        f"| moves per second with the followers connected / without | {idle.rate:,.0f} / "
        f"{alone:,.0f} = {ratio_idle:.2f} (CPU per move: {cpu_ratio(idle):.2f}) | "
        f"≥ {TARGET_RATIO} | {mark(ratio_idle >= TARGET_RATIO)} |",
        f"| the same while they follow {args.rate:g} moves/s | {live.rate:,.0f} / "
        f"{alone:,.0f} = {ratio_live:.2f} (CPU per move: {cpu_ratio(live):.2f}) | "
        f"≥ {TARGET_RATIO} | {mark(ratio_live >= TARGET_RATIO)} |",
        "",
        f"- Followers opened at {args.open_rate:g}/s in all: {f['open_seconds']:.1f} s for "
        f"all of them.  Paced player: {args.rate:g} moves/s round robin over the followed "
        f"games on 10 connections ({f['late']} moves sent more than 50 ms late).  The events "
        f"group used {f['events_cpu']:.1f} s of CPU during the {f['live_seconds']:.0f} s "
        "live phase.",
        f"- Moves' throughput: a closed-loop player on {args.connections} connections over "
        f"games nobody follows, {args.throughput_seconds:g} s per phase: without followers "
        "(before they open, and again after they closed: the rate without is the mean of "
        "the two), with the followers connected and idle (heartbeats only), and with them "
        f"following the paced player's {args.rate:g} moves/s (its moves count in that "
        "phase's rate).  The cores each part kept "
        "busy meanwhile (from /proc; *players* is this benchmark's own process, *other "
        "processes* the rest of the machine).  On a shared machine the rates follow the "
        "other processes; the CPU per move does not, and its ratio (in brackets above) "
        "says what the followers cost each move:",
        "",
        "| phase | moves/s | p99 ms | CPU µs per move (request group + Redis) | "
        + " | ".join(before.cpu) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(before.cpu),
    ]
    for phase in f["phases"]:
        cells = [f"{phase.cpu[part]:.2f}" if part in phase.cpu else "–" for part in before.cpu]
        lines.append(f"| {phase.name} | {phase.rate:,.0f} | {phase.p99_ms:.1f} | "
                     f"{phase.cpu_per_move_us:,.0f} | " + " | ".join(cells) + " |")
    followers_cpu = [p.cpu.get("followers (load generator)") for p in (idle, live)]
    lines += [
        "",
        f"  The follower processes (the load generator) kept {followers_cpu[0]:.2f} and "
        f"{followers_cpu[1]:.2f} cores busy in the two phases with followers.",
        f"- Both groups together: {f['all_rss'] / 1024:,.0f} MiB RSS with the followers "
        f"open; the events group held {f['final_rss'] / 1024:,.0f} MiB at the end.",
    ]
    if f["sample_errors"]:
        lines.append(f"- Errors seen by followers (first ones): {f['sample_errors']}")
    return "\n".join(lines) + "\n"
