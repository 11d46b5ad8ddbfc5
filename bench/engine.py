"""The rules engine benchmark: whole random play-outs of every variant.

One *step* is what a server does for one move: list the legal moves and apply one of
them (here a uniformly random one).  Every step of every play-out is timed with
``time.perf_counter_ns``; the table shows the median and 90th percentile in
microseconds, whole play-outs per second (timed separately, without the per-step
clock), and the size of the stored snapshot (compact JSON of ``State.to_dict()``) at the
opening and at its largest during a play-out.  The target is a median step under 50 µs;
the benchmark reports, it never fails on a time.

    python -m bench engine [--playouts N] [--variant ID ...] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

from service.engine import RESIGN, Move, new_game, variants
from service.engine.playout import DEFAULT_MAX_IDLE, makes_progress, random_playout

TARGET_MEDIAN_US = 50.0
_RESIGN = Move(RESIGN)


@dataclass
class Result:
    variant: str
    playouts: int
    step_ns: list[int] = field(default_factory=list)
    outcomes: Counter = field(default_factory=Counter)
    opening_bytes: int = 0
    max_bytes: int = 0
    playouts_per_s: float = 0.0

    @property
    def median_us(self) -> float:
        return statistics.median(self.step_ns) / 1000

    @property
    def p90_us(self) -> float:
        return statistics.quantiles(self.step_ns, n=10)[-1] / 1000


def snapshot_bytes(state) -> int:
    return len(json.dumps(state.to_dict(), separators=(",", ":")).encode())


def timed_playout(result: Result, variant_id: str, seed: int, max_idle: int) -> None:
    """``random_playout`` written out with a clock round every step."""
    clock = time.perf_counter_ns
    rng = random.Random(seed)
    state = new_game(variant_id, seed)
    variant = state.variant
    result.opening_bytes = max(result.opening_bytes, snapshot_bytes(state))
    largest = 0
    times = result.step_ns
    idle = 0
    while not state.is_over:
        start = clock()
        moves = state.legal_moves()
        state, step = state.apply(moves[int(rng.random() * len(moves))])
        times.append(clock() - start)
        largest = max(largest, snapshot_bytes(state))
        idle = 0 if makes_progress(variant, step) else idle + 1
        if idle >= max_idle and not state.is_over:
            state, _ = state.apply(_RESIGN)
    result.max_bytes = max(result.max_bytes, largest)
    result.outcomes[state.status] += 1


def measure(variant_id: str, playouts: int, max_idle: int) -> Result:
    result = Result(variant_id, playouts)
    for seed in range(playouts):
        timed_playout(result, variant_id, seed, max_idle)
    start = time.perf_counter()
    for seed in range(playouts):
        random_playout(variant_id, seed, random.Random(seed), max_idle)
    result.playouts_per_s = playouts / (time.perf_counter() - start)
    return result


def table(results: list[Result]) -> str:
    header = ("variant", "steps", "steps/game", "median µs", "p90 µs", "playouts/s",
              "snapshot B open", "snapshot B max", "won/lost/resigned", "target")
    rows = [header]
    for r in results:
        rows.append((
            r.variant, str(len(r.step_ns)), f"{len(r.step_ns) / r.playouts:.0f}",
            f"{r.median_us:.1f}", f"{r.p90_us:.1f}", f"{r.playouts_per_s:.0f}",
            str(r.opening_bytes), str(r.max_bytes),
            "/".join(str(r.outcomes[s]) for s in ("won", "lost", "resigned")),
            "ok" if r.median_us < TARGET_MEDIAN_US else "OVER"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def profile(variant_id: str, playouts: int, max_idle: int, top: int = 18) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for seed in range(playouts):
        random_playout(variant_id, seed, random.Random(seed), max_idle)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    known = [v.id for v in variants()]
    parser = argparse.ArgumentParser(prog="python -m bench engine",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--playouts", type=int, default=300,
                        help="play-outs per variant (default 300, seeds 0..N-1)")
    parser.add_argument("--variant", action="append", choices=known,
                        help="only this variant (repeatable; default all)")
    parser.add_argument("--max-idle", type=int, default=DEFAULT_MAX_IDLE,
                        help=f"resign after this many idle moves (default {DEFAULT_MAX_IDLE})")
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile the play-outs of the slowest variant")
    args = parser.parse_args(argv)
    if args.playouts < 1:
        parser.error("--playouts must be at least 1")

    print(f"Engine benchmark: {args.playouts} random play-outs per variant; "
          f"{platform.python_implementation()} {platform.python_version()} on "
          f"{platform.machine()}")
    print("step = legal_moves() + apply() of one random legal move; "
          "snapshot = compact JSON of State.to_dict()\n")
    results = [measure(v, args.playouts, args.max_idle) for v in (args.variant or known)]
    print(table(results))
    slowest = max(results, key=lambda r: r.median_us)
    print(f"\ntarget: median step < {TARGET_MEDIAN_US:.0f} µs for every variant; slowest is "
          f"{slowest.variant} at {slowest.median_us:.1f} µs")
    if args.profile:
        print(f"\ncProfile of {args.playouts} play-outs of {slowest.variant} "
              f"(by own time):")
        print(profile(slowest.variant, args.playouts, args.max_idle))
    return 0
