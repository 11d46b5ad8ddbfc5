"""Hint bot against random bot: win rates over the same deals of every variant.

The random bot plays uniformly random legal moves (resigning after a long run without
progress, see ``random_playout``); the hint bot follows the quick heuristic hint (the
fallback of ``GET .../hint``) and deals, draws or refills only when no hint is left.
Both play the same seeds.  The hint the API gives, by sampled deals, is measured by
``python -m bench hints``.
Most of the time goes to the hint bots of Salic Law (its search home) and Four Corners
(the endgame solver runs on every move once the stock is out): about three minutes for
the default 200 seeds on two cores.

    python -m bench bots [--seeds N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from service.engine import WON, variants
from service.engine.help import heuristic_hint
from service.engine.playout import cards_home, hint_playout, random_playout


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench bots", description=__doc__)
    parser.add_argument("--seeds", type=int, default=200, help="deals per variant")
    args = parser.parse_args(argv)
    print(f"{'variant':<14}{'bot':<8}{'won':>6}{'win rate':>10}{'cards home':>12}"
          f"{'seconds':>9}")
    for variant in variants():
        for bot in ("random", "hint"):
            started = time.perf_counter()
            wins, home = 0, []
            for seed in range(args.seeds):
                if bot == "random":
                    state, _ = random_playout(variant.id, seed, random.Random(seed))
                else:
                    state, _ = hint_playout(variant.id, seed, advise=heuristic_hint)
                wins += state.status == WON
                home.append(cards_home(state))
            print(f"{variant.id:<14}{bot:<8}{wins:>6}{wins / args.seeds:>10.1%}"
                  f"{statistics.mean(home):>12.1f}{time.perf_counter() - started:>9.1f}")
    return 0
