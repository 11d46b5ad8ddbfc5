"""How often can these games be won?  The solver against three bots, deal by deal.

For every variant and every seed of the range:

* the solver (``service.engine.search``) searches the deal with the whole deal known,
  within ``--budget`` seconds (or ``--positions`` positions, with no time limit: the
  same verdicts on any machine): won (a winning line exists), proved lost (every line
  searched) or undecided;
* the random bot (``random_playout``: uniformly random legal moves), the quick hint bot
  (``heuristic_hint``, the rules of thumb) and the hint bot (``hint``, what ``GET
  .../hint`` answers: sampled deals of the unseen cards, searched) play the same deal
  (``hint_playout``); each one's result, cards home and CPU seconds are kept.

Each deal's figures are appended to a JSON-lines file (``--records``, one line per deal
as it finishes) under a digest of the engine's sources the variant plays by (every
module of the engine but the other games' own: ``engine_digest``) and the budget.  A
line holds the parts of a deal it played: the solver's verdict, unless ``--no-solver``,
and the games of the bots asked for.  A run plays only the parts not yet recorded for
the same digest, so a long run can be stopped and started again, or split into ranges
(``--first``, ``--seeds``), and the table is built from the records of the whole range,
each part from the latest line that holds it.  With ``--table-only --any-engine`` the
parts may come from different engines (say the verdicts of one engine and the hint
bot's games of a later one whose solver changed nothing but the hint): the table then
names, part by part, the engines and commits that made them.  The tables go to standard
output and to ``bench/RESULTS.md`` (between the solver markers, the rest of the file
kept; a table of a budget in positions has a section of its own).

    python -m bench solver [--seeds N] [--seeds-for ID=N] [--first SEED]
                           [--budget SECONDS | --positions N] [--processes N]
                           [--variant ID]
                           [--bots all|quick|none] [--hint-budget SxP] [--no-solver]
                           [--records PATH]
                           [--output PATH] [--table-only [--any-engine]]

``--hint-budget 8x4000`` adds a bot that follows the same hint searching more: 8 samples
of 4,000 positions each, with no limit in seconds (recorded as bot ``hint@8x4000``).  It
asks how far the hint's strength is bounded by its budget, which the API's latency
target fixes; the targets are judged on the API's hint only.

The default is the full table: seeds 0..999 of each variant, 10 s per deal, the three
bots, two processes (one per core of the machine it was written for).  A deal is
searched by one process at a time, so the per-deal budget is one core's.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from bench.procs import WorkerWatch
from bench.sections import write_section
from service.engine import WON, Variant, get_variant, variants
from service.engine.hints import DEFAULT_BUDGET, HintBudget, heuristic_hint, hint
from service.engine.playout import cards_home, hint_playout, random_playout
from service.engine.search import CPU_CLOCK, Outcome, searches_of, solve

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("RESULTS.md")
RECORDS = ROOT / "var" / "bench" / "winrates.jsonl"
BEGIN, END = "<!-- solver table: begin -->", "<!-- solver table: end -->"

#: The share of deals the solver must settle (won or proved lost) within 10 s each.
TARGETS = {"salic-law": 0.99, "clock": 0.95, "four-corners": 0.90}
#: Share of the winnable deals the hint bot must win.
WIN_TARGETS = {"salic-law": 0.60, "clock": 0.50}
#: Four Corners: mean cards home of the hint bot over the random bot's.
CARDS_TARGETS = {"four-corners": 1.5}

#: The bots, each with what it plays: ``--bots quick`` plays the first two only.
BOTS = {"random": "random legal moves", "quick": "quick hint (rules of thumb)",
        "hint": "hint (sampled deals)"}
BOT_SETS = {"all": tuple(BOTS), "quick": ("random", "quick"), "none": ()}
#: The prefix of a hint bot with a budget of its own (``--hint-budget``).
WIDE = "hint@"


def wide_bot(option: str) -> str:
    """The bot name of ``--hint-budget SAMPLESxPOSITIONS``; ValueError when malformed."""
    budget = bot_budget(WIDE + option.lower())
    if budget.samples < 1 or budget.positions < 1:
        raise ValueError(option)
    return f"{WIDE}{budget.samples}x{budget.positions}"


def bot_budget(bot: str) -> HintBudget:
    """The hint budget of a bot named by :func:`wide_bot`: positions only, no seconds."""
    samples, positions = (int(part) for part in bot.removeprefix(WIDE).split("x"))
    return HintBudget(samples=samples, positions=positions, seconds=math.inf,
                      clock=CPU_CLOCK)


def bot_label(bot: str) -> str:
    """What ``bot`` plays, for the table."""
    if bot.startswith(WIDE):
        budget = bot_budget(bot)
        return (f"hint, {budget.samples} samples × {budget.positions:,} positions "
                "(no time limit)")
    return BOTS[bot]


def own_modules(variant: Variant) -> set[str]:
    """The engine modules that are ``variant``'s alone, as paths under ``service/engine``:
    its rules and the modules of the searches it registered (``searches_of``)."""
    searches = searches_of(variant)
    names = {type(variant).__module__} | {
        search.__module__ for search in (searches.solver, searches.hint_line) if search}
    engine = Path(sys.modules["service.engine"].__file__).parent
    return {Path(sys.modules[name].__file__).relative_to(engine).as_posix() for name in names}


def engine_digest(variant_id: str) -> str:
    """A digest of the engine's sources that a variant's play depends on: every module of
    ``service/engine`` and its packages but the other variants' own (their rules and
    their searches: :func:`own_modules`).  Records made by another engine are not
    reused, and a change to one game's modules leaves the others' records valid."""
    others = set().union(*(own_modules(v) for v in variants() if v.id != variant_id))
    others -= own_modules(get_variant(variant_id))
    engine = ROOT / "service" / "engine"
    digest = hashlib.sha256()
    for name in sorted(path.relative_to(engine).as_posix() for path in engine.rglob("*.py")):
        if name not in others:
            digest.update(name.encode() + b"\0" + (engine / name).read_bytes())
    return digest.hexdigest()[:16]


# --- one deal, in a worker process -------------------------------------------------------
def _play(variant_id: str, seed: int, bot: str) -> dict:
    started = time.process_time()
    if bot == "random":
        final, _steps = random_playout(variant_id, seed, random.Random(seed))
    elif bot.startswith(WIDE):
        budget = bot_budget(bot)
        final, _steps = hint_playout(variant_id, seed,
                                     advise=lambda state: hint(state, budget))
    else:
        # The API's hint, its seconds read on this process's CPU time.
        budget = dataclasses.replace(DEFAULT_BUDGET, clock=CPU_CLOCK)
        advise = heuristic_hint if bot == "quick" else (lambda state: hint(state, budget))
        final, _steps = hint_playout(variant_id, seed, advise=advise)
    return {"won": final.status == WON, "home": cards_home(final),
            "cpu": round(time.process_time() - started, 3)}


def source_commit(sources: str = "service/engine") -> str:
    """The commit the sources under ``sources`` (the engine's by default) come from
    (``+changes`` when they differ from it), or ``?`` outside a git checkout."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *argv], capture_output=True,
                              text=True, check=True).stdout.strip()
    try:
        head = git("rev-parse", "--short=10", "HEAD")
        return head + ("+changes" if git("status", "--porcelain", sources) else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def budget_of(seconds: float | None, positions: int | None) -> dict:
    """How a record names the solver's budget: ``{"budget": seconds}`` (and the default
    positions), or ``{"budget": None, "positions": n}`` (no time limit)."""
    return {"budget": seconds} if positions is None else {"budget": None,
                                                         "positions": positions}


def play_deal(task: tuple[str, int, dict, bool, tuple[str, ...], str, str]) -> dict:
    """The record of one deal: the solver's verdict (when ``solver``) and each bot's
    game."""
    variant_id, seed, budget, solver, bots, digest, commit = task
    record = {"variant": variant_id, "seed": seed, "engine": digest, "commit": commit,
              **budget}
    if solver:
        if budget["budget"] is None:
            solution = solve(variant_id, seed, max_positions=budget["positions"],
                             max_seconds=math.inf, clock=CPU_CLOCK)
        else:
            solution = solve(variant_id, seed, max_seconds=budget["budget"], clock=CPU_CLOCK)
        record.update(result=solution.result, searched=solution.searched,
                      seconds=round(solution.seconds, 3),
                      line=len(solution.line) if solution.line is not None else None)
    record["bots"] = {bot: _play(variant_id, seed, bot) for bot in bots}
    return record


# --- the records -------------------------------------------------------------------------
VERDICT = ("result", "searched", "seconds", "line")


def load_records(path: Path, digests: dict[str, str] | None, budget: dict
                 ) -> dict[tuple[str, int], dict]:
    """The deals recorded in ``path`` by this engine (``digests``: by variant; None: by
    any engine) with this budget (:func:`budget_of`), by (variant, seed), each part (the
    verdict, each bot's
    game) from the latest line that holds it.  A deal's ``engine`` and ``commit`` are
    its verdict's; each game carries its own."""
    found: dict[tuple[str, int], dict] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue            # a line cut short by an interrupted run
        if (digests is not None and record.get("engine") != digests.get(record.get("variant"))) \
                or budget_of(record.get("budget"), record.get("positions")) != budget:
            continue
        _merge(found, record)
    return found


def _merge(deals: dict[tuple[str, int], dict], record: dict) -> None:
    """Take the parts of one line of records into ``deals``, over the same parts."""
    made = {"engine": record["engine"], "commit": record.get("commit", "?")}
    deal = deals.setdefault((record["variant"], record["seed"]),
                            {"variant": record["variant"], "seed": record["seed"], "bots": {}})
    if "result" in record:
        deal.update({key: record[key] for key in VERDICT}, **made)
    deal["bots"].update({bot: {**game, **made} for bot, game in record["bots"].items()})


def _missing(record: dict | None, solver: bool, bots: tuple[str, ...]
             ) -> tuple[bool, tuple[str, ...]]:
    """What of a deal is still to play: the verdict (when ``solver``), and the bots."""
    if record is None:
        return solver, bots
    return solver and "result" not in record, tuple(
        bot for bot in bots if bot not in record["bots"])


def _recorded(record: dict | None, bots: tuple[str, ...]) -> bool:
    """Whether ``record`` holds the solver's verdict and the games of ``bots``."""
    return _missing(record, True, bots) == (False, ())


# --- the figures -------------------------------------------------------------------------
def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion ``successes / n``."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denominator = 1 + z * z / n
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def summarise(rows: list[dict], bots: tuple[str, ...]) -> dict:
    """The figures of one variant's records."""
    n = len(rows)
    counts = {result: sum(row["result"] == result for row in rows)
              for result in (Outcome.WON, Outcome.LOST, Outcome.UNDECIDED)}
    seconds = [row["seconds"] for row in rows]
    winnable = [row for row in rows if row["result"] == Outcome.WON]
    won, lost, undecided = counts[Outcome.WON], counts[Outcome.LOST], counts[Outcome.UNDECIDED]
    summary = {"deals": n, **counts, "settled": (won + lost) / n,
               "wilson": wilson(won, n), "upper": (won + undecided) / n,
               "median": statistics.median(seconds), "p90": _quantile(seconds, 0.9),
               "max": max(seconds),
               "rate": sum(row["searched"] for row in rows) / max(sum(seconds), 1e-9),
               "winnable": len(winnable), "bots": {}}
    for bot in bots:
        games = [row["bots"][bot] for row in rows]
        won_winnable = sum(row["bots"][bot]["won"] for row in winnable)
        summary["bots"][bot] = {
            "won": sum(game["won"] for game in games), "won_winnable": won_winnable,
            "share": won_winnable / len(winnable) if winnable else None,
            "wilson": wilson(won_winnable, len(winnable)),
            "home": statistics.mean(game["home"] for game in games),
            "cpu": statistics.mean(game["cpu"] for game in games)}
    return summary


def targets(summaries: dict[str, dict]) -> list[tuple[str, str, bool]]:
    """``(target, measured, met)`` of every target the summaries can say something of."""
    found = []
    for variant_id, s in summaries.items():
        if variant_id in TARGETS:
            goal = TARGETS[variant_id]
            found.append((f"{variant_id}: solver settles ≥ {goal:.0%} of the deals",
                          f"{s['settled']:.1%}", s["settled"] >= goal))
        bots = s["bots"]
        if variant_id in WIN_TARGETS and "hint" in bots:
            goal, share = WIN_TARGETS[variant_id], bots["hint"]["share"]
            found.append((f"{variant_id}: hint bot wins ≥ {goal:.0%} of the winnable deals",
                          "–" if share is None else f"{share:.1%}",
                          share is not None and share >= goal))
        if variant_id in CARDS_TARGETS and {"hint", "random"} <= bots.keys():
            goal = CARDS_TARGETS[variant_id]
            ratio = bots["hint"]["home"] / max(bots["random"]["home"], 1e-9)
            found.append((f"{variant_id}: hint bot's mean cards home ≥ {goal:g} × the "
                          "random bot's", f"{ratio:.2f} ×", ratio >= goal))
    return found


def provenance(args) -> list[str]:
    """Where the records come from, part by part, when they are not all of this
    checkout's engine."""
    here = source_commit()
    lines = []
    for variant_id, rows in args.covered.items():
        parts = {"solver verdicts": Counter((row["engine"], row["commit"]) for row in rows)}
        for bot in args.bots:
            parts[f"{bot} bot's games"] = Counter(
                (row["bots"][bot]["engine"], row["bots"][bot]["commit"]) for row in rows)
        if all(set(made) == {(args.digests[variant_id], here)} for made in parts.values()):
            continue
        by_source: dict[tuple, list[str]] = {}
        for part, made in parts.items():
            by_source.setdefault(tuple(sorted(made.items())), []).append(part)
        lines.append(f"{variant_id}: " + "; ".join(
            " and ".join(names) + ": " + ", ".join(
                f"{count} deals by engine {digest} at commit {commit}"
                + ("" if digest == args.digests[variant_id] else " (not this checkout's)")
                for (digest, commit), count in made)
            for made, names in by_source.items()) + ".")
    return ["", "Records: " + "  ".join(lines)] if lines else []


def markers(args) -> tuple[str, str]:
    """The markers of the section of ``bench/RESULTS.md`` the table goes to: a table of
    a budget in positions (``--positions``) has one of its own, which keeps the table
    of a budget in seconds."""
    if args.positions is None:
        return BEGIN, END
    name = f"solver table, {budget_text(args)}"
    return f"<!-- {name}: begin -->", f"<!-- {name}: end -->"


def budget_text(args) -> str:
    if args.positions:
        return f"{args.positions:,} positions (no time limit)"
    return f"{args.budget:g} s"


def table(summaries: dict[str, dict], args) -> list[str]:
    """The Markdown lines of the section (without the markers)."""
    seeds = "; ".join(
        f"{variant_id} {args.first}..{args.first + count - 1}" + (
            "" if len(args.covered[variant_id]) == count else
            f" (only {len(args.covered[variant_id])} of these deals recorded: the run was "
            "cut short)") for variant_id, count in args.counts.items())
    lines = [
        "## How often can these games be won",
        "",
        f"Written by `{args.command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        f"({platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores, load average before "
        f"{' '.join(f'{x:.2f}' for x in args.load)}; engine digests "
        f"{', '.join(f'{k} {v}' for k, v in args.digests.items())}).",
        "",
        f"Seeds: {seeds}.  The solver searches each deal with the whole deal known (stock "
        f"order included), at most {budget_text(args)} per deal on one core: **won** (a "
        "winning line exists; the line is replayed through the engine), **proved lost** "
        "(every line searched, up to pruning proved sound), **undecided** (out of budget).  "
        "The winnable share is at least won / deals (95 % Wilson interval given) and at "
        "most (won + undecided) / deals.  Every budget in seconds, the solver's and the "
        "hint's, is read on the worker process's CPU time, so each search gets its "
        "seconds of one core however busy the machine is; the times are CPU seconds.  "
        + ("The deals were played by the runs that recorded them."
           if args.table_only else f"{args.processes} processes shared the deals.  "
           f"{args.worker}  (The budgets being CPU time, another process's work "
           "lengthens a run, not a search.)"),
        *provenance(args),
        "",
        "| variant | deals | won | proved lost | undecided | settled (target) | "
        "winnable: won share, 95 % Wilson | at most | solver s/deal: median | p90 | max | "
        "positions/s |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for variant_id, s in summaries.items():
        goal = TARGETS.get(variant_id)
        verdict = "" if goal is None else \
            f" ({goal:.0%}: {'met' if s['settled'] >= goal else 'not met'})"
        low, high = s["wilson"]
        lines.append(
            f"| {variant_id} | {s['deals']} | {s[Outcome.WON]} | {s[Outcome.LOST]} | "
            f"{s[Outcome.UNDECIDED]} | "
            f"{s['settled']:.1%}{verdict} | {s[Outcome.WON] / s['deals']:.1%} [{low:.1%}, "
            f"{high:.1%}] | {s['upper']:.1%} | {s['median']:.2f} | {s['p90']:.2f} | "
            f"{s['max']:.2f} | {s['rate']:,.0f} |")
    if args.bots:
        lines += [
            "",
            "The bots on the same deals: *random* plays uniformly random legal moves; "
            "*quick hint* follows the rules of thumb (the hint's fallback); *hint* follows "
            "`GET /v1/games/<id>/hint` as the API answers it (the unseen cards sampled, "
            "each sample searched), dealing, drawing or refilling when no card move is "
            "hinted.  *Of the winnable*: the deals the solver won.",
            "",
            "| variant | bot | won | won of the winnable (95 % Wilson) | mean cards home | "
            "CPU s / deal |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for variant_id, s in summaries.items():
            for bot, b in s["bots"].items():
                share = "–" if b["share"] is None else (
                    f"{b['share']:.1%} [{b['wilson'][0]:.0%}, {b['wilson'][1]:.0%}]")
                lines.append(f"| {variant_id} | {bot_label(bot)} | {b['won']} "
                             f"({b['won'] / s['deals']:.1%}) | {b['won_winnable']} of "
                             f"{s['winnable']}: {share} | {b['home']:.1f} | {b['cpu']:.2f} |")
    lines += ["", "| target | measured | met |", "|---|---:|---|",
              *[f"| {name} | {value} | {'yes' if met else 'NO'} |"
                for name, value, met in targets(summaries)]]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench solver", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1000, help="deals per variant")
    parser.add_argument("--seeds-for", action="append", default=[], metavar="ID=N",
                        help="deals of one variant, instead of --seeds (repeatable)")
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per deal")
    parser.add_argument("--positions", type=int,
                        help="instead of --budget: positions per deal, no time limit (the "
                             "same verdicts on any machine, however fast)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--variant", action="append", help="only this variant (repeatable)")
    parser.add_argument("--bots", choices=BOT_SETS, default="all",
                        help="the bots that play each deal too (default all)")
    parser.add_argument("--hint-budget", metavar="SxP",
                        help="also play the hint bot with S samples of P positions each "
                             "(no time limit), as bot hint@SxP")
    parser.add_argument("--no-solver", action="store_true",
                        help="play the bots only; the table takes the solver's verdicts "
                             "recorded already")
    parser.add_argument("--records", type=Path, default=RECORDS,
                        help="the JSON-lines file of each deal's figures (default "
                             "var/bench/winrates.jsonl)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--table-only", action="store_true",
                        help="play nothing: the table of the deals of the range recorded "
                             "already (a run cut short says how many it covers)")
    parser.add_argument("--any-engine", action="store_true",
                        help="with --table-only: use the records of any engine, each part "
                             "from the latest line that holds it, the table naming the "
                             "engines and commits that made them")
    args = parser.parse_args(argv)
    if args.positions is not None and args.positions < 1:
        parser.error("--positions must be positive")
    args.command = shlex.join(["python", "-m", "bench", "solver", *argv])
    args.load = os.getloadavg()
    args.bots = BOT_SETS[args.bots]
    if args.hint_budget:
        try:
            args.bots += (wide_bot(args.hint_budget),)
        except ValueError:
            parser.error(f"--hint-budget {args.hint_budget!r}: SAMPLESxPOSITIONS, "
                         "say 8x4000")
    chosen = [v.id for v in variants() if not args.variant or v.id in args.variant]
    args.digests = {variant_id: engine_digest(variant_id) for variant_id in chosen}
    args.counts = dict.fromkeys(chosen, args.seeds)
    for option in args.seeds_for:
        variant_id, _, count = option.partition("=")
        if variant_id not in args.counts or not count.isdigit():
            parser.error(f"--seeds-for {option!r}: ID=N with one of {', '.join(chosen)}")
        args.counts[variant_id] = int(count)
    wanted = [(variant_id, seed) for variant_id in chosen
              for seed in range(args.first, args.first + args.counts[variant_id])]
    if args.any_engine and not args.table_only:
        parser.error("--any-engine goes with --table-only")
    args.limits = budget_of(None if args.positions else args.budget, args.positions)
    records = load_records(args.records, None if args.any_engine else args.digests,
                           args.limits)
    commit = source_commit()
    missing = []
    for variant_id, seed in wanted:
        solver, bots = _missing(records.get((variant_id, seed)), not args.no_solver,
                                args.bots)
        if solver or bots:
            missing.append((variant_id, seed, args.limits, solver, bots,
                            args.digests[variant_id], commit))
    tasks = [] if args.table_only else missing
    print(f"{len(wanted) - len(missing)} of {len(wanted)} deals recorded already "
          f"({args.records}); {len(tasks)} to play", file=sys.stderr, flush=True)
    started = time.perf_counter()
    args.records.parent.mkdir(parents=True, exist_ok=True)
    with WorkerWatch() as watch, \
            ProcessPoolExecutor(args.processes) as pool, \
            args.records.open("a") as out:
        for done, record in enumerate(pool.map(play_deal, tasks, chunksize=1), start=1):
            _merge(records, record)
            out.write(json.dumps(record) + "\n")
            out.flush()
            if done % 50 == 0:
                print(f"  {done}/{len(tasks)} deals, {time.perf_counter() - started:.0f} s",
                      file=sys.stderr, flush=True)
    args.worker = watch.summary("this run")
    args.covered = {variant_id: [records[variant_id, seed] for seed in range(
        args.first, args.first + args.counts[variant_id])
        if _recorded(records.get((variant_id, seed)), args.bots)] for variant_id in chosen}
    summaries = {variant_id: summarise(rows, args.bots)
                 for variant_id, rows in args.covered.items() if rows}
    lines = table(summaries, args)
    print("\n".join(lines))
    print(f"\n{len(tasks)} deals played in {time.perf_counter() - started:.0f} s")
    write_section(args.output, *markers(args), "\n".join(lines))
    return 0
