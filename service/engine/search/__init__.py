"""The searches: the solver and the hints' searched lines, built on the rules (which
never depend on them).

* :mod:`.results`: what a search answers (:class:`Outcome`, :class:`Solution`, a hint's
  :class:`Line`); :mod:`.budget`: what it may spend; :mod:`.solver`: :func:`solve` and
  :func:`solve_state`, each variant searched by what it registered in :mod:`.registry`,
  or by the plain :func:`exhaustive_search` (:mod:`.exhaustive`);
* each game's own searches, registered when this package is imported: :mod:`.clock`,
  :mod:`.salic_law`, :mod:`.four_corners` (with :mod:`.endgame`, the search of a Four
  Corners position once the stock is out, which the quick hint follows).

Why each search's pruning rules are sound: docs/solver.md.
"""

from . import clock, four_corners, salic_law  # noqa: F401  (register the games' searches)
from .budget import CPU_CLOCK, WALL_CLOCK, Budget
from .exhaustive import exhaustive_search
from .registry import Searches, hint_line, searches_of
from .results import Line, Outcome, Solution, move_table
from .solver import DEFAULT_POSITIONS, DEFAULT_SECONDS, MAX_DEPTH, solve, solve_state, winning_steps

__all__ = [
    "CPU_CLOCK", "DEFAULT_POSITIONS", "DEFAULT_SECONDS", "MAX_DEPTH", "WALL_CLOCK", "Budget",
    "Line", "Outcome", "Searches", "Solution", "exhaustive_search", "hint_line",
    "move_table", "searches_of", "solve", "solve_state", "winning_steps",
]
