"""The solver: can a deal be won when the whole deal, stock order included, is known?

Pure Python, no I/O.  :func:`solve` searches a deal from its opening position,
:func:`solve_state` from any position; both answer a :class:`Solution`:

* ``won``, with a winning line: the engine :class:`Step` of every move from the position
  searched, replayed through the engine (so the line is legal and ends in a won game);
* ``lost``: every line was searched (up to the pruning each variant proves sound) and
  none wins;
* ``undecided``: the budget of positions or seconds ran out first.

The search itself is a hook of each variant, ``Variant.solver_search``; the base
variant's is :func:`exhaustive_search`, a plain depth-first search over the engine's own
legal moves with a table of the positions already seen.  The variants'
searches are faster and prune more; each pruning rule is argued where it is defined
and checked against :func:`exhaustive_search` by the tests.

The solver sees the stock: its answer for a game in play must never reach the player
before the game is over (the analysis endpoint shows it only then).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from ..base import LOST as _LOST_STATUS
from ..base import PLAYING, RESIGNED, State, Variant, get_variant
from ..base import WON as _WON_STATUS
from ..moves import MOVE, Move, Step

WON, LOST, UNDECIDED = "won", "lost", "undecided"
RESULTS = (WON, LOST, UNDECIDED)

#: The variants' searches recurse once per move of the line they follow: a line this
#: long is cut (the search answers undecided) rather than overflow the interpreter.
MAX_DEPTH = 20_000

#: Default budget of one search: positions expanded and seconds (wall clock).
DEFAULT_POSITIONS = 2_000_000
DEFAULT_SECONDS = 10.0

#: The clock every budget in seconds is read on (the searches' and the hints'): the wall
#: clock.  The benchmark switches its worker processes to their CPU time
#: (:func:`count_cpu_time`), so that a search gets its seconds of one core however busy
#: the machine is.
_clock = time.perf_counter


def now() -> float:
    """The budgets' clock, in seconds."""
    return _clock()


def count_cpu_time() -> None:
    """Read every budget of this process on its CPU time instead of the wall clock."""
    global _clock
    _clock = time.process_time


@dataclass(frozen=True, slots=True)
class Solution:
    """The answer of a search: ``result`` is :data:`WON`, :data:`LOST` or
    :data:`UNDECIDED`; ``line`` the winning line (engine steps from the position
    searched) when won, else None; ``searched`` how many positions were expanded;
    ``seconds`` the time the search took."""

    result: str
    line: tuple[Step, ...] | None
    searched: int
    seconds: float


class Budget:
    """The positions and the time one search may still use.

    A search calls :meth:`spend` once per position it expands; it answers False once
    the budget is exhausted (the clock is read every 256 positions only).
    """

    __slots__ = ("max_positions", "deadline", "searched", "out")

    def __init__(self, max_positions: int, max_seconds: float):
        self.max_positions = max_positions
        self.deadline = now() + max_seconds
        self.searched = 0
        self.out = False

    def spend(self) -> bool:
        self.searched += 1
        if self.searched >= self.max_positions or (
                not self.searched & 255 and now() >= self.deadline):
            self.out = True
        return not self.out


def solve(variant: Variant | str, seed: int, *, max_positions: int = DEFAULT_POSITIONS,
          max_seconds: float = DEFAULT_SECONDS) -> Solution:
    """Search deal ``seed`` of ``variant`` (a :class:`Variant` or its id) from its
    opening position."""
    if isinstance(variant, str):
        variant = get_variant(variant)
    return solve_state(variant.deal(seed), max_positions=max_positions,
                       max_seconds=max_seconds)


def solve_state(state: State, *, max_positions: int = DEFAULT_POSITIONS,
                max_seconds: float = DEFAULT_SECONDS) -> Solution:
    """Search from ``state`` (the whole deal is known: its stock is read).

    A resigned game is searched from the position where it was given up.  A won game
    answers won with an empty line, a lost one lost.
    """
    started = now()
    variant = state.variant
    if state.status == RESIGNED:
        state = State(variant, state.piles, PLAYING, state.turn)
    if state.status == _WON_STATUS:
        return Solution(WON, (), 0, now() - started)
    if state.status == _LOST_STATUS:
        return Solution(LOST, None, 0, now() - started)
    budget = Budget(max_positions, max_seconds)
    if sys.getrecursionlimit() < MAX_DEPTH + 1000:
        # Plain Python calls do not grow the C stack (CPython 3.11 and later).
        sys.setrecursionlimit(MAX_DEPTH + 1000)
    try:
        result, moves = variant.solver_search(state, budget)
    except RecursionError:
        result, moves = UNDECIDED, None
    line = None
    if result == WON:
        line = replay(state, moves)
    return Solution(result, line, budget.searched, now() - started)


def replay(state: State, moves) -> tuple[Step, ...]:
    """The engine steps of ``moves`` played from ``state``; each move is checked by the
    engine, and the last must win the game (else ``RuntimeError``: a solver bug)."""
    steps = []
    for move in moves:
        state, step = state.apply(move)
        steps.append(step)
    if state.status != _WON_STATUS:
        raise RuntimeError(f"the solver's line ends {state.status}, not won")
    return tuple(steps)


def move_table(variant: type[Variant] | Variant) -> tuple[tuple[Move | None, ...], ...]:
    """Every card move of a variant's table by pile indexes, ``table[source][target]``
    (None on the diagonal): the searches record their lines with these, built once."""
    ids = [spec.id for spec in variant.layout]
    return tuple(tuple(Move(MOVE, source, target) if source != target else None
                       for target in ids) for source in ids)


def exhaustive_search(state: State, budget: Budget) -> tuple[str, list[Move] | None]:
    """The plain search: depth first over the engine's legal moves, no move forced, no
    pruning but a table of the positions already expanded (a position seen before
    leads nowhere new: its piles and turn counter decide everything that follows).

    It is the reference the variants' own searches are tested against.
    """
    variant = state.variant
    seen = {(state.piles, state.turn)}
    # Each frame: the state and the moves of it still to try; ``line`` the moves taken.
    stack = [(state, iter(variant.legal_moves(state)))]
    line: list[Move] = []
    if not budget.spend():
        return UNDECIDED, None
    while stack:
        node, moves = stack[-1]
        move = next(moves, None)
        if move is None:
            stack.pop()
            if line:
                line.pop()
            continue
        after, _step = variant.apply(node, move)
        if after.status == _WON_STATUS:
            line.append(move)
            return WON, line
        key = (after.piles, after.turn)
        if key in seen:
            continue
        seen.add(key)
        if not budget.spend():
            return UNDECIDED, None
        line.append(move)
        stack.append((after, iter(variant.legal_moves(after))))
    return LOST, None
