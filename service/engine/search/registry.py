"""Which searches each variant plays by: each game's search module registers its own
here, keyed by the variant, and the solver and the hints look them up.

The rules (:mod:`service.engine.rules`) know nothing of the searches: a search reads the
rules, never the other way round, and a variant with nothing registered is searched by
the plain :func:`.exhaustive.exhaustive_search` and has no hint line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..base import State, Variant
from .budget import Budget
from .results import Answer, Line


@dataclass(frozen=True, slots=True)
class Searches:
    """The searches of one variant.

    ``solver``: the solver's search, ``(state, budget) -> (outcome, moves)`` (see
    :func:`.solver.solve_state`); None for the plain exhaustive search.

    ``hint_line``: a searched line of play from a position, when the variant can search
    it without looking at a hidden card (the quick hint then follows it, see
    :func:`service.engine.hints.heuristic_hint`), else None; the function itself is
    None when the variant has no such search.

    ``hint_positions_scale``: how many times the hint budget's positions
    (``HintBudget`` in :mod:`service.engine.hints`) the sampled hint may search in each
    sampled deal: a search that expands positions quickly affords more within the same
    time.
    """

    solver: Callable[[State, Budget], Answer] | None = None
    hint_line: Callable[[State], Line | None] | None = None
    hint_positions_scale: int = 1


#: What a variant that registered nothing plays by.
PLAIN = Searches()

_SEARCHES: dict[str, Searches] = {}


def register(variant: type[Variant], searches: Searches) -> None:
    """Make ``searches`` those of ``variant`` (a registered variant class)."""
    if variant.id in _SEARCHES:
        raise ValueError(f"the searches of {variant.id!r} are registered already")
    _SEARCHES[variant.id] = searches


def searches_of(variant: Variant) -> Searches:
    """The searches ``variant`` plays by (:data:`PLAIN` when it registered none)."""
    return _SEARCHES.get(variant.id, PLAIN)


def hint_line(state: State) -> Line | None:
    """The searched line of play from ``state`` that the quick hint follows, or None
    (see :attr:`Searches.hint_line`)."""
    search = searches_of(state.variant).hint_line
    return None if search is None else search(state)
