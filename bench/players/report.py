"""The goals of the players' reads, the table printed and the section of
``bench/RESULTS.md``."""

from __future__ import annotations

import statistics
from datetime import UTC, datetime

from bench.http.report import runs_table
from bench.http.service import describe_workers
from bench.players.fill import Player
from bench.players.load import LIMIT, REFERENCE_GAMES, Outcome, list_paths
from bench.sections import median, rounds_cell, verdict

#: Each read against ``GET /v1/games/<id>`` in the same round (median of the rounds).
GOAL_LIST_RATE = 0.8  # requests/s, at least
GOAL_LIST_P99 = 2.0  # p99, at most
GOAL_STATS_RATE = 0.8  # requests/s, at least
#: The NDJSON export of every game of the player.
GOAL_EXPORT_RATE = 2000.0  # games/s, at least
GOAL_EXPORT_GROWTH_MB = 50.0  # growth of the serving process's RSS, below

BEGIN, END = "<!-- bench players: begin -->", "<!-- bench players: end -->"




def goals_table(outcome: Outcome, connections: int) -> str:
    """Each figure, its goal and whether it is met."""
    lines = ["| figure | measured | goal | met |", "|---|---:|---:|---|"]
    reference = "`GET /v1/games/<id>`"
    for key, what in (("my_games", f"`GET /v1/players/me/games?limit={LIMIT}`"),
                      ("my_games_filtered",
                       f"filtered pages (`variant=`, `status=`, `limit={LIMIT}`)")):
        rate, p99 = outcome.ratio(key), outcome.ratio(key, p99=True)
        lines.append(f"| {what} / {reference}, requests/s, {connections} connections | "
                     f"{rounds_cell(rate)} | ≥ {GOAL_LIST_RATE:.1f} | "
                     f"{verdict(median(rate) >= GOAL_LIST_RATE)} |")
        lines.append(f"| {what} / {reference}, p99 | {rounds_cell(p99)} | "
                     f"≤ {GOAL_LIST_P99:.0f} | {verdict(median(p99) <= GOAL_LIST_P99)} |")
    rate = outcome.ratio("stats")
    lines.append(f"| `GET /v1/players/me/stats` / {reference}, requests/s | {rounds_cell(rate)} | "
                 f"≥ {GOAL_STATS_RATE:.1f} | {verdict(median(rate) >= GOAL_STATS_RATE)} |")
    if outcome.exports:
        rates = [done.rate for done in outcome.exports]
        worst = max(outcome.exports, key=lambda done: done.growth_mb)
        spread = f" ({min(rates):,.0f}–{max(rates):,.0f})" if len(rates) > 1 else ""
        lines.append(f"| NDJSON export, games/s (median of {len(rates)}; lowest–highest) | "
                     f"{statistics.median(rates):,.0f}{spread} "
                     f"| ≥ {GOAL_EXPORT_RATE:,.0f} | "
                     f"{verdict(statistics.median(rates) >= GOAL_EXPORT_RATE)} |")
        lines.append(f"| NDJSON export, growth of the serving process's RSS (largest of "
                     f"{len(rates)}) | {worst.growth_mb:.1f} MB | "
                     f"< {GOAL_EXPORT_GROWTH_MB:.0f} MB | "
                     f"{verdict(worst.growth_mb < GOAL_EXPORT_GROWTH_MB)} |")
    return "\n".join(lines)


def exports_table(outcome: Outcome) -> str:
    lines = ["| export | games | MB sent | seconds | games/s | process | RSS before MB | "
             "peak MB (from) | growth MB | after MB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for number, done in enumerate(outcome.exports, 1):
        lines.append(f"| {number} | {done.games:,} | {done.bytes / 1e6:.1f} | "
                     f"{done.seconds:.2f} | {done.rate:,.0f} | {done.pid} | "
                     f"{done.before_kib * 1024 / 1e6:.1f} | "
                     f"{done.peak_kib * 1024 / 1e6:.1f} ({done.peak_from}) | "
                     f"{done.growth_mb:.1f} | {done.after_kib * 1024 / 1e6:.1f} |")
    return "\n".join(lines)


def section(args, outcome: Outcome, player: Player, facts: dict) -> str:
    """The benchmark's section of bench/RESULTS.md."""
    settings = facts["settings"]
    pages = ", ".join(f"`{path.split('?', 1)[1]}` {count}"
                      for path, count in player.first_pages.items())
    out = [
        "## Players' reads: my games, the export, statistics",
        "",
        f"Written by `{facts['command']}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        "(`bench/players/`; this section is replaced on every run).",
        "",
        f"Machine: {facts['cpu']}, {facts['cores']} cores, load average before "
        f"{facts['load']}; Redis {facts['redis_version']} (AOF, `appendfsync always`, "
        f"files on {facts['filesystem']}); {facts['wrk']}. gunicorn with the request "
        f"group's settings as they are: {describe_workers(settings)} "
        f"(`{settings['worker_class']}`), `RATELIMIT_ENABLED=false`. "
        + facts["worker"],
        "",
        f"The player: {len(player.games):,} games created through the API "
        f"(`POST /v1/games` with the player's token, {facts['fill_connections']} "
        f"connections in parallel, the variants in turn), {player.resigned:,} of them "
        f"resigned through the API, in {player.fill_seconds:.0f} s "
        f"({len(player.games) / max(player.fill_seconds, 1e-9):,.0f} games/s, "
        "resignations included); its statistics read back count every one. First pages "
        f"(games on them): {pages}.",
        "",
        f"wrk: {args.connections} connections on {args.threads} threads; "
        f"**{args.rounds} rounds**, each {args.warmup} s of warm-up (discarded) then "
        f"{facts['round_seconds']} s per endpoint, every endpoint in turn, then "
        f"{args.exports} NDJSON export{'s' if args.exports > 1 else ''} of every game. "
        f"The reference is `GET /v1/games/<id>` over the player's first "
        f"{min(REFERENCE_GAMES, len(player.games)):,} games (no `Authorization`); the "
        "lists and the statistics carry the player's token; the filtered lists go over "
        f"{len(list_paths(True))} filters in turn. A ratio is the median over the rounds "
        "of the rounds' ratios (lowest–highest in brackets).",
        "",
        runs_table(outcome.runs, next(r.rps for r in outcome.runs if r.key == "get_game"),
                   floor_name="`GET` game", ratios=outcome.ratios),
        "",
    ]
    if outcome.exports:
        out += [
            "The NDJSON exports (`GET /v1/players/me/games`, `Accept: application/x-ndjson`, "
            "read to the end on one connection, timed from the request to the last byte). "
            "Memory of gunicorn's processes from `/proc/<pid>/status`: RSS before, the "
            "highest RSS while serving (`VmHWM` reset before each export through "
            "`clear_refs`, or, where the kernel refuses, `VmRSS` read every 5 ms), RSS "
            "after; the row is the process that grew most (the one that served it).",
            "",
            exports_table(outcome),
            "",
        ]
    if facts["log_problems"]:
        out += [f"**The gunicorn log shows problems:** {facts['log_problems']}", ""]
    out += ["Goals:", "", goals_table(outcome, args.connections)]
    return "\n".join(out)
