"""The solver: can a deal be won when the whole deal, stock order included, is known?

Pure Python, no I/O.  :func:`solve` searches a deal from its opening position,
:func:`solve_state` from any position; both answer a :class:`.results.Solution` whose
``result`` is an :class:`.results.Outcome`:

* ``Outcome.WON``, with a winning line: the engine :class:`Step` of every move from the
  position searched, replayed through the engine (so the line is legal and ends in a
  won game);
* ``Outcome.LOST``: every line was searched (up to the pruning each variant proves
  sound) and none wins;
* ``Outcome.UNDECIDED``: the budget of positions or seconds ran out first.

The search itself is the one each game registers (:mod:`.registry`: its ``solver``);
a variant that registers none is searched by :func:`.exhaustive.exhaustive_search`, a
plain depth-first search over the engine's own legal moves with a table of the
positions already seen.  The games' searches are faster and prune more; why each
pruning rule is sound is argued in docs/solver.md, and the tests check each search
against the exhaustive one.

The solver sees the stock: its answer for a game in play must never reach the player
before the game is over (the analysis endpoint shows it only then).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..base import LOST, PLAYING, RESIGNED, WON, State, Variant
from ..moves import Step
from ..registry import get_variant
from .budget import WALL_CLOCK, Budget
from .exhaustive import exhaustive_search
from .registry import searches_of
from .results import Outcome, Solution

#: The variants' searches recurse once per move of the line they follow: a line this
#: long is cut (the search answers undecided) rather than overflow the interpreter.
MAX_DEPTH = 20_000

#: Default budget of one search: positions expanded and seconds (wall clock).
DEFAULT_POSITIONS = 2_000_000
DEFAULT_SECONDS = 10.0


def solve(variant: Variant | str, seed: int, *, max_positions: int = DEFAULT_POSITIONS,
          max_seconds: float = DEFAULT_SECONDS,
          clock: Callable[[], float] = WALL_CLOCK) -> Solution:
    """Search deal ``seed`` of ``variant`` (a :class:`Variant` or its id) from its
    opening position."""
    if isinstance(variant, str):
        variant = get_variant(variant)
    return solve_state(variant.deal(seed), max_positions=max_positions,
                       max_seconds=max_seconds, clock=clock)


def solve_state(state: State, *, max_positions: int = DEFAULT_POSITIONS,
                max_seconds: float = DEFAULT_SECONDS,
                clock: Callable[[], float] = WALL_CLOCK) -> Solution:
    """Search from ``state`` (the whole deal is known: its stock is read).

    A resigned game is searched from the position where it was given up.  A won game
    answers won with an empty line, a lost one lost.
    """
    started = clock()
    variant = state.variant
    if state.status == RESIGNED:
        state = State(variant, state.piles, PLAYING, state.turn)
    if state.status == WON:
        return Solution(Outcome.WON, (), 0, clock() - started)
    if state.status == LOST:
        return Solution(Outcome.LOST, None, 0, clock() - started)
    budget = Budget(max_positions, max_seconds, clock)
    if sys.getrecursionlimit() < MAX_DEPTH + 1000:
        # Plain Python calls do not grow the C stack (CPython 3.11 and later).
        sys.setrecursionlimit(MAX_DEPTH + 1000)
    try:
        result, moves = (searches_of(variant).solver or exhaustive_search)(state, budget)
    except RecursionError:
        result, moves = Outcome.UNDECIDED, None
    line = None
    if result == Outcome.WON:
        line = winning_steps(state, moves)
    return Solution(result, line, budget.searched, clock() - started)


def winning_steps(state: State, moves) -> tuple[Step, ...]:
    """The engine steps of ``moves`` played from ``state``; each move is checked by the
    engine, and the last must win the game (else ``RuntimeError``: a solver bug)."""
    steps = []
    for move in moves:
        state, step = state.apply(move)
        steps.append(step)
    if state.status != WON:
        raise RuntimeError(f"the solver's line ends {state.status}, not won")
    return tuple(steps)
