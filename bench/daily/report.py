"""The goals of the daily benchmark, the table printed and its section of
``bench/RESULTS.md``."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.http.report import runs_table
from bench.http.service import describe_workers
from bench.http.wrk import Run
from bench.sections import median, rounds_cell, verdict

#: The board's reads: p99 at most, and requests/s over ``GET`` game's at least.
GOAL_READ_P99_MS = 25.0
GOAL_READ_RATE = 0.8
#: A ranked game's last move (its end written onto the board) over an ordinary game's.
GOAL_LAST_MOVE_RATE = 0.9
#: The close of a day: every open ranked game on the board within.
GOAL_CLOSE_SECONDS = 60.0

BEGIN, END = "<!-- bench daily: begin -->", "<!-- bench daily: end -->"
#: The section of a run of the board's reads alone (``--only board``): the whole run's
#: section is kept.
BOARD_BEGIN, BOARD_END = ("<!-- bench daily --only board: begin -->",
                          "<!-- bench daily --only board: end -->")
LAST_MOVE_BEGIN = "<!-- bench daily last-move: begin -->"
LAST_MOVE_END = "<!-- bench daily last-move: end -->"





def _run(rounds, key: str) -> Run:
    return next(run for run in rounds.runs if run.key == key)


def ran_out(run: Run) -> bool:
    """Whether wrk ran out of games to resign in this run (it then read ``/healthz``)."""
    return "past the end" in run.detail


def last_move_ratios(moves) -> tuple[list[float], int]:
    """The rounds' ratios of the ranked resign over the ordinary one, leaving out the
    rounds in which either ran out of games; and how many were left out."""
    pairs = list(zip(moves.rounds["resign_ranked"], moves.rounds["resign_ordinary"],
                     strict=True))
    kept = [ranked.rps / ordinary.rps for ranked, ordinary in pairs
            if not ran_out(ranked) and not ran_out(ordinary) and ordinary.rps]
    return kept, len(pairs) - len(kept)


def goals_table(outcome: dict, connections: int) -> str:
    lines = ["| figure | measured | goal | met |", "|---|---:|---:|---|"]
    for where, rounds in outcome["reads"].items():
        for key, what in (("top", "top 100"), ("around", "a player's rank ±25")):
            run = _run(rounds, key)
            rate = rounds.ratios[key]
            lines.append(f"| {where}: {what}, p99 ms ({connections} connections) | "
                         f"{run.p99_ms:.1f} | ≤ {GOAL_READ_P99_MS:.0f} | "
                         f"{verdict(run.p99_ms <= GOAL_READ_P99_MS)} |")
            lines.append(f"| {where}: {what} / `GET` game, requests/s | {rounds_cell(rate)} | "
                         f"≥ {GOAL_READ_RATE:.1f} | {verdict(median(rate) >= GOAL_READ_RATE)} |")
    moves = outcome.get("moves")
    if moves is not None:
        rate, left_out = last_move_ratios(moves)
        note = f", {left_out} round(s) left out: games ran out" if left_out else ""
        lines.append(f"| a ranked game's last move / an ordinary game's, requests/s"
                     f"{note} | {rounds_cell(rate) if rate else 'no round'} | "
                     f"≥ {GOAL_LAST_MOVE_RATE:.1f} | "
                     f"{verdict(bool(rate) and median(rate) >= GOAL_LAST_MOVE_RATE)} |")
    close = outcome.get("close")
    if close is not None:
        complete = close.outcomes.get("abandoned", 0) == close.games == close.on_board
        lines.append(f"| the close: {close.games:,} open ranked games on the board as "
                     f"abandoned, seconds | {close.seconds:.1f} | ≤ {GOAL_CLOSE_SECONDS:.0f} | "
                     f"{verdict(close.seconds <= GOAL_CLOSE_SECONDS and complete)} |")
        before, during = close.before, close.during
        ratio = during.rps / before.rps if before.rps else 0.0
        lines.append(f"| during the close: `GET` game requests/s / before it | "
                     f"{ratio:.2f} | answered, no errors | "
                     f"{verdict(during.errors == 0 and during.requests > 0)} |")
        lines.append(f"| during the close: `GET` game p99 ms (before it) | "
                     f"{during.p99_ms:.1f} ({before.p99_ms:.1f}) | — | — |")
    return "\n".join(lines)


def section(args, outcome: dict, facts: dict) -> str:
    settings = facts["settings"]
    board = outcome["board"]
    out = [
        "## The daily deal: the board's reads alone (`--only board`)" if args.only
        else "## The daily deal: the board's reads, a ranked game's end, the close",
        "",
        f"Written by `{facts['command']}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        "(`bench/daily/`; this section is replaced on every run).",
        "",
        f"Machine: {facts['cpu']}, {facts['cores']} cores, load average before "
        f"{facts['load']} (after {facts['load_after']}); Redis {facts['redis_version']} "
        f"(AOF, `appendfsync always`, files on {facts['filesystem']}); {facts['wrk']}. "
        f"gunicorn with the request group's settings as they are: "
        f"{describe_workers(settings)} (`{settings['worker_class']}`), "
        "`RATELIMIT_ENABLED=false`, `DAILY_ACCOUNT_RULE=any`. " + facts["worker"],
        "",
        f"The board: {board['entries']:,} entries on today's Clock board, made by the "
        "service's code (each scored by `service.game.ranked.result`, its entry made by "
        "the board's projection from a `ranked-ended` payload) and loaded by pipelined "
        f"`HSET`/`ZADD` of 5,000 entries into the keys the board's script writes "
        f"({board['seconds']:.0f} s on one Redis"
        + (f", {board['cluster_seconds']:.0f} s on the cluster" if 'cluster_seconds'
           in board else "")
        + "); their players and games are not made. The rank read is that of "
        f"{board['sample']:,} players spread over the whole board, in turn."
        + (" The cluster: `devtools.redis_server.LocalCluster`, 3 masters with a replica "
           "each, `appendfsync always`, `REDIS_WAIT_REPLICAS` 1 (its default there)."
           if "the Redis Cluster" in outcome["reads"] else ""),
        "",
        f"wrk: {args.connections} connections on {args.threads} threads; **{args.rounds} "
        f"rounds**, each {args.warmup} s of warm-up (discarded) then "
        f"{facts['round_seconds']} s per kind, the kinds in turn. `GET` game reads "
        f"{facts['reference_games']:,} ordinary games. A ratio is the median over the "
        "rounds of the rounds' ratios (lowest–highest in brackets).",
        "",
    ]
    for where, rounds in outcome["reads"].items():
        reads = [run for run in rounds.runs if run.key in ("get_game", "top", "around")]
        out += [f"{where}:", "",
                runs_table(reads, _run(rounds, "get_game").rps,
                           floor_name="`GET` game", ratios=rounds.ratios), ""]
    moves = outcome.get("moves")
    if moves is not None:
        out += [
            f"A ranked game's last move: {facts['players']:,} players made through the API, "
            "each with a ranked attempt at every variant's deal of the day and an ordinary "
            "game of every variant of their own; the move measured is a resign (`If-Match: "
            "\"0\"`, each game once, with the player's token), which ends the game: a "
            "ranked game's end writes its `ranked-ended` event and its entry onto the board "
            "(the Clock's of "
            f"{board['entries']:,} entries, the others'), an ordinary one its player's "
            "`ended` event. A resign, not a winning move: a game one move from its win "
            "would need every one of its moves played first through the API, thousands "
            "of games a round, each a player's one attempt of the day; the resign ends "
            "the game through the same write, outbox and projection. The ratio is over "
            "the ordinary game's resign in the same round.",
            "",
            last_move_table(moves),
            "",
            "A round in which wrk ran out of games of either kind to resign (its lanes "
            "then read `/healthz`, counted as errors) is left out of the ratio; the "
            "rows above add up every round.",
            ""]
    close = outcome.get("close")
    if close is not None:
        out += [
            f"The close: {close.games:,} ranked games of the day before in play (their "
            f"players registered, the games stored by the service's code in batches, in "
            f"{close.fill_seconds:.0f} s), then `Daily.close_due` (what the solver's "
            "worker runs) in the benchmark's process, timed from its call to its return, "
            "by which every game is on its board; meanwhile wrk reads games as above. "
            f"It abandoned {close.abandoned:,}; the boards hold {close.on_board:,} entries "
            f"({', '.join(f'{k} {v:,}' for k, v in sorted(close.outcomes.items()))}); "
            f"{close.left_in_outboxes} outboxes left for the sweeper.",
            "",
            runs_table([close.before, close.during], close.before.rps,
                       floor_name="`GET` game before"),
            ""]
    for where, problems in facts["log_problems"].items():
        if problems:
            out += [f"**The gunicorn log shows problems ({where}):** {problems}", ""]
    out += ["Goals:", "", goals_table(outcome, args.connections)]
    return "\n".join(out)


def last_move_table(moves) -> str:
    """The resigns' rows, the ranked one's ratio over the ordinary one's."""
    return runs_table([run for run in moves.runs if run.key.startswith("resign_")],
                      _run(moves, "resign_ordinary").rps, floor_name="ordinary resign",
                      ratios={"resign_ranked": last_move_ratios(moves)[0]})


def last_move_section(args, outcome: dict, facts: dict) -> str:
    """The section of ``--last-move-only``: the last moves alone, on one Redis."""
    settings = facts["settings"]
    moves = outcome["moves"]
    return "\n".join([
        "## A ranked game's last move (`python -m bench daily --last-move-only`)",
        "",
        f"Written by `{facts['command']}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        "(`bench/daily/`; this section is replaced on every such run).",
        "",
        f"Machine: {facts['cpu']}, {facts['cores']} cores, load average before "
        f"{facts['load']} (after {facts['load_after']}); Redis {facts['redis_version']} "
        f"(AOF, `appendfsync always`, files on {facts['filesystem']}); {facts['wrk']}. "
        f"gunicorn: {describe_workers(settings)} (`{settings['worker_class']}`), "
        "`RATELIMIT_ENABLED=false`, `DAILY_ACCOUNT_RULE=any`. " + facts["worker"],
        "",
        f"The same last moves as the full run's (a resign, `If-Match: \"0\"`, of "
        f"{facts['players']:,} players' ranked and ordinary games of every variant; the "
        f"Clock's board holds {outcome['board']['entries']:,} entries), without the board's "
        f"reads, the cluster and the close. wrk: {args.connections} connections on "
        f"{args.threads} threads; **{args.rounds} rounds**, each {args.warmup} s of warm-up "
        f"then {facts['round_seconds']} s per kind, the kinds in turn; the ratio is the "
        "median over the rounds of the ranked resign's requests/s over the ordinary one's "
        "in the same round (lowest–highest in brackets), rounds in which either ran out "
        "of games left out.",
        "",
        last_move_table(moves),
        "",
        *([f"**The gunicorn log shows problems:** {facts['log_problems']['one Redis']}",
           ""] if facts["log_problems"].get("one Redis") else []),
        "Goal:", "", goals_table(outcome, args.connections)])
