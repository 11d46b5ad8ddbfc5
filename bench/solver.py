"""How often can these games be won?  The solver against the bots, deal by deal.

For every variant and every seed of the range, the solver (``service.engine.solver``)
searches the deal with the whole deal known, within a budget of seconds: won (a winning
line exists), proved lost (every line searched) or undecided.  The hint-following bot
and the random bot (as ``python -m bench bots`` plays them) play the same seeds.  The
table goes to ``bench/RESULTS.md`` (between its solver markers, the rest of the file
untouched) and to standard output.

    python -m bench solver [--seeds N] [--seeds-for ID=N] [--first SEED]
                           [--budget SECONDS] [--processes N] [--variant ID]
                           [--no-bots] [--output PATH]

The default is the full table: seeds 0..999 of each variant, 10 s per deal, two
processes (one per core of the machine it was written for).  A deal is searched by one
process at a time, so the per-deal budget is one core's.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from bench.sections import write_section
from service.engine import WON as WON_STATUS
from service.engine import variants
from service.engine.help import heuristic_hint
from service.engine.playout import hint_playout, random_playout
from service.engine.solver import LOST, UNDECIDED, WON, solve

RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- solver table: begin -->", "<!-- solver table: end -->"

#: The share of deals the solver must settle (won or proved lost) within 10 s each.
TARGETS = {"salic-law": 0.99, "clock": 0.95, "four-corners": 0.90}


def _one(task: tuple[str, int, float, bool]) -> dict:
    variant_id, seed, budget, bots = task
    solution = solve(variant_id, seed, max_seconds=budget)
    row = {"variant": variant_id, "seed": seed, "result": solution.result,
           "searched": solution.searched, "seconds": solution.seconds,
           "line": len(solution.line) if solution.line is not None else None}
    if bots:
        row["hint"] = hint_playout(variant_id, seed, advise=heuristic_hint)[0].status \
            == WON_STATUS
        row["random"] = random_playout(variant_id, seed, random.Random(seed))[0].status \
            == WON_STATUS
    return row


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


def summarise(rows: list[dict]) -> dict:
    """The figures of one variant's rows."""
    n = len(rows)
    counts = {result: sum(row["result"] == result for row in rows)
              for result in (WON, LOST, UNDECIDED)}
    seconds = [row["seconds"] for row in rows]
    searched = sum(row["searched"] for row in rows)
    low, high = wilson(counts[WON], n)
    summary = {"deals": n, **counts, "settled": (counts[WON] + counts[LOST]) / n,
               "wilson": (low, high), "upper": (counts[WON] + counts[UNDECIDED]) / n,
               "median": statistics.median(seconds), "p90": _quantile(seconds, 0.9),
               "max": max(seconds), "rate": searched / max(sum(seconds), 1e-9)}
    if "hint" in rows[0]:
        summary["hint"] = sum(row["hint"] for row in rows)
        summary["random"] = sum(row["random"] for row in rows)
    return summary


def table(summaries: dict[str, dict], args) -> list[str]:
    """The Markdown lines of the table (without the markers)."""
    seeds = "; ".join(f"{variant_id} {args.first}..{args.first + count - 1}"
                      for variant_id, count in args.counts.items())
    extra = "".join(f" --seeds-for {option}" for option in args.seeds_for)
    lines = [
        "## How often can these games be won",
        "",
        f"Written by `python -m bench solver --seeds {args.seeds}{extra} --first {args.first} "
        f"--budget {args.budget:g} --processes {args.processes}` on "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC ({platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} cores, load average before "
        f"{' '.join(f'{x:.2f}' for x in args.load)}).",
        "",
        f"Seeds: {seeds}.  The solver searches each deal with the "
        f"whole deal known (stock order included), at most {args.budget:g} s per deal on one "
        "core: **won** (a winning line exists; the line is replayed through the engine), "
        "**proved lost** (every line searched, up to pruning proved sound), **undecided** "
        "(out of time).  The winnable share is at least won / deals (95 % Wilson interval "
        "given) and at most (won + undecided) / deals.  The bots play the same seeds: "
        "the hint bot follows the quick heuristic hints (the hint by sampled deals is "
        "measured by `python -m bench hints`, in its own section), the random bot plays "
        "uniformly random legal moves.",
        "",
        "| variant | deals | won | proved lost | undecided | settled (target) | "
        "winnable: won share, 95 % Wilson | at most | hint bot won | random bot won | "
        "solver s/deal: median | p90 | max | positions/s |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for variant_id, s in summaries.items():
        target = TARGETS.get(variant_id)
        verdict = ""
        if target is not None:
            verdict = f" ({target:.0%}: {'met' if s['settled'] >= target else 'not met'})"
        bots = (f"{s['hint']} ({s['hint'] / s['deals']:.1%}) | "
                f"{s['random']} ({s['random'] / s['deals']:.1%})") if "hint" in s else "– | –"
        lines.append(
            f"| {variant_id} | {s['deals']} | {s[WON]} | {s[LOST]} | {s[UNDECIDED]} | "
            f"{s['settled']:.1%}{verdict} | {s[WON] / s['deals']:.1%} "
            f"[{s['wilson'][0]:.1%}, {s['wilson'][1]:.1%}] | {s['upper']:.1%} | {bots} | "
            f"{s['median']:.2f} | {s['p90']:.2f} | {s['max']:.2f} | {s['rate']:,.0f} |")
    lines += ["", "Targets (settled within 10 s per deal on one core): Salic Law 99 %, "
              "The Clock 95 %, Four Corners 90 %.  Times are wall-clock seconds of one "
              "search while the other process searched too."]
    return lines



def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench solver", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=1000, help="deals per variant")
    parser.add_argument("--seeds-for", action="append", default=[], metavar="ID=N",
                        help="deals of one variant, instead of --seeds (repeatable)")
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per deal")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--variant", action="append", help="only this variant (repeatable)")
    parser.add_argument("--no-bots", dest="bots", action="store_false",
                        help="leave out the hint and random bots")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.load = os.getloadavg()
    chosen = [v.id for v in variants() if not args.variant or v.id in args.variant]
    args.counts = dict.fromkeys(chosen, args.seeds)
    for option in args.seeds_for:
        variant_id, _, count = option.partition("=")
        if variant_id not in args.counts or not count.isdigit():
            parser.error(f"--seeds-for {option!r}: ID=N with one of {', '.join(chosen)}")
        args.counts[variant_id] = int(count)
    tasks = [(variant_id, seed, args.budget, args.bots) for variant_id in chosen
             for seed in range(args.first, args.first + args.counts[variant_id])]
    started = time.perf_counter()
    rows: list[dict] = []
    with ProcessPoolExecutor(max_workers=args.processes) as pool:
        for row in pool.map(_one, tasks, chunksize=1):
            rows.append(row)
            if len(rows) % 100 == 0:
                print(f"  {len(rows)}/{len(tasks)} deals, {time.perf_counter() - started:.0f} s",
                      file=sys.stderr, flush=True)
    summaries = {variant_id: summarise([row for row in rows if row["variant"] == variant_id])
                 for variant_id in chosen}
    lines = table(summaries, args)
    print("\n".join(lines))
    print(f"\n{len(tasks)} deals in {time.perf_counter() - started:.0f} s")
    write_section(args.output, BEGIN, END, "\n".join(lines))
    return 0
